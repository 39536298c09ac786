package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/internal/httperr"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/serving"
)

// maxAccessBody caps a /v1/access request.
const maxAccessBody = 64 << 10

// badRequest answers with the JSON error body (package httperr).
func badRequest(w http.ResponseWriter, code int, format string, args ...any) {
	httperr.Write(w, code, fmt.Sprintf(format, args...), "")
}

func (s *Server) serveAccess(w http.ResponseWriter, r *http.Request) {
	// An unauthenticated caller learns nothing but 401.
	caller, ok := s.authenticate(w, r, "access")
	if !ok {
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		badRequest(w, http.StatusMethodNotAllowed, "method %s: use POST with a JSON body", r.Method)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			badRequest(w, http.StatusUnsupportedMediaType, "content type %q: want application/json", ct)
			return
		}
	}
	if r.ContentLength > maxAccessBody {
		badRequest(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", maxAccessBody)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAccessBody+1))
	if err != nil {
		var st interface{ HTTPStatus() int }
		if errors.As(err, &st) {
			badRequest(w, st.HTTPStatus(), "%v", err)
			return
		}
		badRequest(w, http.StatusBadRequest, "reading the body: %v", err)
		return
	}
	if int64(len(body)) > maxAccessBody {
		badRequest(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", maxAccessBody)
		return
	}
	var req decision.AccessRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		badRequest(w, http.StatusBadRequest, "invalid JSON: %s", jsonError(err))
		return
	}
	if dec.More() {
		badRequest(w, http.StatusBadRequest, "invalid JSON: more than one value in the body")
		return
	}
	if req.User == "" {
		badRequest(w, http.StatusBadRequest, "user is required")
		return
	}
	if len(req.Groups) > s.opts.MaxGroups {
		s.metrics.groupsOver.WithLabelValues("access").Inc()
		badRequest(w, http.StatusBadRequest, "groups: %d groups, more than the limit of %d (usher serve --max-groups)", len(req.Groups), s.opts.MaxGroups)
		return
	}
	// Before any group lookup, so a caller without permission makes usher
	// search no directory.
	if !s.authorizeAccess(w, r, caller, &req) {
		return
	}
	if req.Queues {
		s.serveQueues(w, r, &req, caller)
		return
	}
	if req.Application != nil {
		s.serveApplication(w, r, &req, caller)
		return
	}
	if req.TargetQueue != "" {
		badRequest(w, http.StatusBadRequest, "targetQueue is only for an application move")
		return
	}
	action, err := policy.ParseAction(req.Action)
	if err != nil {
		badRequest(w, http.StatusBadRequest, "action: %v", err)
		return
	}
	if req.Place {
		s.servePlace(w, r, &req, caller, action)
		return
	}
	if req.Tags != nil {
		badRequest(w, http.StatusBadRequest, "tags are placement inputs: set \"place\": true")
		return
	}
	start := time.Now()
	g := s.serving.Current()
	ereq := engine.Request{Partition: req.Partition, Queue: req.Queue, User: req.User, Groups: req.Groups, Action: action}
	var (
		res   engine.Result
		steps []policy.Step
	)
	if req.Explain {
		res, steps, err = g.Explain(r.Context(), ereq)
	} else {
		res, err = g.Check(r.Context(), ereq)
	}
	if err != nil {
		s.decisionError(w, r, g, caller, &req, action.String(), err)
		return
	}
	s.countDecision(action.String(), res.Allowed, start)
	s.audit("access", "user", res.User, "groups", res.Identity.Groups, "partition", res.Partition, "queue", res.Queue,
		"action", action.String(), "allowed", res.Allowed, "reason", res.Reason(), "caller", caller.Name, "requestID", requestID(r),
		"lookup", res.Identity.Lookup.String())
	command := "check"
	if req.Explain {
		command = "explain"
	}
	s.answer(w, answer.Decided(command, res, steps, req.Explain))
}

// serveQueues answers "queues": true: every queue of the partition with
// what the user may do there, and the user's groups.
func (s *Server) serveQueues(w http.ResponseWriter, r *http.Request, req *decision.AccessRequest, caller auth.User) {
	switch {
	case req.Queue != "", req.Action != "", req.Place, req.Tags != nil, req.Application != nil, req.TargetQueue != "", req.Explain:
		badRequest(w, http.StatusBadRequest, "queues lists every queue of the partition: give only partition, user and groups")
		return
	}
	start := time.Now()
	g := s.serving.Current()
	res, err := g.Access(r.Context(), req.Partition, req.User, req.Groups)
	if err != nil {
		s.decisionError(w, r, g, caller, req, "queues", err)
		return
	}
	s.metrics.decisionLatency.Observe(time.Since(start).Seconds())
	s.audit("access", "user", res.Identity.User, "groups", res.Identity.Groups, "partition", res.Partition, "action", "queues", "allowed", true,
		"caller", caller.Name, "requestID", requestID(r))
	s.answer(w, answer.Queues(res))
}

// countDecision counts a decision by action and outcome, and its latency.
func (s *Server) countDecision(action string, allowed bool, start time.Time) {
	outcome := "denied"
	if allowed {
		outcome = "allowed"
	}
	s.metrics.decisions.WithLabelValues(action, outcome).Inc()
	s.metrics.decisionLatency.Observe(time.Since(start).Seconds())
}

// decisionError answers a decision that could not be made: 400 for the
// caller's mistakes, 503 for a group lookup, whose error names directory
// internals and so goes to the log only.
func (s *Server) decisionError(w http.ResponseWriter, r *http.Request, g *serving.State, caller auth.User, req *decision.AccessRequest, action string, err error) {
	s.metrics.decisions.WithLabelValues(action, "error").Inc()
	s.audit("access", "user", req.User, "queue", req.Queue, "action", action, "allowed", false, "error", err.Error(), "caller", caller.Name, "requestID", requestID(r))
	var gerr *engine.GroupsError
	if errors.As(err, &gerr) {
		s.log.Error("group lookup failed", "requestID", requestID(r), "user", req.User, "partition", req.Partition, "err", err)
		s.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("group lookup failed for user %q; usher's log has the details under request id %s", req.User, requestID(r)))
		return
	}
	// The queue tree is no secret from an authenticated caller.
	msg := err.Error()
	if hint := g.Config().Suggest(req.Partition, req.Queue, err); hint != "" {
		msg += ". " + hint
	}
	s.refuse(w, r, http.StatusBadRequest, msg)
}

func (s *Server) serveApplication(w http.ResponseWriter, r *http.Request, req *decision.AccessRequest, caller auth.User) {
	action, err := application.ParseAction(req.Action)
	if err != nil {
		badRequest(w, http.StatusBadRequest, "action: %v", err)
		return
	}
	if req.Queue != "" {
		badRequest(w, http.StatusBadRequest, "queue: give the application's queue as application.queue")
		return
	}
	a := req.Application
	app := application.Application{ID: a.ID, Owner: a.Owner, Queue: a.Queue}
	for _, f := range []struct {
		name string
		text *string
		dst  **acl.ACL
	}{{"viewACL", a.ViewACL, &app.ViewACL}, {"modifyACL", a.ModifyACL, &app.ModifyACL}} {
		if f.text == nil {
			continue
		}
		parsed, _, err := acl.Parse(*f.text, acl.YARN)
		if err != nil {
			badRequest(w, http.StatusBadRequest, "application.%s: %v", f.name, err)
			return
		}
		*f.dst = &parsed
	}
	start := time.Now()
	g := s.serving.Current()
	d, in, err := g.DecideApplication(r.Context(), engine.AppRequest{
		Partition: req.Partition, User: req.User, Groups: req.Groups, App: app, Action: action, Target: req.TargetQueue})
	if err != nil {
		s.decisionError(w, r, g, caller, req, action.String(), err)
		return
	}
	s.countDecision(action.String(), d.Allowed, start)
	s.audit("access", "user", in.User, "groups", in.Groups, "partition", d.Partition, "application", d.Application,
		"owner", d.Owner, "queue", d.Queue, "action", action.String(), "allowed", d.Allowed, "reason", d.Reason(), "caller", caller.Name, "requestID", requestID(r),
		"lookup", in.Lookup.String())
	s.answer(w, answer.AppDecided(d, in, req.Explain))
}

// servePlace answers where the partition's rules put the application.
func (s *Server) servePlace(w http.ResponseWriter, r *http.Request, req *decision.AccessRequest, caller auth.User, action policy.Action) {
	if action != policy.Submit {
		badRequest(w, http.StatusBadRequest, "action: placement decides a submission; %s is asked of a queue (leave out \"place\")", action)
		return
	}
	for k := range req.Tags {
		if strings.TrimSpace(k) == "" {
			badRequest(w, http.StatusBadRequest, "tags: an empty tag name")
			return
		}
	}
	start := time.Now()
	g := s.serving.Current()
	res, err := g.Place(r.Context(), engine.PlaceRequest{Partition: req.Partition, Queue: req.Queue, Tags: req.Tags,
		User: req.User, Groups: req.Groups, Explain: req.Explain})
	if err != nil {
		s.decisionError(w, r, g, caller, req, action.String(), err)
		return
	}
	s.countDecision(action.String(), res.Placed, start)
	reason := res.Why()
	s.audit("access", "user", res.Identity.User, "groups", res.Identity.Groups, "partition", res.Partition, "queue", res.Queue,
		"provided", req.Queue, "queueAsked", res.Asked, "rule", res.RuleName(), "action", action.String(), "allowed", res.Placed, "reason", reason,
		"caller", caller.Name, "requestID", requestID(r), "lookup", res.Identity.Lookup.String())
	command := "check"
	if req.Explain {
		command = "explain"
	}
	s.answer(w, answer.Placed(command, &res, req.Explain))
}

// answer writes out, without the resolver's "no such user" detail, which
// names base DNs and filters.
func (s *Server) answer(w http.ResponseWriter, out *decision.Output) {
	if l := out.Identity.Lookup; l != nil && l.Outcome == string(identity.OutcomeUnknownGiven) {
		l.Detail = ""
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(out)
}

func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q: want %v, got a JSON %s", te.Field, te.Type, te.Value)
	case errors.Is(err, io.EOF):
		return "empty body"
	}
	return err.Error()
}

// audit writes one audit record, unless audit is off, its strings and
// lists clipped: most echo what the caller sent.
func (s *Server) audit(kind string, attrs ...any) {
	if s.opts.NoAudit {
		return
	}
	for i := 1; i < len(attrs); i += 2 {
		switch v := attrs[i].(type) {
		case string:
			max := clip.Name
			if k, _ := attrs[i-1].(string); k == "reason" || k == "error" {
				max = clip.Text
			}
			attrs[i] = clip.String(v, max)
		case []string:
			attrs[i] = clip.Strings(v, clip.Name, clip.Count)
		}
	}
	s.log.Info("audit", append([]any{"kind", kind}, attrs...)...)
}

// auditReview is the admission handler's audit hook; it records the denial
// Event first.
func (s *Server) auditReview(rec admission.Record) {
	s.events.record(rec)
	s.metrics.reviews.WithLabelValues(admission.MetricKind(rec.Kind), admission.MetricOperation(rec.Operation), outcomeOf(rec)).Inc()
	if rec.Degraded {
		s.metrics.degradedStamps.Inc()
	}
	if rec.UnstampedParent != "" {
		s.metrics.unstamped.Inc()
	}
	if d := rec.Denial; d != nil {
		s.metrics.denials.WithLabelValues(string(d.Reason), fmt.Sprint(d.Warned)).Inc()
	}
	if !s.opts.NoAudit {
		attrs := rec.AppendAttrs(append(make([]slog.Attr, 0, admission.NumAuditAttrs+1), slog.String("kind", "admission")))
		s.log.LogAttrs(context.Background(), slog.LevelInfo, AuditMessage, attrs...)
	}
}

func outcomeOf(rec admission.Record) string {
	switch {
	case !rec.Allowed:
		return "denied"
	case rec.Patched:
		return "patched"
	default:
		return "allowed"
	}
}
