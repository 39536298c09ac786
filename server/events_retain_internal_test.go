package server

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/usherhq/usher/admission"
)

// TestDenialEventsDoNotRetainRequests: a denial's namespace, kind and
// name are substrings of the AdmissionReview's body (read without
// copying, up to 7 MiB). The per-namespace rate limits (4096 namespaces,
// which a forged review names at will) and the Events waiting in the
// broadcaster's queue must not keep those bodies alive.
func TestDenialEventsDoNotRetainRequests(t *testing.T) {
	const namespaces = 40
	const body = 1 << 20
	c := fake.NewClientset()
	var written atomic.Int64
	// The API server keeps the Events, not usher: the fake's tracker would.
	c.PrependReactor("create", "events", func(k8stesting.Action) (bool, apiruntime.Object, error) {
		n := written.Add(1)
		return true, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", n), ResourceVersion: "1"}}, nil
	})
	e := newDenialEvents(c.CoreV1(), "usher-0", slog.New(slog.DiscardHandler))
	defer e.shutdown()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range namespaces {
		ns, name := fmt.Sprintf("team-%d", i), fmt.Sprintf("job-%d", i)
		s := string([]byte(strings.Repeat("x", body) + ns + name + "Job"))
		r := denialRecord(s[body:body+len(ns)], s[body+len(ns):body+len(ns)+len(name)])
		r.Denial.Kind, r.Caller = s[len(s)-3:], admission.CallerVerified
		e.record(r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for written.Load() < namespaces && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := written.Load(); n != namespaces {
		t.Fatalf("%d Events written, want %d", n, namespaces)
	}
	after := heap()
	runtime.KeepAlive(e)
	if grown := int64(after) - int64(before); grown > namespaces*body/4 {
		t.Fatalf("the heap grew by %d bytes after %d denials from requests of %d bytes: the denial Events keep the requests alive", grown, namespaces, body)
	}
}
