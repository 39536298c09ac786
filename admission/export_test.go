package admission

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/internal/jsonscan"
)

// The tests' handlers hold their own State, which Store swaps; usher
// serve's comes from the generation in service.
var testStates sync.Map // *Handler → *atomic.Pointer[State]

// unlimited returns a decodedReview whose decoder keeps every group.
func unlimited() decodedReview {
	return decodedReview{views: views{lim: &groupLimit{max: math.MaxInt}}}
}

// newTestHandler returns a handler using cfg (nil: the default
// configuration) and no authorizer, unless an option sets one.
func newTestHandler(cfg *settings.Compiled, opts ...Option) *Handler {
	cur := new(atomic.Pointer[State])
	cur.Store(NewState(cmp.Or(cfg, settings.MustCompile(settings.Config{})), Authorizers{}))
	h := NewHandler(cur.Load)
	testStates.Store(h, cur)
	for _, o := range opts {
		o(h)
	}
	return h
}

func (h *Handler) own() *atomic.Pointer[State] {
	cur, _ := testStates.Load(h)
	p, _ := cur.(*atomic.Pointer[State])
	return p
}

func withState(f func(*State)) Option {
	return func(h *Handler) {
		st := *h.own().Load()
		f(&st)
		h.own().Store(&st)
	}
}

// WithAuthorizer sets the handler's QueueAuthorizer.
func WithAuthorizer(a QueueAuthorizer) Option { return withState(func(st *State) { st.authz = a }) }

// WithDeleteAuthorizer sets the handler's DeleteAuthorizer.
func WithDeleteAuthorizer(a DeleteAuthorizer) Option {
	return withState(func(st *State) { st.del = a })
}

// WithState makes the handler read its State from f.
func WithState(f func() *State) Option {
	return func(h *Handler) {
		h.state = f
		testStates.Delete(h)
	}
}

// Store replaces the configuration and the queue authorizer in one
// atomic step, keeping the other authorizers.
func (h *Handler) Store(cfg *settings.Compiled, authz QueueAuthorizer) error {
	cur := h.own()
	switch {
	case cfg == nil:
		return errors.New("admission: Store needs a compiled configuration, got nil")
	case cur == nil:
		return errors.New("admission: Store on a handler whose state comes from WithState")
	}
	prev := cur.Load()
	cur.Store(&State{cfg: compile(cfg), authz: authz, del: prev.del, ident: prev.ident})
	return nil
}

// Config returns the compiled admission settings of s.
func (s *State) Config() *settings.Compiled { return s.cfg.Compiled }

// Current returns the configuration and queue authorizer in use.
func (h *Handler) Current() (*settings.Compiled, QueueAuthorizer) {
	st := h.state()
	return st.cfg.Compiled, st.authz
}

// QueueAuthorizerFunc adapts a function to QueueAuthorizer.
type QueueAuthorizerFunc func(ctx context.Context, req SubmitRequest) (SubmitDecision, error)

// AuthorizeSubmit calls f.
func (f QueueAuthorizerFunc) AuthorizeSubmit(ctx context.Context, req SubmitRequest) (SubmitDecision, error) {
	return f(ctx, req)
}

var _ QueueAuthorizer = QueueAuthorizerFunc(nil)

// DeleteAuthorizerFunc adapts a function to DeleteAuthorizer.
type DeleteAuthorizerFunc func(ctx context.Context, req DeleteRequest) (bool, string, error)

// AuthorizeDelete calls f.
func (f DeleteAuthorizerFunc) AuthorizeDelete(ctx context.Context, req DeleteRequest) (bool, string, error) {
	return f(ctx, req)
}

var _ DeleteAuthorizer = DeleteAuthorizerFunc(nil)

// String renders the annotation value, the inverse of ParseUserInfo.
func (u UserInfo) String() string { return string(settings.AppendUserInfo(nil, u.User, u.Groups)) }

// MarshalJSON encodes u as the annotation's JSON (groups always present).
func (u UserInfo) MarshalJSON() ([]byte, error) {
	return settings.AppendUserInfo(nil, u.User, u.Groups), nil
}

var _ json.Marshaler = UserInfo{}

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

// patchOp is one RFC 6902 JSON Patch operation. Value holds JSON text.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// appendPatch appends ops as a JSON Patch document.
func appendPatch(dst []byte, ops ...patchOp) []byte {
	dst = append(dst, '[')
	for i, op := range ops {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"op":`...)
		dst = jsonscan.AppendString(dst, op.Op)
		dst = append(dst, `,"path":`...)
		dst = jsonscan.AppendString(dst, op.Path)
		if op.Value != nil {
			dst = append(dst, `,"value":`...)
			dst = append(dst, op.Value...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// Mutate and Validate review a request decoded by encoding/json, and
// render the decision as the k8s.io/api types (toResponse): the tests
// hold the HTTP edge's JSON to them.
func (h *Handler) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return h.respond(ctx, hookMutate, req)
}

func (h *Handler) Validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return h.respond(ctx, hookValidate, req)
}

func (h *Handler) respond(ctx context.Context, hook hookKind, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	rv := &decodedReview{req: *req, obj: string(req.Object.Raw), old: string(req.OldObject.Raw)}
	rv.views.lim = &h.groups
	if uids := req.UserInfo.Extra[podUIDExtra]; len(uids) == 1 {
		rv.views.podUID = uids[0]
	}
	dc := h.review(ctx, h.state(), hook, rv)
	return dc.toResponse(req.UID)
}
