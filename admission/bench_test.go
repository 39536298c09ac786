package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// The admission benchmarks. The budget (docs/benchmarks.md) is a pod CREATE review,
// audit record on, in at most 15 µs and 60 allocations.
//
//	go test -run '^$' -bench . -benchmem ./admission/

// benchWriter is a minimal http.ResponseWriter so that the benchmarks
// measure the handler, not httptest.
type benchWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// serveBench runs body through hh b.N times.
func serveBench(b *testing.B, hh http.Handler, body []byte) {
	b.Helper()
	r, _ := http.NewRequest(http.MethodPost, "/mutate", nil)
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = int64(len(body))
	rb := &benchBody{}
	r.Body = rb
	w := &benchWriter{h: http.Header{}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		rb.Reset(body)
		w.code = 0
		hh.ServeHTTP(w, r)
		if w.code != http.StatusOK {
			b.Fatalf("HTTP %d", w.code)
		}
	}
	reportCPU(b, cpu)
}

// cpuTime is the CPU time (user + system) the process has used. The
// benchmarks report it per operation as cpu-ns/op next to ns/op: on a
// machine shared with other work, wall time per operation includes the
// time the benchmark waited for a CPU, CPU time does not (it still
// includes the GC's share).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 && start > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

// podReviewBody is testdata/pod-create.json compacted as the API server
// sends it: a 3.7 KB Spark driver pod with managed fields, a projected
// service-account volume and default tolerations.
func podReviewBody(b *testing.B) []byte {
	raw, err := os.ReadFile("testdata/pod-create.json")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// auditHooks are the audit settings benchmarked: a hook that keeps the
// record (the handler's own cost) and slog's JSON handler writing to
// io.Discard (what usher serve does).
func auditHooks() map[string]func(Record) {
	var sink Record
	return map[string]func(Record){
		"audit=record": func(r Record) { sink = r; _ = sink },
		"audit=slog":   SlogAudit(slog.New(slog.NewJSONHandler(io.Discard, nil))),
	}
}

// BenchmarkMutatePodHTTP is the budgeted case: a realistic pod CREATE
// through the HTTP handler, with the audit hook on.
func BenchmarkMutatePodHTTP(b *testing.B) {
	body := podReviewBody(b)
	for _, name := range []string{"audit=record", "audit=slog"} {
		b.Run(name, func(b *testing.B) {
			h := newTestHandler(nil, WithAudit(auditHooks()[name]))
			serveBench(b, h.MutateHTTP(), body)
		})
	}
	b.Run("audit=slog/enforceQueueACLs", func(b *testing.B) {
		authz := QueueAuthorizerFunc(func(context.Context, SubmitRequest) (SubmitDecision, error) {
			return SubmitDecision{Allowed: true}, nil
		})
		h := newTestHandler(settings.MustCompile(settings.Config{EnforceQueueACLs: true}), WithAuthorizer(authz), WithAudit(auditHooks()["audit=slog"]))
		serveBench(b, h.MutateHTTP(), body)
	})
}

// BenchmarkMutate runs a CREATE of every kind through the HTTP handler
// (audit on, record hook), for a submitter without annotation (stamped)
// and for a controller copying a trusted annotation (kept).
func BenchmarkMutate(b *testing.B) {
	for _, kc := range kindCases {
		b.Run(kc.kind, func(b *testing.B) {
			h := newTestHandler(nil, WithAudit(auditHooks()["audit=record"]))
			req := request(b, kc, admissionv1.Create, "team-a", alice, kc.build(m("app", "web", "queue", "root.a"), m("x", "y"), nil), nil)
			serveBench(b, h.MutateHTTP(), reviewBody(b, req))
		})
	}
	b.Run("Pod/controller", func(b *testing.B) {
		kc := kindCaseOf(b, "Pod")
		h := newTestHandler(nil, WithAudit(auditHooks()["audit=record"]))
		req := request(b, kc, admissionv1.Create, "team-a", rsCtrl, kc.build(m("app", "web"), m(UserInfoAnnotation, aliceInfo), nil), nil)
		serveBench(b, h.MutateHTTP(), reviewBody(b, req))
	})
}

// BenchmarkValidateUpdate: a Deployment UPDATE (scale by a controller)
// through /validate.
func BenchmarkValidateUpdate(b *testing.B) {
	kc := kindCaseOf(b, "Deployment")
	h := newTestHandler(nil, WithAudit(auditHooks()["audit=record"]))
	old := kc.build(m("app", "web"), m(UserInfoAnnotation, aliceInfo), nil)
	req := request(b, kc, admissionv1.Update, "team-a", depCtrl, old, old)
	serveBench(b, h.ValidateHTTP(), reviewBody(b, req))
}

// BenchmarkValidateDelete: pod DELETE reviews recorded from a real API
// server through /validate with enforceDeleteACLs on (audit on, record
// hook): the garbage collector (trusted, no decision) and a user the kill
// rule decides (an authorizer that answers at once, so this is the
// handler's own cost).
func BenchmarkValidateDelete(b *testing.B) {
	authz := DeleteAuthorizerFunc(func(context.Context, DeleteRequest) (bool, string, error) {
		return false, "denied", nil
	})
	h := newTestHandler(settings.MustCompile(settings.Config{EnforceDeleteACLs: true}), WithDeleteAuthorizer(authz), WithAudit(auditHooks()["audit=record"]))
	for _, tc := range []struct{ name, file string }{
		{"garbage-collector", "pod-delete-garbage-collector.json"},
		{"kill-rule", "pod-delete-stranger.json"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw, err := os.ReadFile("testdata/" + tc.file)
			if err != nil {
				b.Fatal(err)
			}
			serveBench(b, h.ValidateHTTP(), raw)
		})
	}
}

// BenchmarkMutateAPI is the Go API (Handler.Mutate) on an already decoded
// request, for the realistic pod.
func BenchmarkMutateAPI(b *testing.B) {
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(podReviewBody(b), &rv); err != nil {
		b.Fatal(err)
	}
	h := newTestHandler(nil, WithAudit(auditHooks()["audit=record"]))
	ctx := context.Background()
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if resp := h.Mutate(ctx, rv.Request); !resp.Allowed {
			b.Fatal(resp.Result.Message)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkStdlibDecode is the baseline that motivated the scanner:
// decoding the same pod review with encoding/json into the k8s types plus a
// minimal metadata-only view of the pod, without any admission logic.
func BenchmarkStdlibDecode(b *testing.B) {
	body := podReviewBody(b)
	type meta struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	type pod struct {
		APIVersion string    `json:"apiVersion"`
		Kind       string    `json:"kind"`
		Metadata   *meta     `json:"metadata"`
		Spec       *struct{} `json:"spec"`
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for b.Loop() {
		var rv admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &rv); err != nil {
			b.Fatal(err)
		}
		var p pod
		if err := json.Unmarshal(rv.Request.Object.Raw, &p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScannerDecode is the scanner's share of BenchmarkMutatePodHTTP: the review.
func BenchmarkScannerDecode(b *testing.B) {
	body := podReviewBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	rv := unlimited()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for b.Loop() {
		rv = unlimited()
		if err := decodeReview(string(body), &rv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONValid calibrates the machine: encoding/json's validity scan
// of the pod review, the least any encoding/json decode must do.
func BenchmarkJSONValid(b *testing.B) {
	body := podReviewBody(b)
	b.SetBytes(int64(len(body)))
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for b.Loop() {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkSlogAudit is SlogAudit alone (slog's JSON handler to
// io.Discard), the share of audit=slog above audit=record.
func BenchmarkSlogAudit(b *testing.B) {
	f := SlogAudit(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	r := Record{Webhook: "mutate", UID: "3f8c8df5-0272-4c85-874f-0aa1ece74fbc", Operation: "CREATE", Kind: "Pod",
		Namespace: "team-a", Name: "spark-pi-driver", User: "alice@EXAMPLE.COM",
		Groups:   []string{"dev.team", "spark-users", "system:authenticated"},
		Identity: "alice@EXAMPLE.COM", Allowed: true, Patched: true, Code: 200, Reason: string(RuleStamped), Rule: RuleStamped}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		f(r)
	}
	reportCPU(b, cpu)
}
