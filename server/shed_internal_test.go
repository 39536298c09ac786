package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// The budget sets a read deadline for a body and lifts it at the body's
// end, and gives back what it charged.
func TestLimitBodyDeadlineAndCharge(t *testing.T) {
	s, err := New(Options{NoAudit: true, WebhookAuth: WebhookAuthNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("../admission/testdata/pod-create.json")
	if err != nil {
		t.Fatal(err)
	}
	limited := s.limitBody("mutate", s.opts.MaxReviewBody, s.admission.MutateHTTP())
	w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	rd := strings.NewReader(string(body))
	req := httptest.NewRequest("POST", "/mutate", rd)
	req.Header.Set("Content-Type", "application/json")
	run := func(h http.Handler) func() {
		return func() {
			rd.Reset(string(body))
			req.Body = io.NopCloser(rd)
			w.Body.Reset()
			h.ServeHTTP(&statusWriter{ResponseWriter: w}, req)
			if w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	}
	for range 3 {
		run(limited)()
	}
	if w.sets != 2*3 || !w.deadline.IsZero() {
		t.Errorf("read deadline set %d times in 3 budgeted reviews, last %v; want set for the body and lifted after it", w.sets, w.deadline)
	}
	if s.bodies.shared.used.Load() != 0 || s.bodies.small.used.Load() != 0 {
		t.Errorf("budget not given back: shared %d, small %d", s.bodies.shared.used.Load(), s.bodies.small.used.Load())
	}
}

// The budget leaves the request its own body: a caller that serves the
// same request again (an embedder) must not read through the metered
// body into itself, which recursed until the stack overflowed.
func TestLimitBodyLeavesTheBody(t *testing.T) {
	s, err := New(Options{NoAudit: true, WebhookAuth: WebhookAuthNone, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := s.limitBody("access", 1<<10, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { io.ReadAll(r.Body) }))
	body := io.NopCloser(strings.NewReader("{}"))
	req := httptest.NewRequest("POST", "/v1/access", nil)
	req.Body, req.ContentLength = body, 2
	h.ServeHTTP(httptest.NewRecorder(), req)
	if req.Body != body {
		t.Fatalf("the request's body is %T after it was served, not the caller's", req.Body)
	}
}

type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadline time.Time
	sets     int
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.deadline = t
	d.sets++
	return nil
}
