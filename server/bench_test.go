package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// loadReview is the pod CREATE usher-load sends (cmd/usher-load).
const loadReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
"uid":"2d0c3f4e-3a8c-4f0e-9c6d-7b1f2a9e5d10","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
"namespace":"team-a","operation":"CREATE",
"userInfo":{"username":"alice","uid":"1a2b","groups":["dev","spark-users","system:authenticated"]},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"spark-exec-","namespace":"team-a",
"labels":{"app":"spark","queue":"root.dev","spark-role":"executor"},"annotations":{"prometheus.io/scrape":"true"}},
"spec":{"serviceAccountName":"spark","containers":[{"name":"executor","image":"spark:3.5","args":["executor"],
"resources":{"requests":{"cpu":"1","memory":"2Gi"}}}]}},"oldObject":null,"dryRun":false}}`

// BenchmarkServeMutate is usher serve's /mutate handler (metrics, body
// budget, review, audit record) on usher-load's review, in process and
// without TLS: what usher adds per review to the bare server of "Close to
// the wire" (docs/benchmarks.md). Audit records are written on the
// request path (no queue), so that their whole cost is counted:
// audit=json through SplitAudit to a JSON handler of its own (--audit-log),
// audit=slog through the Logger's slog JSON handler; both are slog's JSON handler.
func BenchmarkServeMutate(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts server.Options
	}{
		{"audit=none", server.Options{NoAudit: true}},
		{"audit=json", server.Options{Logger: slog.New(server.SplitAudit(slog.NewJSONHandler(io.Discard, nil),
			slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})))}},
		{"audit=slog", server.Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := tc.opts
			if opts.Logger == nil {
				opts.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
			}
			opts.AccessAuth = []string{server.AccessAuthNone}
			opts.WebhookAuth = server.WebhookAuthNone
			opts.Getenv = func(string) (string, bool) { return "", false }
			opts.ReloadInterval = time.Hour
			srv, err := server.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			body := strings.NewReader(loadReview)
			w := &discardResponse{h: http.Header{}}
			req := httptest.NewRequest(http.MethodPost, "/mutate", body)
			req.Header.Set("Content-Type", "application/json")
			b.ReportAllocs()
			for b.Loop() {
				body.Reset(loadReview)
				req.Body = io.NopCloser(body)
				req.ContentLength = int64(len(loadReview))
				clear(w.h)
				w.code = 0
				h.ServeHTTP(w, req)
				if w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}

type discardResponse struct {
	h    http.Header
	code int
}

func (w *discardResponse) Header() http.Header { return w.h }
func (w *discardResponse) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardResponse) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(p), nil
}
