package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// chainYAML is a partition with a chain root.d1...dDepth, every queue
// with its own submit ACL (2 users, 2 groups) and admin ACL, and the
// review's user allowed by the group dev on root, so a decision passes
// every ACL of the chain; enforceQueueACLs on. With resolve set, alice's
// groups (resolve) come from the partition's cached resolver and the
// review's are ignored.
func chainYAML(depth int, resolve []string) string {
	var b strings.Builder
	b.WriteString("admissionController: {enforceQueueACLs: true}\npartitions:\n  - name: default\n")
	if resolve != nil {
		fmt.Fprintf(&b, "    groups: resolve\n    usergroupresolver: {type: test, users: {alice: [%s]}}\n", strings.Join(resolve, ","))
	}
	b.WriteString("    queues:\n")
	ind := "      "
	for d := 0; d <= depth; d++ {
		name, submit := fmt.Sprintf("d%d", d), fmt.Sprintf("u%d,v%d g%d,h%d", d, d, d, d)
		if d == 0 {
			name, submit = "root", "u0,v0 g0,dev"
		}
		fmt.Fprintf(&b, "%s- name: %s\n%s  submitacl: %q\n%s  adminacl: \"a%d\"\n", ind, name, ind, submit, ind, d)
		if d < depth {
			fmt.Fprintf(&b, "%s  queues:\n", ind)
		}
		ind += "    "
	}
	return b.String()
}

// BenchmarkServeMutateEnforced is usher serve's whole /mutate handler
// (metrics, body budget, decode, the server's authorizers over the
// engine, stamp, audit record through slog) on usher-load's pod review
// with enforceQueueACLs on, the pod's queue at depth 1 and 10: the CPU
// of a review that decides a queue, which a decision's own cost is
// weighed against (docs/benchmarks.md, "Decision cost at the floor").
// It reports the process's CPU time per review (cpu-ns/op), the
// collector's share included. mode=given takes the review's groups (the
// API server's 3, or 1,024 written into the review), mode=resolve 64 or
// 1,024 groups from the partition's cache.
//
//	go test -run '^$' -bench ServeMutateEnforced -benchmem -count 6 ./server/
func BenchmarkServeMutateEnforced(b *testing.B) {
	for _, c := range []struct {
		groups int
		mode   string
		depth  int
	}{{3, "given", 1}, {3, "given", 10}, {64, "resolve", 1}, {64, "resolve", 10}, {1024, "given", 1}, {1024, "resolve", 1}} {
		b.Run(fmt.Sprintf("groups=%d/mode=%s/depth=%d", c.groups, c.mode, c.depth), func(b *testing.B) {
			gs := make([]string, c.groups)
			for i := range gs {
				gs[i] = fmt.Sprintf("grp-%04d", i)
			}
			gs[len(gs)-1] = "dev"
			review := loadReview
			var resolve []string
			if c.mode == "resolve" {
				resolve = gs
			} else if c.groups != 3 {
				review = strings.Replace(review, `"groups":["dev","spark-users","system:authenticated"]`, `"groups":["`+strings.Join(gs, `","`)+`"]`, 1)
			}
			depth := c.depth
			path := filepath.Join(b.TempDir(), "usher.yaml")
			if err := os.WriteFile(path, []byte(chainYAML(depth, resolve)), 0o600); err != nil {
				b.Fatal(err)
			}
			queue := "root"
			for d := 1; d <= depth; d++ {
				queue += fmt.Sprintf(".d%d", d)
			}
			review = strings.Replace(review, `"queue":"root.dev"`, fmt.Sprintf("%q:%q", "queue", queue), 1)
			srv, err := server.New(server.Options{
				ConfigPath: path, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
				AccessAuth: []string{server.AccessAuthNone}, WebhookAuth: server.WebhookAuthNone,
				Getenv: func(string) (string, bool) { return "", false }, ReloadInterval: time.Hour,
			})
			if err != nil {
				b.Fatal(err)
			}
			h := srv.Handler()
			body := strings.NewReader(review)
			req := httptest.NewRequest(http.MethodPost, "/mutate", body)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if !strings.Contains(rec.Body.String(), `"allowed":true`) || !strings.Contains(rec.Body.String(), `"patch"`) {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
			w := &discardResponse{h: http.Header{}}
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				body.Reset(review)
				req.Body = io.NopCloser(body)
				req.ContentLength = int64(len(review))
				clear(w.h)
				w.code = 0
				h.ServeHTTP(w, req)
				if w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
			}
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user and system) the process has used, in
// nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
