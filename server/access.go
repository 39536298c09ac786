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

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
)

// AccessRequest is the body of POST /v1/access.
type AccessRequest struct {
	Partition string   `json:"partition"`
	Queue     string   `json:"queue"`
	User      string   `json:"user"`
	Groups    []string `json:"groups"`
	Action    string   `json:"action"`
}

// AccessResponse is the answer of POST /v1/access.
type AccessResponse struct {
	Allowed   bool          `json:"allowed"`
	Reason    string        `json:"reason"`
	Partition string        `json:"partition"`
	Queue     string        `json:"queue"`
	Action    string        `json:"action"`
	User      string        `json:"user"`
	Groups    []AccessGroup `json:"groups"`
	// DecidedBy is the ACL entry that allowed, absent when denied.
	DecidedBy *DecidedBy `json:"decidedBy,omitempty"`
}

// AccessGroup is a group used for a decision and where it came from.
type AccessGroup struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// DecidedBy names the ACL entry that allowed a decision.
type DecidedBy struct {
	Queue string `json:"queue,omitempty"`
	ACL   string `json:"acl"`
	Kind  string `json:"kind"`
	Entry string `json:"entry"`
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func badRequest(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, apiError{Error: fmt.Sprintf(format, args...)})
}

func (s *Server) serveAccess(w http.ResponseWriter, r *http.Request) {
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
	body, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxAccessBody+1))
	if err != nil {
		badRequest(w, http.StatusBadRequest, "reading the body: %v", err)
		return
	}
	if int64(len(body)) > s.opts.MaxAccessBody {
		badRequest(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", s.opts.MaxAccessBody)
		return
	}
	var req AccessRequest
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
	action, err := policy.ParseAction(req.Action)
	if err != nil {
		badRequest(w, http.StatusBadRequest, "action: %v", err)
		return
	}
	start := time.Now()
	res, err := s.engine.Check(r.Context(), engine.Request{Partition: req.Partition, Queue: req.Queue, User: req.User, Groups: req.Groups, Action: action})
	if err != nil {
		var code = http.StatusBadRequest
		if !errors.Is(err, policy.ErrUnknownPartition) && !errors.Is(err, policy.ErrUnknownQueue) && !strings.HasPrefix(err.Error(), "user:") {
			// The groups could not be established: not the caller's fault.
			code = http.StatusServiceUnavailable
		}
		s.metrics.decisions.WithLabelValues(action.String(), "error").Inc()
		s.audit("access", "user", req.User, "queue", req.Queue, "action", action.String(), "allowed", false, "error", err.Error())
		badRequest(w, code, "%v", err)
		return
	}
	outcome := "denied"
	if res.Allowed {
		outcome = "allowed"
	}
	s.metrics.decisions.WithLabelValues(action.String(), outcome).Inc()
	s.metrics.decisionLatency.Observe(time.Since(start).Seconds())
	s.audit("access", "user", res.User, "groups", res.Identity.Groups, "partition", res.Partition, "queue", res.Queue,
		"action", action.String(), "allowed", res.Allowed, "reason", res.Reason())
	writeJSON(w, http.StatusOK, toResponse(res))
}

func toResponse(res engine.Result) AccessResponse {
	out := AccessResponse{
		Allowed: res.Allowed, Reason: res.Reason(), Partition: res.Partition, Queue: res.Queue,
		Action: res.Action.String(), User: res.User, Groups: []AccessGroup{},
	}
	for i, g := range res.Identity.Groups {
		out.Groups = append(out.Groups, AccessGroup{Name: g, Source: string(res.Identity.SourceOf(i))})
	}
	if res.Allowed {
		out.DecidedBy = &DecidedBy{Queue: res.By.Queue, ACL: string(res.By.ACL), Kind: res.By.Match.Kind.String(), Entry: res.By.Match.Name}
	}
	return out
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

// audit writes one audit record, unless audit is off.
func (s *Server) audit(kind string, attrs ...any) {
	if s.opts.NoAudit {
		return
	}
	s.log.Info("audit", append([]any{"kind", kind}, attrs...)...)
}

// auditReview is the admission handler's audit hook.
func (s *Server) auditReview(rec admission.Record) {
	s.metrics.reviews.WithLabelValues(rec.Kind, rec.Operation, outcomeOf(rec)).Inc()
	if s.opts.NoAudit {
		return
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "audit",
		slog.String("kind", "admission"), slog.String("webhook", rec.Webhook), slog.String("uid", rec.UID),
		slog.String("operation", rec.Operation), slog.String("object", rec.Kind),
		slog.String("namespace", rec.Namespace), slog.String("name", rec.Name),
		slog.String("user", rec.User), slog.Any("groups", rec.Groups), slog.String("identity", rec.Identity),
		slog.String("queue", rec.Queue), slog.Bool("allowed", rec.Allowed), slog.Bool("patched", rec.Patched),
		slog.Int("code", int(rec.Code)), slog.String("reason", rec.Reason), slog.Bool("dryRun", rec.DryRun))
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

// authorizer implements admission.QueueAuthorizer over the engine.
type authorizer struct{ e *engine.Engine }

func (a authorizer) AuthorizeSubmit(ctx context.Context, partition, queue, user string, groups []string) (bool, string, error) {
	res, err := a.e.Check(ctx, engine.Request{Partition: partition, Queue: queue, User: user, Groups: groups, Action: policy.Submit})
	if err != nil {
		return false, "", err
	}
	return res.Allowed, res.Reason(), nil
}

var _ admission.QueueAuthorizer = authorizer{}
