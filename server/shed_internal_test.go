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

// The budget costs a review with a declared length no allocation.
func TestLimitBodyAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not stable under the race detector (sync.Pool drops items); make test runs this test without -race too")
	}
	s, err := New(Options{NoAudit: true, WebhookAuth: WebhookAuthNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("../admission/testdata/pod-create.json")
	if err != nil {
		t.Fatal(err)
	}
	inner := s.admission.MutateHTTP()
	limited := s.limitBody("mutate", s.opts.MaxReviewBody, inner)
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
	without := testing.AllocsPerRun(200, run(inner))
	with := testing.AllocsPerRun(200, run(limited))
	if with > without {
		t.Errorf("the body budget adds %v allocations to a review (%v without, %v with)", with-without, without, with)
	}
	// AllocsPerRun runs the function once more than asked, to warm up.
	if w.sets != 2*201 || !w.deadline.IsZero() {
		t.Errorf("read deadline set %d times in 201 budgeted reviews, last %v; want set for the body and lifted after it", w.sets, w.deadline)
	}
	if s.bodies.shared.used.Load() != 0 || s.bodies.small.used.Load() != 0 {
		t.Errorf("budget not given back: shared %d, small %d", s.bodies.shared.used.Load(), s.bodies.small.used.Load())
	}
}

// The budget leaves the request its own body: a caller that serves the
// same request again (an embedder) must not read through a body back in
// the pool into itself, which recursed until the stack overflowed.
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
