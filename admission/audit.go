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
	// UID is the AdmissionReview request UID ("" for a request that could
	// not be decoded).
	UID string
	// Operation is CREATE, UPDATE, ...
	Operation string
	// Kind is the object's kind (request.kind.kind).
	Kind string
	// Namespace and Name locate the object. An object created with
	// generateName has no name at admission time (the API server picks it
	// afterwards): Name is then generateName followed by "*".
	Namespace, Name string
	// User and Groups are the submitter as the API server authenticated it.
	User   string
	Groups []string
	// Identity is the user named by the object's effective user.info: the
	// stamped submitter, or the user of an accepted annotation. Empty when
	// the object was not examined.
	Identity string
	// Queue is the first queue checked when enforceQueueACLs is on, or on
	// a DELETE the queue whose check decided ("(default)" for the
	// partition's default queue); empty otherwise.
	Queue string
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
}

// AppendAttrs appends the record's attributes to dst, in a fixed order and
// with fixed keys: webhook, uid, operation, object (the object's kind),
// namespace, name, user, groups, identity, queue, allowed, patched, code,
// reason, rule, dryRun, warned, lookup. Every string the requester chose is cut to a
// bounded length (reason texts longer than names) and the groups to a
// bounded count, with a visible mark ("…[cut N bytes]", "…[cut N more]"),
// so a request cannot make a record arbitrarily large. This is the one
// rendering of an admission audit record: SlogAudit and the server's
// audit log use it.
func (r *Record) AppendAttrs(dst []slog.Attr) []slog.Attr {
	return append(dst,
		slog.String("webhook", r.Webhook),
		slog.String("uid", clip.String(r.UID, clip.Name)),
		slog.String("operation", clip.String(r.Operation, clip.Name)),
		slog.String("object", clip.String(r.Kind, clip.Name)),
		slog.String("namespace", clip.String(r.Namespace, clip.Name)),
		slog.String("name", clip.String(r.Name, clip.Name)),
		slog.String("user", clip.String(r.User, clip.Name)),
		slog.Any("groups", clip.Strings(r.Groups, clip.Name, clip.Count)),
		slog.String("identity", clip.String(r.Identity, clip.Name)),
		slog.String("queue", clip.String(r.Queue, clip.Name)),
		slog.Bool("allowed", r.Allowed),
		slog.Bool("patched", r.Patched),
		slog.Int("code", int(r.Code)),
		slog.String("reason", clip.String(r.Reason, clip.Text)),
		slog.String("rule", r.Rule.String()),
		slog.Bool("dryRun", r.DryRun),
		slog.Bool("warned", r.Warned),
		slog.String("lookup", clip.String(r.Lookup, clip.Text)),
	)
}

// numAuditAttrs is the number of attributes AppendAttrs appends.
const numAuditAttrs = 18

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
		var buf [numAuditAttrs]slog.Attr
		l.LogAttrs(ctx, level, "admission review", r.AppendAttrs(buf[:0])...)
	}
}

func (h *Handler) record(hook hookKind, req *admissionv1.AdmissionRequest, dc *decision) {
	if h.audit == nil {
		return
	}
	r := Record{
		Webhook:  hook.String(),
		Identity: dc.identity,
		Queue:    dc.queue,
		Allowed:  dc.allowed,
		Patched:  len(dc.patch) > 0,
		Code:     dc.code,
		Reason:   dc.reason(),
		Rule:     dc.rule,
		Trust:    dc.trust,
		Warned:   dc.warned,
		Lookup:   dc.lookup,
	}
	if dc.warned {
		r.Reason = "warned: " + dc.warning
	}
	if req != nil {
		r.UID = string(req.UID)
		r.Operation = string(req.Operation)
		r.Kind = req.Kind.Kind
		r.Namespace = req.Namespace
		r.Name = req.Name
		if r.Name == "" {
			r.Name = dc.name
		}
		r.User = req.UserInfo.Username
		r.Groups = req.UserInfo.Groups
		r.DryRun = req.DryRun != nil && *req.DryRun
	}
	h.audit(r)
}
