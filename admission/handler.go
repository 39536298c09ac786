package admission

import (
	"context"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// mastersGroup bypasses authorization and may remove the webhook itself.
const mastersGroup = "system:masters"

const (
	legacyLabelWarning = "label " + LegacyUserLabel + " is deprecated and will stop working: the object is left unstamped " +
		"because bypassAuth is on; set the annotation " + UserInfoAnnotation + " or drop the label"
	errNoAuthorizerMessage = "enforceQueueACLs is on but no queue authorizer is configured: denied (usher fails closed)"
	errNoDeleteAuthzFormat = "usher: enforceDeleteACLs is on but no delete authorizer is configured: user %q may not %s %s (usher fails closed)"
	defaultQueueInRecord   = "(default)"
	maxPooledBufferBytes   = 1 << 20
)

// Status codes of denials and HTTP errors.
const (
	httpStatusBadRequest  = 400
	httpStatusForbidden   = 403
	httpStatusNotAllowed  = 405
	httpStatusTooLarge    = 413
	httpStatusUnsupported = 415
	httpStatusInternal    = 500
)

// DefaultMaxBodyBytes is WithMaxBodyBytes's default: an UPDATE carries two objects of up to 3 MiB.
const DefaultMaxBodyBytes = 7 << 20

// DefaultMaxGroups is WithMaxGroups's default: large Active Directory users carry over a thousand groups.
const DefaultMaxGroups = 2048

// hookKind is the webhook reviewing, as Record.Webhook names it.
type hookKind string

const (
	hookMutate   hookKind = "mutate"
	hookValidate hookKind = "validate"
)

// Handler reviews AdmissionReviews for /mutate and /validate, safe for concurrent use.
type Handler struct {
	state   func() *State
	reads   reads
	audit   func(Record)
	caller  func(context.Context) string
	maxBody int64
	groups  groupLimit
	pool    sync.Pool
}

// groupLimit caps the groups a review may name (WithMaxGroups).
type groupLimit struct {
	max  int
	over func(source string)
}

// refuse counts and denies a review whose where names n > max groups.
func (l *groupLimit) refuse(source string, cause Cause, where string, n int) decision {
	if l.over != nil {
		l.over(source)
	}
	return deny(cause, httpStatusBadRequest, "usher: %s names %d groups, more than the limit of %d (usher serve --max-groups)", where, n, l.max)
}

// State is what one review reads: settings and authorizers of one configuration.
type State struct {
	cfg   *compiled
	authz QueueAuthorizer
	del   DeleteAuthorizer
	ident IdentityResolver
}

// NewState returns the state of cfg and its authorizers.
func NewState(cfg *settings.Compiled, a Authorizers) *State {
	return &State{cfg: compile(cfg), authz: a.Queue, del: a.Delete, ident: a.Identity}
}

// Option configures a Handler.
type Option func(*Handler)

// WithAudit sets a hook called once per review, on its goroutine. Default: none.
func WithAudit(f func(Record)) Option { return func(h *Handler) { h.audit = f } }

// WithCaller sets what tells Record.Caller from a review's context. Default: none.
func WithCaller(f func(context.Context) string) Option { return func(h *Handler) { h.caller = f } }

// WithMaxBodyBytes caps a review body (larger: 413). Default: DefaultMaxBodyBytes.
func WithMaxBodyBytes(n int64) Option {
	return func(h *Handler) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// WithMaxGroups caps the groups of request.userInfo and of a supplied
// user.info: a review naming more is denied, after over (if not nil) is
// called with "request" or "annotation". Default: DefaultMaxGroups.
func WithMaxGroups(max int, over func(source string)) Option {
	return func(h *Handler) {
		if max > 0 {
			h.groups.max = max
		}
		h.groups.over = over
	}
}

// NewHandler returns a handler that runs each review with the State that
// state (quick, concurrency-safe, never nil) returns when it starts.
func NewHandler(state func() *State, opts ...Option) *Handler {
	h := &Handler{state: state, maxBody: DefaultMaxBodyBytes, groups: groupLimit{max: DefaultMaxGroups}}
	h.pool.New = func() any { return new(scratch) }
	for _, o := range opts {
		o(h)
	}
	return h
}

// review decides rv with st and reports it.
func (h *Handler) review(ctx context.Context, st *State, hook hookKind, rv *decodedReview) decision {
	req, pre := &rv.req, &rv.views
	var notes *lookupNotes
	if h.audit != nil && (st.cfg.EnforceQueue || st.cfg.EnforceDelete || st.ident != nil) {
		notes = &lookupNotes{}
		ctx = context.WithValue(ctx, lookupKey{}, notes)
	}
	var dc decision
	switch n := max(pre.groups, len(req.UserInfo.Groups)); {
	case n > h.groups.max:
		dc = h.groups.refuse("request", CauseInvalidRequest, "request.userInfo", n)
	case ctx.Err() != nil:
		// The caller has gone: no authorizer or resolver is asked.
		dc = deny(CauseDecisionFailed, httpStatusInternal, "usher: the request ended before it was decided (%v); denied", context.Cause(ctx))
	default:
		dc = decide(ctx, st, &h.reads, hook, req, rv.obj, rv.old, pre)
	}
	dc.lookup = notes.String()
	complete(ctx, st, &h.reads, req, rv.obj, rv.old, pre, &dc)
	dc.bound()
	h.record(ctx, hook, req, &dc)
	return dc
}

// submitter is who a workload runs as; decided as in SubmitRequest.
type submitter struct {
	user    string
	groups  []string
	decided bool
}

// decide is the admission logic.
func decide(ctx context.Context, st *State, rd *reads, hook hookKind, req *admissionv1.AdmissionRequest, obj, old string, pre *views) decision {
	c := st.cfg
	switch {
	case isEviction(req):
		return evict(ctx, st, req)
	case isBinding(req):
		return bind(ctx, st, req, obj)
	case req.Kind.Group == "kueue.x-k8s.io" && req.Kind.Kind == "LocalQueue":
		return localQueue(ctx, st, req, obj, old)
	case req.Kind.Group == "" && req.Kind.Kind == "Namespace":
		return steering(ctx, st, req, obj, old)
	}
	k := c.lookupKind(req.Kind.Group, req.Kind.Kind)
	if k == nil {
		return allow(RuleKindNotHandled)
	}
	op := req.Operation
	if op != admissionv1.Create && op != admissionv1.Update && (op != admissionv1.Delete || !c.EnforceDelete) {
		return allow(RuleOperationNotHandled)
	}
	if !c.ProcessNamespace(req.Namespace) {
		return allow(RuleNamespaceBypassed)
	}
	switch op {
	case admissionv1.Create:
		return create(ctx, st, rd, hook, k, req, obj, pre)
	case admissionv1.Update:
		return update(ctx, st, rd, k, req, obj, old, pre)
	}
	return remove(ctx, st, rd, k, req, old, pre)
}
