package admission

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/internal/clip"
)

// Record is what the audit hook gets of every review (docs/audit.md). Its
// strings may share memory with the request; Groups must not be modified.
type Record struct {
	Webhook                          string // "mutate" or "validate"
	Caller                           string // WithCaller's answer
	UID                              string
	Operation, Kind, Namespace, Name string
	User                             string
	Groups                           []string
	Identity                         string // the user of the object's effective user.info
	Queue, QueueAsked                string
	Allowed, Patched                 bool
	Code                             int32
	Reason                           string // in one phrase; a denial's message
	Rule                             Rule
	Trust                            Trust // for RuleTrustedDeleter
	DryRun                           bool
	Warned                           bool   // warn mode admitted a denial
	Lookup                           string // NoteLookup's notes
	Decided, Sources                 []string
	Degraded                         bool    // the stamp holds the API server's groups only
	Propagation                      string  // "propagated by PROPAGATOR from KIND "NS/NAME"": whose identity a propagator copied
	UnstampedParent                  string  // the parent without user.info whose child got its propagator's identity
	Denial                           *Denial // of a denied or warned review
}

// Denial is a denial in its stable shape, for machines, in the audit record
// and usher's Event (docs/decision.schema.json, $defs/admissionDenial).
type Denial struct {
	Reason    Cause  `json:"reason"`
	Message   string `json:"message"` // for a warned denial, the warning
	Code      int32  `json:"code"`    // 200 for a warned denial
	Warned    bool   `json:"warned,omitempty"`
	Operation string `json:"operation,omitempty"`
	// Group, Kind, Namespace and Name: for an eviction or Binding, the Pod.
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	User      string `json:"user"`
	Identity  string `json:"identity,omitempty"`
	Queue     string `json:"queue,omitempty"`
	Check     string `json:"check,omitempty"` // CheckSubmit, CheckKill or ""
	Field     string `json:"field,omitempty"` // the field that decided, as a Kubernetes field path
	DryRun    bool   `json:"dryRun,omitempty"`
}

// What Record.Caller says of a review's sender.
const (
	CallerVerified   = "verified"   // its client certificate is the API server's
	CallerUnverified = "unverified" // it is not, let through by --webhook-auth report
	CallerUnchecked  = "unchecked"  // --webhook-auth none
)

// AppendAttrs appends the record's attributes to dst (docs/audit.md),
// empty optional ones left out and requester-chosen strings clipped.
func (r *Record) AppendAttrs(dst []slog.Attr) []slog.Attr {
	dst = append(dst, slog.String("webhook", r.Webhook))
	dst = appendString(dst, "caller", r.Caller, clip.Name)
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
	dst = appendString(dst, "queueAsked", r.QueueAsked, clip.Name)
	dst = append(dst,
		slog.Bool("allowed", r.Allowed),
		slog.Bool("patched", r.Patched),
		slog.Int("code", int(r.Code)),
		slog.String("reason", clip.String(r.Reason, clip.Text)),
		slog.String("rule", string(r.Rule)),
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
	dst = appendString(dst, "propagation", r.Propagation, clip.Text)
	dst = appendString(dst, "unstampedParent", r.UnstampedParent, clip.Text)
	if r.Denial != nil {
		dst = append(dst, r.denialAttr())
	}
	return dst
}

// denialAttr renders r.Denial as the audit record's group "denial".
func (r *Record) denialAttr() slog.Attr {
	d := r.Denial
	as := make([]slog.Attr, 0, 15)
	as = append(as, slog.String("reason", string(d.Reason)))
	as = appendString(as, "message", d.Message, clip.Text)
	as = append(as, slog.Int("code", int(d.Code)))
	if d.Warned {
		as = append(as, slog.Bool("warned", true))
	}
	for _, f := range [...][2]string{{"operation", d.Operation}, {"group", d.Group}, {"kind", d.Kind}, {"namespace", d.Namespace}, {"name", d.Name}} {
		as = appendString(as, f[0], f[1], clip.Name)
	}
	as = append(as, slog.String("user", clip.String(d.User, clip.Name)))
	for _, f := range [...][2]string{{"identity", d.Identity}, {"queue", d.Queue}, {"check", d.Check}, {"field", d.Field}} {
		as = appendString(as, f[0], f[1], clip.Name)
	}
	if d.DryRun {
		as = append(as, slog.Bool("dryRun", true))
	}
	return slog.Attr{Key: "denial", Value: slog.GroupValue(as...)}
}

// appendString appends key=v clipped to max, unless v is empty.
func appendString(dst []slog.Attr, key, v string, max int) []slog.Attr {
	if v == "" {
		return dst
	}
	return append(dst, slog.String(key, clip.String(v, max)))
}

// NumAuditAttrs is the most attributes AppendAttrs appends.
const NumAuditAttrs = 26

func (h *Handler) record(ctx context.Context, hook hookKind, req *admissionv1.AdmissionRequest, dc *decision) {
	if h.audit == nil {
		return
	}
	r := Record{
		Webhook:    string(hook),
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

		Propagation:     dc.propagation,
		UnstampedParent: dc.unstampedParent,
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

// complete fills in the object's name, group and kind (the Pod for an
// eviction or Binding) and, when markers are read and no check set one,
// its first queue; never the outcome.
func complete(ctx context.Context, st *State, rd *reads, req *admissionv1.AdmissionRequest, obj, old string, pre *views, dc *decision) {
	dc.group, dc.kind, dc.name = req.Kind.Group, req.Kind.Kind, cmp.Or(req.Name, dc.name)
	if isEviction(req) || isBinding(req) {
		dc.group, dc.kind = "", "Pod"
		return
	}
	k := st.cfg.lookupKind(req.Kind.Group, req.Kind.Kind)
	if k == nil {
		return
	}
	c := st.cfg
	needQueue := dc.queue == "" && (c.EnforceQueue || c.EnforceDelete) && c.ProcessNamespace(req.Namespace)
	if dc.name != "" && !needQueue {
		return
	}
	ov, s, done, field := &pre.obj, obj, &pre.objDone, "request.object"
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
	case admissionv1.Delete:
		ov, s, done, field = &pre.old, old, &pre.oldDone, "request.oldObject"
	default:
		return
	}
	if view(c, k, s, ov, done, field) != nil {
		return
	}
	dc.name = cmp.Or(dc.name, nameOf(req, ov))
	if !needQueue {
		return
	}
	placing := req.Operation != admissionv1.Delete
	if ts, err := c.targets(k, req.Namespace, ov, placing); err == nil && len(ts) > 0 && c.viaLocalQueues(ctx, rd, req.Namespace, ts[:1]) == nil {
		dc.queue = ts[0].record()
	}
}

type lookupKey struct{}

// lookupNotes collects a review's NoteLookup notes for Record.Lookup.
type lookupNotes struct {
	mu    sync.Mutex
	notes []string
}

// NoteLookup records, once, how the submitter of ctx's review was
// identified beyond asking for the user (a mapping rule, an override, an
// unknown user); outside a review, nothing.
func NoteLookup(ctx context.Context, note string) {
	n, _ := ctx.Value(lookupKey{}).(*lookupNotes)
	if n == nil || note == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Contains(n.notes, note) {
		n.notes = append(n.notes, note)
	}
}

func (n *lookupNotes) String() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.notes, "; ")
}

// OtherLabel is the metric label of a kind or operation the webhook does not know.
const OtherLabel = "other"

// MetricKind returns a handled kind, "" or OtherLabel, so that an invented
// kind cannot create a metric series kept forever.
func MetricKind(kind string) string {
	if kind == "" || slices.ContainsFunc(kinds[:], func(k kindInfo) bool { return k.kind == kind }) {
		return kind
	}
	return OtherLabel
}

// MetricOperation returns an admission operation, "" or OtherLabel.
func MetricOperation(op string) string {
	switch admissionv1.Operation(op) {
	case "", admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return op
	}
	return OtherLabel
}
