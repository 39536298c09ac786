package admission

import (
	"context"
	"log/slog"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/internal/clip"
)

// This file holds the audit records: the Record every review reports to
// the audit hook, and its one rendering as slog attributes (AppendAttrs),
// which SlogAudit and the server's audit log both use.

// Record is what the handler reports to the audit hook for every review:
// who asked for what, and whether and why it was allowed. Its strings may
// share memory with the request and are safe to keep; Groups must not be
// modified.
type Record struct {
	// Webhook is "mutate" or "validate".
	Webhook string
	// Caller is what the server established of the review's sender
	// (WithCaller): CallerVerified, CallerUnverified or CallerUnchecked;
	// "" when not told.
	Caller string
	// UID is the AdmissionReview request UID ("" for a request that could
	// not be decoded).
	UID string
	// Operation is CREATE, UPDATE, ...
	Operation string
	// Kind is the object's kind (request.kind.kind).
	Kind string
	// Namespace and Name locate the object. An object created with
	// generateName has no name at admission time (the API server picks it
	// afterwards): Name is then generateName followed by "*". A collection
	// delete names no object in the request: Name is then the deleted
	// object's. Name is empty only when the object is unknown (the body
	// could not be decoded).
	Namespace, Name string
	// User and Groups are the submitter as the API server authenticated it.
	User   string
	Groups []string
	// Identity is the user named by the object's effective user.info: the
	// stamped submitter, or the user of an accepted annotation. Empty when
	// the object was not examined.
	Identity string
	// Queue is the queue the decision was about: the first queue checked
	// (or refused) when enforceQueueACLs is on, on a DELETE the queue whose
	// check decided, "root" for evictions and Bindings the kill rule
	// decides; for any other review of a handled kind, while
	// enforceQueueACLs or enforceDeleteACLs is on, the queue the object's
	// markers name (its first). "(default)" stands for the partition's
	// default queue. Empty when usher does not read queue markers (both
	// settings off), when the object could not be read, and when a marker
	// names no valid queue (Denial.Reason UnknownQueue says which). For
	// a YuniKorn marker it is the queue the placement rules chose.
	Queue string
	// QueueAsked is the queue the first marker asked for (read as a path
	// under root) when the placement rules chose another (Queue): the
	// admission response then carries a warning naming both. Empty
	// otherwise.
	QueueAsked string
	// Allowed is the outcome; Patched says a JSON patch was returned.
	Allowed, Patched bool
	// Code is 200 when allowed, else the status code: 400 bad request, 403
	// forbidden, 413 too large, 415 bad content type, 500 internal error.
	Code int32
	// Reason says why, in one phrase; for denials it is the message the
	// submitter sees.
	Reason string
	// Rule is the rule that let the review through (RuleDenied for a
	// denial); Trust, for RuleTrustedDeleter, says who was trusted.
	Rule  Rule
	Trust Trust
	// DryRun is request.dryRun.
	DryRun bool
	// Warned marks a warned denial: the queue check or the kill rule
	// denied the request and warn mode (enforceQueueACLsMode,
	// enforceDeleteACLsMode) admitted it with the denial's message as an
	// admission warning. Reason then carries that message.
	Warned bool
	// Lookup says how the queue check identified the submitter when that
	// was more than asking the resolver for the user: a namemapping
	// rule's directory name, a user skip leaves to its given groups, a
	// static override, or an unknown user decided on its given groups
	// (unknownuser given-groups). Empty in the plain case (NoteLookup).
	Lookup string
	// Decided are the groups the review decided with, in the stamp's
	// order, when an IdentityResolver answered (the partition's groups
	// mode is resolve or merge); nil otherwise. Sources says where each
	// came from: "given" (by the API server, or with a kept stamp), or
	// the resolver ("file", "ldap", "ldap via …", "override"). With
	// stampGroups decided they are the stamp's groups.
	Decided, Sources []string
	// Degraded: the directory did not answer while stamping, and the
	// stamp holds the API server's groups only (stampGroupsOnError
	// given); the response carries a warning.
	Degraded bool
	// Denial is the structured denial of a denied or warned review (nil
	// for one allowed outright): the stable shape the response's status
	// details, the audit annotations and the Event carry too.
	Denial *Denial
}

// Denial is a denial in its stable shape, for machines: the Cause from a
// closed set, the message for people, and what it was about. The audit
// record carries it (as "denial"), usher's Event on the object's
// namespace is made from it, and docs/decision.schema.json
// ($defs/admissionDenial) describes its JSON.
type Denial struct {
	// Reason is why, from the closed set of Causes.
	Reason Cause `json:"reason"`
	// Message is the denial's message, as the requester sees it (for a
	// warned denial, the admission warning).
	Message string `json:"message"`
	// Code is the HTTP status of the denial (400, 403, 500, ...); 200 for
	// a warned denial, which was admitted.
	Code int32 `json:"code"`
	// Warned: warn mode admitted the request with Message as a warning.
	Warned bool `json:"warned,omitempty"`
	// Operation is CREATE, UPDATE, DELETE or CONNECT ("" when unknown).
	Operation string `json:"operation,omitempty"`
	// Group, Kind, Namespace and Name name the object the decision is
	// about: for an eviction or a Binding the Pod. Name is as in Record.
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// User is the requester as the API server authenticated it; Identity
	// the submitter the object's user.info names, when known.
	User     string `json:"user"`
	Identity string `json:"identity,omitempty"`
	// Queue is as in Record.
	Queue string `json:"queue,omitempty"`
	// Check is the rule the ACLs were asked under: CheckSubmit (the
	// queue's and its ancestors' submit and admin ACLs) or CheckKill (the
	// kill rule); "" when no ACL decided (the user.info rules, a bad
	// object).
	Check string `json:"check,omitempty"`
	// Field is the object's field that decided, as Kubernetes writes field
	// paths: the queue marker ("spec.template.metadata.labels[queue]") or
	// the user.info annotation; "" when no single field did.
	Field string `json:"field,omitempty"`
	// DryRun is request.dryRun.
	DryRun bool `json:"dryRun,omitempty"`
}

// What Record.Caller says of a review's sender.
const (
	// CallerVerified: the sender presented a client certificate the
	// server verified as the API server's.
	CallerVerified = "verified"
	// CallerUnverified: it did not, and the server let it through anyway
	// (usher serve --webhook-auth report).
	CallerUnverified = "unverified"
	// CallerUnchecked: the server checks no sender (--webhook-auth none).
	CallerUnchecked = "unchecked"
)

// AppendAttrs appends the record's attributes to dst, in a fixed order and
// with fixed keys: webhook, caller (when set), uid, operation, object (the object's kind),
// namespace, name, user, groups, identity, queue, queueAsked (when set), allowed, patched, code,
// reason, rule, dryRun, warned, lookup, decided and sources (when
// decided), degraded (when true), and for a denied or warned review a group
// denial with the attributes of Denial (reason, message, code, warned,
// operation, group, kind, namespace, name, user, identity, queue, check,
// field, dryRun; empty ones left out). Every string the requester chose is cut to a
// bounded length (reason texts longer than names) and the groups to a
// bounded count, with a visible mark ("…[cut N bytes]", "…[cut N more]"),
// so a request cannot make a record arbitrarily large. This is the one
// rendering of an admission audit record: SlogAudit and the server's
// audit log use it.
func (r *Record) AppendAttrs(dst []slog.Attr) []slog.Attr {
	dst = append(dst, slog.String("webhook", r.Webhook))
	if r.Caller != "" {
		dst = append(dst, slog.String("caller", r.Caller))
	}
	dst = append(dst,
		slog.String("uid", clip.String(r.UID, clip.Name)),
		slog.String("operation", clip.String(r.Operation, clip.Name)),
		slog.String("object", clip.String(r.Kind, clip.Name)),
		slog.String("namespace", clip.String(r.Namespace, clip.Name)),
		slog.String("name", clip.String(r.Name, clip.Name)),
		slog.String("user", clip.String(r.User, clip.Name)),
		slog.Any("groups", clip.Strings(r.Groups, clip.Name, clip.Count)),
		slog.String("identity", clip.String(r.Identity, clip.Name)),
		slog.String("queue", clip.String(r.Queue, clip.Name)))
	if r.QueueAsked != "" {
		dst = append(dst, slog.String("queueAsked", clip.String(r.QueueAsked, clip.Name)))
	}
	dst = append(dst,
		slog.Bool("allowed", r.Allowed),
		slog.Bool("patched", r.Patched),
		slog.Int("code", int(r.Code)),
		slog.String("reason", clip.String(r.Reason, clip.Text)),
		slog.String("rule", r.Rule.String()),
		slog.Bool("dryRun", r.DryRun),
		slog.Bool("warned", r.Warned),
		slog.String("lookup", clip.String(r.Lookup, clip.Text)),
	)
	if r.Decided != nil {
		dst = append(dst, slog.Any("decided", clip.Strings(r.Decided, clip.Name, clip.Count)), slog.Any("sources", clip.Strings(r.Sources, clip.Name, clip.Count)))
	}
	if r.Degraded {
		dst = append(dst, slog.Bool("degraded", true))
	}
	if r.Denial != nil {
		dst = append(dst, r.denialAttr())
	}
	return dst
}

// denialAttr renders r.Denial as the group "denial" of an audit record,
// its strings cut as the record's are.
func (r *Record) denialAttr() slog.Attr {
	d := r.Denial
	as := make([]slog.Attr, 0, 15)
	str := func(k, v string, max int) {
		if v != "" {
			as = append(as, slog.String(k, clip.String(v, max)))
		}
	}
	as = append(as, slog.String("reason", string(d.Reason)))
	str("message", d.Message, clip.Text)
	as = append(as, slog.Int("code", int(d.Code)))
	if d.Warned {
		as = append(as, slog.Bool("warned", true))
	}
	str("operation", d.Operation, clip.Name)
	str("group", d.Group, clip.Name)
	str("kind", d.Kind, clip.Name)
	str("namespace", d.Namespace, clip.Name)
	str("name", d.Name, clip.Name)
	as = append(as, slog.String("user", clip.String(d.User, clip.Name)))
	str("identity", d.Identity, clip.Name)
	str("queue", d.Queue, clip.Name)
	str("check", d.Check, clip.Name)
	str("field", d.Field, clip.Name)
	if d.DryRun {
		as = append(as, slog.Bool("dryRun", true))
	}
	return slog.Attr{Key: "denial", Value: slog.GroupValue(as...)}
}

// NumAuditAttrs is the number of attributes AppendAttrs appends (the
// most: with a denial).
const NumAuditAttrs = 24

// SlogAudit returns an audit hook (for WithAudit) that logs every review
// to l as "admission review" with the attributes of Record.AppendAttrs:
// allowed reviews at Info, denials at Warn.
func SlogAudit(l *slog.Logger) func(Record) {
	return func(r Record) {
		level := slog.LevelInfo
		if !r.Allowed {
			level = slog.LevelWarn
		}
		ctx := context.Background()
		if !l.Enabled(ctx, level) {
			return
		}
		var buf [NumAuditAttrs]slog.Attr
		l.LogAttrs(ctx, level, "admission review", r.AppendAttrs(buf[:0])...)
	}
}

func (h *Handler) record(ctx context.Context, hook hookKind, req *admissionv1.AdmissionRequest, dc *decision) {
	if h.audit == nil {
		return
	}
	r := Record{
		Webhook:    hook.String(),
		Identity:   dc.identity,
		Queue:      dc.queue,
		QueueAsked: dc.queueAsked,
		Name:       dc.name,
		Allowed:    dc.allowed,
		Patched:    len(dc.patch) > 0,
		Code:       dc.code,
		Reason:     dc.reason(),
		Rule:       dc.rule,
		Trust:      dc.trust,
		Warned:     dc.warned,
		Lookup:     dc.lookup,
		Degraded:   dc.degraded,
	}
	if in := dc.decided; in != nil {
		r.Decided, r.Sources = in.Groups, make([]string, len(in.Groups))
		for i := range in.Groups {
			r.Sources[i] = string(in.SourceOf(i))
		}
	}
	if dc.warned {
		r.Reason = "warned: " + dc.warning
	}
	if h.caller != nil {
		r.Caller = h.caller(ctx)
	}
	if req != nil {
		r.UID = string(req.UID)
		r.Operation = string(req.Operation)
		r.Kind = req.Kind.Kind
		r.Namespace = req.Namespace
		r.User = req.UserInfo.Username
		r.Groups = req.UserInfo.Groups
		r.DryRun = req.DryRun != nil && *req.DryRun
	}
	if dc.cause != "" {
		d := &Denial{Reason: dc.cause, Message: dc.message, Code: dc.code, Warned: dc.warned,
			Operation: r.Operation, Group: dc.group, Kind: dc.kind, Namespace: r.Namespace, Name: r.Name,
			User: r.User, Identity: r.Identity, Queue: r.Queue, Check: dc.check, Field: dc.field, DryRun: r.DryRun}
		if dc.warned {
			d.Message = dc.warning
		}
		r.Denial = d
	}
	h.audit(r)
}

// complete fills in what the audit record, the response's details and
// the Event name about the object, whichever path decided: the name (the
// request's; for an object created with generateName, generateName + "*";
// for a collection delete, the object's), the object's group and kind
// (the Pod for an eviction or a Binding), and the queue, when usher reads
// queue markers and no check set one: the first queue the object's markers
// name. obj and old are the request's objects, pre what was parsed of
// them. It never changes the outcome; a failure to read the object leaves
// the fields empty.
func complete(st *handlerState, req *admissionv1.AdmissionRequest, obj, old string, pre *views, dc *decision) {
	defer func() { _ = recover() }() // the decision stands; the record just stays as it is
	dc.group, dc.kind = req.Kind.Group, req.Kind.Kind
	if req.Name != "" {
		dc.name = req.Name
	}
	if isEviction(req) || isBinding(req) {
		dc.group, dc.kind = "", "Pod"
		return
	}
	k := lookupKind(req.Kind.Group, req.Kind.Kind)
	if k == nil {
		return
	}
	c := st.cfg
	needQueue := dc.queue == "" && (c.EnforceQueue || c.EnforceDelete) && c.ProcessNamespace(req.Namespace)
	if dc.name != "" && !needQueue {
		return
	}
	var ov *objectView
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
		if view(c, k, obj, &pre.obj, pre.objDone, "request.object") != nil {
			return
		}
		ov = &pre.obj
	case admissionv1.Delete:
		if view(c, k, old, &pre.old, pre.oldDone, "request.oldObject") != nil {
			return
		}
		ov = &pre.old
	default:
		return
	}
	if dc.name == "" {
		dc.name = ov.top.name
		if dc.name == "" && ov.top.genName != "" {
			dc.name = ov.top.genName + "*"
		}
	}
	if !needQueue {
		return
	}
	var arr [4]target
	placing := req.Operation != admissionv1.Delete
	if ts, err := c.targets(k, req.Namespace, ov, placing, arr[:0]); err == nil && len(ts) > 0 {
		dc.queue = ts[0].record()
	}
}
