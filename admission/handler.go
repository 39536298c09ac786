package admission

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// mastersGroup is the Kubernetes superuser group: its members bypass
// authorization entirely and may remove the webhook itself.
const mastersGroup = "system:masters"

const (
	legacyLabelWarning = "label " + LegacyUserLabel + " is deprecated and will stop working: the object is left unstamped " +
		"because bypassAuth is on; set the annotation " + UserInfoAnnotation + " or drop the label"
	errNoAuthorizerMessage = "enforceQueueACLs is on but no queue authorizer is configured: denied (usher fails closed)"
	errNoDeleteAuthzFormat = "usher: enforceDeleteACLs is on but no delete authorizer is configured: user %q may not %s %s (usher fails closed)"
	defaultQueueInRecord   = "(default)"
	maxPooledBufferBytes   = 1 << 20
	hookNameMutate         = "mutate"
	hookNameValidate       = "validate"
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

// DefaultMaxBodyBytes is the default cap on the size of a review body
// (see WithMaxBodyBytes).
const DefaultMaxBodyBytes = 7 << 20

// DefaultMaxGroups is the default cap on the groups of a review (see
// WithMaxGroups): directory users of large Active Directory forests carry
// over a thousand.
const DefaultMaxGroups = 2048

type hookKind uint8

const (
	hookMutate hookKind = iota
	hookValidate
)

func (k hookKind) String() string {
	if k == hookValidate {
		return hookNameValidate
	}
	return hookNameMutate
}

// Handler reviews AdmissionRequests for /mutate and /validate. It is safe
// for concurrent use; Store swaps its configuration and authorizer
// atomically while reviews are in flight (each review uses the pair it
// loaded when it started).
type Handler struct {
	state   stateSource
	owners  OwnerLookup
	audit   func(Record)
	caller  func(context.Context) string
	onPanic func(any)
	maxBody int64
	groups  groupLimit
	pool    sync.Pool
}

// groupLimit caps the groups a review may name (WithMaxGroups).
type groupLimit struct {
	max  int
	over func(source string)
}

// keep is how many groups of a list the decoder keeps (all when l is
// nil): past the cap a review is refused, so the rest are only counted.
func (l *groupLimit) keep() int {
	if l == nil {
		return math.MaxInt
	}
	return l.max
}

// refuse counts and denies a review whose where names n groups, more than
// the cap; source is "request" or "annotation".
func (l *groupLimit) refuse(source string, cause Cause, where string, n int) decision {
	if l.over != nil {
		l.over(source)
	}
	return deny(cause, httpStatusBadRequest, "usher: %s names %d groups, more than the limit of %d (usher serve --max-groups)", where, n, l.max)
}

// State is what one review reads, loaded once when it starts: the compiled
// admission settings and the authorizers that answer for the same
// configuration. It is immutable; build it with NewState.
type State struct {
	cfg   *compiled
	authz QueueAuthorizer
	del   DeleteAuthorizer
	ident IdentityResolver
}

type handlerState = State

// NewState returns the state of a handler: cfg (nil: the default
// configuration) and the authorizers answering for the same
// configuration.
func NewState(cfg *settings.Compiled, a Authorizers) *State {
	if cfg == nil {
		cfg = settings.MustCompile(settings.Config{})
	}
	return &State{cfg: compile(cfg), authz: a.Queue, del: a.Delete, ident: a.Identity}
}

// Config returns the compiled admission settings of s.
func (s *State) Config() *settings.Compiled { return s.cfg.Compiled }

// stateSource is where a review loads its State: a provider given with
// WithState, or the handler's own pointer (NewHandler's cfg, the
// authorizer options and Store).
type stateSource struct {
	own      atomic.Pointer[State]
	provider func() *State
}

func (s *stateSource) Load() *State {
	if s.provider != nil {
		return s.provider()
	}
	return s.own.Load()
}

func (s *stateSource) Store(st *State) { s.own.Store(st) }

func (s *stateSource) CompareAndSwap(old, st *State) bool { return s.own.CompareAndSwap(old, st) }

// WithState makes the handler load the State of each review from f, once
// when the review starts, instead of holding its own: the caller swaps
// settings and authorizers together (usher serve returns the current
// configuration generation's, so that one atomic swap changes the policy
// and the admission settings at once). f must be quick, safe for
// concurrent use and never return nil. With WithState, NewHandler's cfg,
// WithAuthorizer and WithDeleteAuthorizer are not used and Store is an
// error. Default: none (the handler's own state).
func WithState(f func() *State) Option {
	return func(h *Handler) { h.state.provider = f }
}

// Option configures a Handler.
type Option func(*Handler)

// WithAuthorizer sets the QueueAuthorizer used when enforceQueueACLs is on.
// Default: none, and then every object is denied while enforceQueueACLs is
// on (fail closed).
func WithAuthorizer(a QueueAuthorizer) Option {
	return func(h *Handler) {
		st := *h.state.Load()
		st.authz = a
		h.state.Store(&st)
	}
}

// WithDeleteAuthorizer sets the DeleteAuthorizer used when
// enforceDeleteACLs is on. Store keeps it. Default: none, and then every
// DELETE that the kill rule has to decide is denied while
// enforceDeleteACLs is on (fail closed).
func WithDeleteAuthorizer(a DeleteAuthorizer) Option {
	return func(h *Handler) {
		st := *h.state.Load()
		st.del = a
		h.state.Store(&st)
	}
}

// WithAudit sets a hook called once per review, after the decision, with
// who asked for what and the outcome. It is called on the request's
// goroutine and should be quick. Default: none. SlogAudit builds one.
func WithAudit(f func(Record)) Option { return func(h *Handler) { h.audit = f } }

// WithCaller sets the function that tells each review's audit record who
// sent it (Record.Caller), from the request's context. Default: none.
func WithCaller(f func(context.Context) string) Option { return func(h *Handler) { h.caller = f } }

// WithMaxBodyBytes caps the size of a review body; larger requests get HTTP
// 413. Default: DefaultMaxBodyBytes (7 MiB): an UPDATE review carries the
// old and the new object, each up to the API server's 3 MiB request limit.
func WithMaxBodyBytes(n int64) Option {
	return func(h *Handler) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// WithMaxGroups caps at max the groups of request.userInfo, and of a
// user.info annotation a requester supplies on CREATE: a review naming
// more is denied with a message that names the limit and the count, after
// over (if not nil) is called with "request" or "annotation". A review
// body's groups past the cap are counted, not kept. Default
// DefaultMaxGroups.
func WithMaxGroups(max int, over func(source string)) Option {
	return func(h *Handler) {
		if max > 0 {
			h.groups.max = max
		}
		h.groups.over = over
	}
}

// WithPanicHook sets a function called with the value of every panic the
// handler recovers (to count it in a metric). Default: none. A recovered
// panic always denies the review.
func WithPanicHook(f func(recovered any)) Option { return func(h *Handler) { h.onPanic = f } }

// NewHandler returns a handler using cfg (nil: the default configuration).
func NewHandler(cfg *settings.Compiled, opts ...Option) *Handler {
	h := &Handler{maxBody: DefaultMaxBodyBytes, groups: groupLimit{max: DefaultMaxGroups}}
	h.state.Store(NewState(cfg, Authorizers{}))
	for _, o := range opts {
		o(h)
	}
	return h
}

// Store replaces the configuration and the queue authorizer in one atomic
// step; reviews in flight finish with the pair they started with. cfg must
// not be nil; authz may be nil when enforceQueueACLs is off. The delete
// authorizer set with WithDeleteAuthorizer is kept.
func (h *Handler) Store(cfg *settings.Compiled, authz QueueAuthorizer) error {
	if cfg == nil {
		return errors.New("admission: Store needs a compiled configuration, got nil")
	}
	if h.state.provider != nil {
		return errors.New("admission: Store on a handler whose state comes from WithState")
	}
	for {
		prev := h.state.Load()
		if h.state.CompareAndSwap(prev, &handlerState{cfg: compile(cfg), authz: authz, del: prev.del, ident: prev.ident}) {
			return nil
		}
	}
}

// current returns the state a review runs with: the compiled settings and
// the authorizers, loaded once per review (from the WithState provider
// when one is set). It is the only place a review reads the handler's
// state.
func (h *Handler) current() *handlerState { return h.state.Load() }

// Current returns the configuration and authorizer in use (the provider's
// current ones with WithState).
func (h *Handler) Current() (*settings.Compiled, QueueAuthorizer) {
	st := h.current()
	return st.cfg.Compiled, st.authz
}

// Mutate reviews a request for the mutating webhook: on CREATE it stamps
// the submitter's identity (or accepts a trusted one) and, when
// enforceQueueACLs is on, checks the target queues; on UPDATE it rejects any
// change of the user.info annotation. The response's UID is the request's.
func (h *Handler) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return h.respond(ctx, hookMutate, req)
}

// Validate reviews a request for the validating webhook, which sees the
// object after every mutation: on CREATE the user.info annotation must be
// present (unless bypassAuth's legacy-label case or a controller's ReplicaSet)
// and come from a trusted submitter or name the submitter itself, and the
// target queues must be allowed; on UPDATE the annotation must not change;
// on DELETE, when enforceDeleteACLs is on, the requester must be allowed to
// kill the object (see DeleteAuthorizer). It never patches.
func (h *Handler) Validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return h.respond(ctx, hookValidate, req)
}

func (h *Handler) respond(ctx context.Context, hook hookKind, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req == nil {
		dc := deny(CauseInvalidRequest, httpStatusBadRequest, "the AdmissionReview has no request")
		h.record(ctx, hook, nil, &dc)
		return dc.toResponse("")
	}
	var buf []byte
	dc := h.review(ctx, h.current(), hook, req, string(req.Object.Raw), string(req.OldObject.Raw), nil, &buf)
	return dc.toResponse(string(req.UID))
}

// review decides with st, recovering panics, and reports to the audit
// hook. pre, when not nil, holds objects already parsed with st.cfg. buf is
// scratch space the patch is built in.
func (h *Handler) review(ctx context.Context, st *handlerState, hook hookKind, req *admissionv1.AdmissionRequest, obj, old string, pre *views, buf *[]byte) decision {
	if pre == nil {
		pre = &views{}
	}
	pre.lim = &h.groups
	var notes *lookupNotes
	if h.audit != nil && (st.cfg.EnforceQueue || st.cfg.EnforceDelete || st.ident != nil) {
		// Only an authorizer notes a lookup; without one nothing is
		// allocated for the notes.
		ctx, notes = withLookupNotes(ctx)
	}
	var dc decision
	switch n := max(pre.groups, len(req.UserInfo.Groups)); {
	case n > h.groups.max:
		dc = h.groups.refuse("request", CauseInvalidRequest, "request.userInfo", n)
	case ctx.Err() != nil:
		// The caller has gone: no authorizer or resolver is asked.
		dc = deny(CauseDecisionFailed, httpStatusInternal, "usher: the request ended before it was decided (%v); denied", context.Cause(ctx))
	default:
		dc = h.decideSafe(ctx, st, hook, req, obj, old, pre, buf)
	}
	dc.lookup = notes.String()
	complete(st, req, obj, old, pre, &dc)
	dc.bound()
	h.record(ctx, hook, req, &dc)
	return dc
}

func (h *Handler) decideSafe(ctx context.Context, st *handlerState, hook hookKind, req *admissionv1.AdmissionRequest, obj, old string, pre *views, buf *[]byte) (dc decision) {
	defer func() {
		if v := recover(); v != nil {
			if h.onPanic != nil {
				h.onPanic(v)
			}
			dc = deny(CauseDecisionFailed, httpStatusInternal, "usher: internal error while reviewing %q %q: %v; denied (usher fails closed)",
				req.Kind.Kind, req.Namespace+"/"+req.Name, v)
		}
	}()
	return decide(ctx, st, h.owners, hook, req, obj, old, pre, buf)
}

// submitter is the user and groups a workload runs as; decided says the
// groups are the IdentityResolver's answer, which the queue check uses as
// they are (SubmitRequest.Decided).
type submitter struct {
	user    string
	groups  []string
	decided bool
}

// decide is the admission logic. pre is never nil (review sees to it).
func decide(ctx context.Context, st *handlerState, owners OwnerLookup, hook hookKind, req *admissionv1.AdmissionRequest, obj, old string, pre *views, buf *[]byte) decision {
	c := st.cfg
	if isEviction(req) {
		return evict(ctx, st, req)
	}
	if isBinding(req) {
		return bind(ctx, st, req, obj)
	}
	k := lookupKind(req.Kind.Group, req.Kind.Kind)
	if k == nil {
		return allow(RuleKindNotHandled)
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
	case admissionv1.Delete:
		if !c.EnforceDelete {
			return allow(RuleOperationNotHandled)
		}
	default:
		return allow(RuleOperationNotHandled)
	}
	if !c.ProcessNamespace(req.Namespace) {
		return allow(RuleNamespaceBypassed)
	}
	switch req.Operation {
	case admissionv1.Create:
		dc := create(ctx, st, hook, k, req, obj, pre, buf)
		if req.Name == "" {
			// The API server leaves request.name empty for an object
			// created with generateName: its name is chosen after
			// admission. The audit record names it generateName + "*",
			// as the messages do.
			dc.name = pre.obj.top.name
			if dc.name == "" && pre.obj.top.genName != "" {
				dc.name = pre.obj.top.genName + "*"
			}
		}
		return dc
	case admissionv1.Update:
		return update(ctx, st, owners, k, req, obj, old, pre)
	}
	return remove(ctx, st, k, req, old, pre)
}
