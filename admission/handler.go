package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/internal/clip"
)

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
	// Namespace and Name locate the object (Name is empty for objects
	// created with generateName).
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
	// DryRun is request.dryRun.
	DryRun bool
}

// Reasons recorded for allowed reviews.
const (
	reasonKindNotHandled  = "kind not handled"
	reasonOpNotHandled    = "operation not handled"
	reasonNamespaceBypass = "namespace bypassed"
	reasonStamped         = "stamped the submitter's identity"
	reasonKeptBypassAuth  = "kept user.info: bypassAuth lets any submitter set it"
	reasonKeptController  = "kept user.info set by a trusted controller"
	reasonKeptExtUser     = "kept user.info set by a trusted external user"
	reasonKeptExtGroup    = "kept user.info set by a member of a trusted external group"
	reasonKeptSame        = "kept user.info naming the submitter itself"
	reasonLegacyLabel     = "bypassAuth and legacy username label: left unstamped"
	reasonControllerRS    = "ReplicaSet created by a controller: left unstamped"
	reasonUnchanged       = "user.info unchanged"
	reasonDelController   = "delete by a trusted controller"
	reasonDelExtUser      = "delete by a trusted external user"
	reasonDelExtGroup     = "delete by a member of a trusted external group"
	reasonDelMasters      = "delete by a member of " + mastersGroup
	reasonDelTerminating  = "the object is already being deleted"
	reasonDelAllowed      = "the kill rule allows it"
	reasonEvictPrefix     = "eviction by an admin of every queue: "
	reasonBindPlain       = "binding sets nothing usher guards"
	reasonBindPrefix      = "binding by an admin of every queue: "
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

// decision is the outcome of a review before it becomes an
// AdmissionResponse.
type decision struct {
	allowed  bool
	code     int32
	message  string // the denial message, or the reason an allowed review passed
	patch    []byte
	warning  string
	identity string
	queue    string
	name     string // the object's name when the request has none (collection deletes)
}

func allow(reason string) decision { return decision{allowed: true, code: 200, message: reason} }

func deny(code int32, format string, args ...any) decision {
	return decision{code: code, message: fmt.Sprintf(format, args...)}
}

func (dc *decision) statusReason() metav1.StatusReason {
	switch dc.code {
	case httpStatusBadRequest:
		return metav1.StatusReasonBadRequest
	case httpStatusTooLarge:
		return metav1.StatusReasonRequestEntityTooLarge
	case httpStatusUnsupported:
		return metav1.StatusReasonUnsupportedMediaType
	case httpStatusInternal:
		return metav1.StatusReasonInternalError
	default:
		return metav1.StatusReasonForbidden
	}
}

// toResponse builds the AdmissionResponse for the decision (the
// constructors Allowed, Patched and Denied in one place).
func (dc *decision) toResponse(uid string) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: types.UID(uid), Allowed: dc.allowed}
	if !dc.allowed {
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: dc.message,
			Reason:  dc.statusReason(),
			Code:    dc.code,
		}
	}
	if len(dc.patch) > 0 {
		resp.Patch = append([]byte(nil), dc.patch...)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
	if dc.warning != "" {
		resp.Warnings = []string{dc.warning}
	}
	return resp
}

// Handler reviews AdmissionRequests for /mutate and /validate. It is safe
// for concurrent use; Store swaps its configuration and authorizer
// atomically while reviews are in flight (each review uses the pair it
// loaded when it started).
type Handler struct {
	state   atomic.Pointer[handlerState]
	audit   func(Record)
	onPanic func(any)
	maxBody int64
	pool    sync.Pool
}

type handlerState struct {
	cfg   *Compiled
	authz QueueAuthorizer
	del   DeleteAuthorizer
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

// WithPanicHook sets a function called with the value of every panic the
// handler recovers (to count it in a metric). Default: none. A recovered
// panic always denies the review.
func WithPanicHook(f func(recovered any)) Option { return func(h *Handler) { h.onPanic = f } }

// NewHandler returns a handler using cfg (nil: the default configuration).
func NewHandler(cfg *Compiled, opts ...Option) *Handler {
	if cfg == nil {
		cfg = MustCompile(Config{})
	}
	h := &Handler{maxBody: DefaultMaxBodyBytes}
	h.state.Store(&handlerState{cfg: cfg})
	for _, o := range opts {
		o(h)
	}
	return h
}

// Store replaces the configuration and the queue authorizer in one atomic
// step; reviews in flight finish with the pair they started with. cfg must
// not be nil; authz may be nil when enforceQueueACLs is off. The delete
// authorizer set with WithDeleteAuthorizer is kept.
func (h *Handler) Store(cfg *Compiled, authz QueueAuthorizer) error {
	if cfg == nil {
		return errors.New("admission: Store needs a compiled configuration, got nil")
	}
	for {
		prev := h.state.Load()
		if h.state.CompareAndSwap(prev, &handlerState{cfg: cfg, authz: authz, del: prev.del}) {
			return nil
		}
	}
}

// Current returns the configuration and authorizer in use.
func (h *Handler) Current() (*Compiled, QueueAuthorizer) {
	st := h.state.Load()
	return st.cfg, st.authz
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
// present (unless seed 002's legacy-label case or a controller's ReplicaSet)
// and come from a trusted submitter or name the submitter itself, and the
// target queues must be allowed; on UPDATE the annotation must not change;
// on DELETE, when enforceDeleteACLs is on, the requester must be allowed to
// kill the object (see DeleteAuthorizer). It never patches.
func (h *Handler) Validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return h.respond(ctx, hookValidate, req)
}

func (h *Handler) respond(ctx context.Context, hook hookKind, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req == nil {
		dc := deny(httpStatusBadRequest, "the AdmissionReview has no request")
		h.record(hook, nil, &dc)
		return dc.toResponse("")
	}
	var buf []byte
	dc := h.review(ctx, h.state.Load(), hook, req, string(req.Object.Raw), string(req.OldObject.Raw), nil, &buf)
	return dc.toResponse(string(req.UID))
}

// review decides with st, recovering panics, and reports to the audit
// hook. pre, when not nil, holds objects already parsed with st.cfg. buf is
// scratch space the patch is built in.
func (h *Handler) review(ctx context.Context, st *handlerState, hook hookKind, req *admissionv1.AdmissionRequest, obj, old string, pre *views, buf *[]byte) decision {
	dc := h.decideSafe(ctx, st, hook, req, obj, old, pre, buf)
	h.record(hook, req, &dc)
	return dc
}

func (h *Handler) decideSafe(ctx context.Context, st *handlerState, hook hookKind, req *admissionv1.AdmissionRequest, obj, old string, pre *views, buf *[]byte) (dc decision) {
	defer func() {
		if v := recover(); v != nil {
			if h.onPanic != nil {
				h.onPanic(v)
			}
			dc = deny(httpStatusInternal, "usher: internal error while reviewing %s %s/%s: %v; denied (usher fails closed)",
				req.Kind.Kind, req.Namespace, req.Name, v)
		}
	}()
	return decide(ctx, st, hook, req, obj, old, pre, buf)
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
		Reason:   dc.message,
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

// identity is the user and groups a workload runs as.
type identity struct {
	user   string
	groups []string
}

// decide is the admission logic.
func decide(ctx context.Context, st *handlerState, hook hookKind, req *admissionv1.AdmissionRequest, obj, old string, pre *views, buf *[]byte) decision {
	c := st.cfg
	if isEviction(req) {
		return evict(ctx, st, req)
	}
	if isBinding(req) {
		return bind(ctx, st, req, obj)
	}
	k := lookupKind(req.Kind.Group, req.Kind.Kind)
	if k == nil {
		return allow(reasonKindNotHandled)
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update:
	case admissionv1.Delete:
		if !c.enforceDelete {
			return allow(reasonOpNotHandled)
		}
	default:
		return allow(reasonOpNotHandled)
	}
	if !c.processNamespace(req.Namespace) {
		return allow(reasonNamespaceBypass)
	}
	if pre == nil {
		pre = &views{}
	}
	switch req.Operation {
	case admissionv1.Create:
		return create(ctx, st, hook, k, req, obj, pre, buf)
	case admissionv1.Update:
		return update(ctx, st, k, req, obj, old, pre)
	}
	return remove(ctx, st, k, req, old, pre)
}

// view returns the parsed object: pre-parsed when done, else parsed now
// into o.
func view(c *Compiled, k *kindInfo, s string, o *objectView, done bool, field string) error {
	if done {
		return checkObjectKind(o, k, field)
	}
	*o = objectView{}
	return parseObject(s, k, c.labelKeys, c.annotationKeys, o, field)
}

func create(ctx context.Context, st *handlerState, hook hookKind, k *kindInfo, req *admissionv1.AdmissionRequest, obj string, pre *views, buf *[]byte) decision {
	c := st.cfg
	ov := &pre.obj
	if err := view(c, k, obj, ov, pre.objDone, "request.object"); err != nil {
		return deny(httpStatusBadRequest, "usher: %v", err)
	}
	if k.layout != layoutPod && !ov.hasTemplate {
		return deny(httpStatusBadRequest, "usher: %s %s has no pod template (%s): there is nowhere to record who submitted it",
			k.kind, objectName(req, ov), k.metaPath[:len(k.metaPath)-len("/metadata")])
	}
	pm := ov.pod()
	user, groups := req.UserInfo.Username, req.UserInfo.Groups
	var id identity
	var dc decision
	switch {
	case pm.has(slotUserInfo):
		ui, err := ParseUserInfo(pm.vals[slotUserInfo])
		if err != nil {
			return deny(httpStatusBadRequest, "usher: annotation %s on %s is not valid: %v (value %s)",
				UserInfoAnnotation, place(k, req, ov), err, errString(pm.vals[slotUserInfo]))
		}
		var reason string
		switch {
		case c.bypassAuth:
			reason = reasonKeptBypassAuth
		case c.trustControllers && c.systemUsers.match(user):
			reason = reasonKeptController
		case c.externalUsers.match(user):
			reason = reasonKeptExtUser
		case c.externalGroups.matchAny(groups):
			reason = reasonKeptExtGroup
		case ui.sameIdentity(user, groups):
			reason = reasonKeptSame
		default:
			return deny(httpStatusForbidden, "usher: user %q may not set annotation %s on %s: %s",
				user, UserInfoAnnotation, place(k, req, ov), untrustedHint(c, user))
		}
		id = identity{ui.User, ui.Groups}
		dc = allow(reason)
	case c.bypassAuth && pm.has(slotLegacy):
		// Seed 002: with bypassAuth, an object carrying the legacy label and
		// no annotation is left alone; the scheduler reads the label.
		id = identity{pm.vals[slotLegacy], nil}
		dc = allow(reasonLegacyLabel)
		dc.warning = legacyLabelWarning
	case k.kind == "ReplicaSet" && c.systemUsers.match(user):
		// YuniKorn's rule: never change a ReplicaSet a controller creates.
		// The Deployment controller compares the ReplicaSet's template with
		// the Deployment's; a stamped copy would never match and the
		// controller would create ReplicaSets without end. Its pods are
		// stamped when they are created.
		id = identity{user, groups}
		dc = allow(reasonControllerRS)
	case user == "":
		return deny(httpStatusBadRequest, "usher: request.userInfo.username is empty: there is no identity to record on %s %s",
			k.kind, objectName(req, ov))
	case hook == hookValidate:
		return deny(httpStatusForbidden, "usher: %s has no annotation %s: the usher mutating webhook did not stamp it "+
			"(register /mutate for %s CREATE with failurePolicy: Fail)",
			place(k, req, ov), UserInfoAnnotation, k.kind)
	default:
		id = identity{user, groups}
		b := appendUserInfo((*buf)[:0], user, groups)
		n := len(b)
		b = appendStampPatch(b, k, pm, b[:n])
		*buf = b
		dc = allow(reasonStamped)
		dc.patch = b[n:]
	}
	dc.identity = id.user
	if c.enforce {
		// Objects a trusted controller makes (a Deployment's ReplicaSets and
		// pods, a CronJob's Jobs) are checked too, under the identity they
		// carry: the queue is the one their pods will run in (see targets),
		// so a workload passes only if its pods will, and pods that carry no
		// marker are checked against the default queue.
		q, denied := checkQueues(ctx, st, k, req, ov, nil, id)
		if denied != nil {
			denied.identity = id.user
			return *denied
		}
		dc.queue = q
	}
	return dc
}

// untrustedHint explains who may set the annotation.
func untrustedHint(c *Compiled, user string) string {
	if !c.trustControllers && c.systemUsers.match(user) {
		return "the user matches systemUsers but trustControllers is false"
	}
	return "only controllers matching systemUsers, users matching externalUsers and members of groups matching " +
		"externalGroups may supply it; remove it and usher records your own identity"
}

func update(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, obj, old string, pre *views) decision {
	c := st.cfg
	nv, ov := &pre.obj, &pre.old
	if err := view(c, k, obj, nv, pre.objDone, "request.object"); err != nil {
		return deny(httpStatusBadRequest, "usher: %v", err)
	}
	if err := view(c, k, old, ov, pre.oldDone, "request.oldObject"); err != nil {
		return deny(httpStatusBadRequest, "usher: %v", err)
	}
	np, op := nv.pod(), ov.pod()
	oldHas, newHas := op.has(slotUserInfo), np.has(slotUserInfo)
	if oldHas != newHas || op.vals[slotUserInfo] != np.vals[slotUserInfo] {
		verb := "change annotation " + UserInfoAnnotation + " on"
		switch {
		case !newHas:
			verb = "remove annotation " + UserInfoAnnotation + " from"
		case !oldHas:
			verb = "add annotation " + UserInfoAnnotation + " to"
		}
		why := ""
		if newHas {
			if _, err := ParseUserInfo(np.vals[slotUserInfo]); err != nil {
				why = "; the new value is not valid either: " + err.Error()
			}
		}
		return deny(httpStatusForbidden, "usher: user %q may not %s %s: "+
			"it records who submitted the workload and cannot change after creation%s",
			req.UserInfo.Username, verb, place(k, req, nv), why)
	}
	if c.enforceDelete {
		// Who may delete must not be widened by whoever may merely edit.
		if what := c.killInputsChanged(k, ov, nv); what != "" {
			if _, trusted := c.trustedDeleter(req.UserInfo.Username, req.UserInfo.Groups); !trusted {
				if dc := killRule(ctx, st, k, req, ov, "change "+what+" on"); !dc.allowed {
					return dc
				}
			}
		}
	}
	dc := allow(reasonUnchanged)
	id := identity{req.UserInfo.Username, req.UserInfo.Groups}
	if newHas {
		if ui, err := ParseUserInfo(np.vals[slotUserInfo]); err == nil {
			id = identity{ui.User, ui.Groups}
		}
	} else if c.bypassAuth && np.has(slotLegacy) {
		id = identity{np.vals[slotLegacy], nil}
	}
	dc.identity = id.user
	if c.enforce {
		q, denied := checkQueues(ctx, st, k, req, nv, ov, id)
		if denied != nil {
			denied.identity = id.user
			return *denied
		}
		dc.queue = q
	}
	return dc
}

// place names where the user.info annotation lives, for messages: "Pod
// team-a/p" or "the pod template of Deployment team-a/web".
func place(k *kindInfo, req *admissionv1.AdmissionRequest, o *objectView) string {
	if k.layout == layoutPod {
		return k.kind + " " + objectName(req, o)
	}
	return "the " + k.where + " of " + k.kind + " " + objectName(req, o)
}

// objectName renders namespace/name for messages, using generateName when
// the object has no name yet.
func objectName(req *admissionv1.AdmissionRequest, o *objectView) string {
	name := req.Name
	if name == "" {
		name = o.top.name
	}
	if name == "" && o.top.genName != "" {
		name = o.top.genName + "*"
	}
	if req.Namespace == "" {
		return strconv.Quote(name)
	}
	return req.Namespace + "/" + name
}

// target is one queue an object asks for, and where that was read.
type target struct {
	queue  string
	src    *compiledSource
	level  string
	value  string
	marker bool
	// For the default queue: the pod-level scheduler that finds none of
	// its markers on the pods ("" when no marker at all names a queue).
	scheduler string
}

func (t *target) describe(partition string) string {
	if !t.marker {
		if t.scheduler != "" {
			return fmt.Sprintf("the default queue of partition %q (the %s carries no %s queue marker, so %s runs its pods there)",
				partition, t.level, t.scheduler, t.scheduler)
		}
		return fmt.Sprintf("the default queue of partition %q (no queue marker on the %s)", partition, t.level)
	}
	return fmt.Sprintf("queue %q of partition %q (%s %s=%q on the %s, read for %s)",
		t.queue, partition, t.src.Kind, t.src.Key, t.value, t.level, t.src.Scheduler)
}

// targets lists the distinct queues the object's pods may run in, as the
// schedulers will see them: the pod (or pod template) first, then a
// CronJob's job template, then the workload itself.
//
// A pod-level source (QueueSource.Level) is read on the pod or pod
// template only: its scheduler ignores the same marker on the workload, so
// a workload labelled for a queue only at the top runs its pods in the
// default queue. Workload-level sources are read at every level. Every
// marker counts: a workload labelled for an allowed queue for one scheduler
// and a forbidden one for another is denied, because usher cannot know
// which scheduler will act. The default queue ("") is a target when a
// pod-level scheduler finds none of its markers on the pods, and when no
// marker at all names a queue.
func (c *Compiled) targets(k *kindInfo, ns string, o *objectView, dst []target) ([]target, error) {
	type level struct {
		m    *metaView
		name string
	}
	var levels [3]level
	n := 0
	levels[n] = level{o.pod(), k.where}
	n++
	if k.layout == layoutCronJob {
		levels[n] = level{&o.job, "job template"}
		n++
	}
	if k.layout != layoutPod {
		levels[n] = level{&o.top, k.kind}
		n++
	}
	var onPods uint32 // bit i: source i has a marker on the pods
	for li, l := range levels[:n] {
		for i := range c.sources {
			src := &c.sources[i]
			if src.podLevel && li > 0 {
				continue // not read by its scheduler
			}
			v := l.m.vals[slotMarkers+i]
			if !l.m.has(slotMarkers+i) || v == "" {
				continue
			}
			if li == 0 {
				onPods |= 1 << i
			}
			q, err := c.mapQueue(src, v, ns)
			if err != nil {
				return nil, fmt.Errorf("%s %s=%q on the %s maps to no queue: %w", src.Kind, src.Key, v, l.name, err)
			}
			dup := false
			for j := range dst {
				if dst[j].queue == q {
					dup = true
					break
				}
			}
			if !dup {
				dst = append(dst, target{queue: q, src: src, level: l.name, value: v, marker: true})
			}
		}
	}
	if sched := c.unmarkedPodScheduler(onPods); sched != "" || len(dst) == 0 {
		for j := range dst {
			if dst[j].queue == "" {
				return dst, nil
			}
		}
		where := k.where
		if k.layout == layoutPod {
			where = "pod"
		}
		if sched == "" && k.layout != layoutPod {
			where = k.kind
		}
		dst = append(dst, target{level: where, scheduler: sched})
	}
	return dst, nil
}

// unmarkedPodScheduler returns the first pod-level scheduler none of whose
// sources has a marker on the pods (onPods: bit i set when source i has),
// or "".
func (c *Compiled) unmarkedPodScheduler(onPods uint32) string {
	for i := range c.sources {
		if !c.sources[i].podLevel {
			continue
		}
		marked := false
		for j := range c.sources {
			if c.sources[j].podLevel && c.sources[j].Scheduler == c.sources[i].Scheduler && onPods&(1<<j) != 0 {
				marked = true
				break
			}
		}
		if !marked {
			return c.sources[i].Scheduler
		}
	}
	return ""
}

// checkQueues authorizes id for every queue the object asks for; on UPDATE
// (old != nil) only for queues the old object did not already ask for. It
// returns the first queue checked, or a denial.
//
// Objects a controller makes are checked like any other, under the
// identity stamped on them: a Deployment's pods that carry no marker run
// in the default queue, whatever the Deployment's own labels say.
func checkQueues(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, nv, ov *objectView, id identity) (string, *decision) {
	c := st.cfg
	ns := req.Namespace
	var arr [4]target
	ts, err := c.targets(k, ns, nv, arr[:0])
	if err != nil {
		dc := deny(httpStatusBadRequest, "usher: %s %s: %v", k.kind, objectName(req, nv), err)
		return "", &dc
	}
	if ov != nil {
		var oldArr [4]target
		olds, err := c.targets(k, ns, ov, oldArr[:0])
		if err == nil {
			kept := ts[:0]
			for _, t := range ts {
				seen := false
				for _, o := range olds {
					if o.queue == t.queue {
						seen = true
						break
					}
				}
				if !seen {
					kept = append(kept, t)
				}
			}
			ts = kept
		}
		if len(ts) == 0 {
			return "", nil
		}
	}
	if st.authz == nil {
		dc := deny(httpStatusInternal, errNoAuthorizerMessage)
		return "", &dc
	}
	for i := range ts {
		t := &ts[i]
		ok, reason, err := st.authz.AuthorizeSubmit(ctx, SubmitRequest{Partition: c.partition, Queue: t.queue, User: id.user, Groups: id.groups})
		if err != nil {
			dc := deny(httpStatusInternal, "usher: cannot decide whether user %q may submit to %s: %v; denied (usher fails closed)",
				id.user, t.describe(c.partition), err)
			dc.queue = recordQueue(t.queue)
			return "", &dc
		}
		if !ok {
			if reason == "" {
				reason = "no ACL allows it"
			}
			dc := deny(httpStatusForbidden, "usher: user %q may not submit to %s: %s", id.user, t.describe(c.partition), reason)
			dc.queue = recordQueue(t.queue)
			return "", &dc
		}
	}
	return recordQueue(ts[0].queue), nil
}

func recordQueue(q string) string {
	if q == "" {
		return defaultQueueInRecord
	}
	return q
}

// SlogAudit returns an audit hook (for WithAudit) that logs every review
// to l: allowed reviews at Info, denials at Warn. Strings are cut to a
// bounded length and groups to a bounded count ("…[cut N bytes]",
// "…[cut N more]"), so a request cannot make a record arbitrarily large.
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
		// Every string the requester chose is cut to a bounded length
		// and the groups to a bounded count, with a visible mark.
		l.LogAttrs(ctx, level, "admission review",
			slog.String("webhook", r.Webhook),
			slog.String("uid", clip.String(r.UID, clip.Name)),
			slog.String("operation", clip.String(r.Operation, clip.Name)),
			slog.String("kind", clip.String(r.Kind, clip.Name)),
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
			slog.Bool("dryRun", r.DryRun),
		)
	}
}
