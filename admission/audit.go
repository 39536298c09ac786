package admission

import (
	"context"
	"log/slog"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/internal/clip"
)

// Record is what the handler reports to the audit hook for every review:
// who asked for what, and whether and why it was allowed (docs/audit.md
// describes each field). Its strings may share memory with the request
// and are safe to keep; Groups must not be modified.
type Record struct {
	Webhook string // "mutate" or "validate"
	// Caller is what the server established of the review's sender
	// (WithCaller); "" when not told.
	Caller string
	UID    string // "" for a body that could not be decoded
	// Operation, Kind, Namespace and Name are the request's; Name is the
	// object's name as nameOf gives it ("" when the object is unknown).
	Operation, Kind, Namespace, Name string
	// User and Groups are the submitter as the API server authenticated it.
	User   string
	Groups []string
	// Identity is the user of the object's effective user.info; empty
	// when the object was not examined.
	Identity string
	// Queue is the queue the decision was about (the first queue checked
	// or refused, the queue whose check decided a DELETE, root for an
	// eviction or Binding the kill rule decides, else the object's first
	// marker's while a queue or delete rule is on; "(default)" is the
	// partition's default queue); for a YuniKorn marker, the queue the
	// placement rules chose, and QueueAsked the one the marker asked for
	// when they chose another.
	Queue, QueueAsked string
	// Allowed is the outcome; Patched says a JSON patch was returned.
	Allowed, Patched bool
	// Code is 200 when allowed, else the status code.
	Code int32
	// Reason says why, in one phrase; a denial's is the message the
	// submitter sees.
	Reason string
	// Rule let the review through (RuleDenied for a denial); Trust, for
	// RuleTrustedDeleter, says who was trusted.
	Rule   Rule
	Trust  Trust
	DryRun bool
	// Warned: warn mode admitted a denial of the queue check or the kill
	// rule; Reason carries its message.
	Warned bool
	// Lookup says how the queue check identified the submitter when that
	// was more than asking the resolver for the user (NoteLookup).
	Lookup string
	// Decided are the groups the review decided with when an
	// IdentityResolver answered, and Sources where each came from
	// ("given", or the resolver: "file", "ldap", "override"); nil
	// otherwise.
	Decided, Sources []string
	// Degraded: the directory did not answer while stamping and the stamp
	// holds the API server's groups only.
	Degraded bool
	// Denial is the denial of a denied or warned review, nil otherwise.
	Denial *Denial
}

// Denial is a denial in its stable shape, for machines: the audit record
// carries it (as "denial"), usher's Event on the object's namespace is
// made from it, and docs/decision.schema.json ($defs/admissionDenial)
// describes its JSON. Fields named as in Record mean the same.
type Denial struct {
	Reason  Cause  `json:"reason"`
	Message string `json:"message"` // for a warned denial, the warning
	Code    int32  `json:"code"`    // 200 for a warned denial, which was admitted
	Warned  bool   `json:"warned,omitempty"`
	// Operation is CREATE, UPDATE, DELETE or CONNECT ("" when unknown).
	Operation string `json:"operation,omitempty"`
	// Group, Kind, Namespace and Name name the object: for an eviction or
	// a Binding, the Pod.
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	User      string `json:"user"`
	Identity  string `json:"identity,omitempty"`
	Queue     string `json:"queue,omitempty"`
	// Check is the rule the ACLs were asked under (CheckSubmit,
	// CheckKill); "" when no ACL decided.
	Check string `json:"check,omitempty"`
	// Field is the object's field that decided, as Kubernetes writes
	// field paths; "" when no single field did.
	Field  string `json:"field,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
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

// AppendAttrs appends the record's attributes to dst, in a fixed order
// with fixed keys (docs/audit.md), empty optional ones left out. Every
// string the requester chose is cut to a bounded length and the groups to
// a bounded count, with a visible mark, so that a request cannot make a
// record arbitrarily large.
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

// NumAuditAttrs is the most attributes AppendAttrs appends.
const NumAuditAttrs = 24

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

// complete fills in what the record, the response's details and the
// Event name about the object, whichever path decided: its name, group
// and kind (the Pod for an eviction or a Binding) and, when usher reads
// queue markers and no check set one, the first queue its markers name.
// It never changes the outcome.
func complete(st *State, req *admissionv1.AdmissionRequest, obj, old string, pre *views, dc *decision) {
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
		dc.name = nameOf(req, ov)
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
