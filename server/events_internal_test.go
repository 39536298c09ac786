package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/admission/settings"
)

func denialRecord(ns, name string) admission.Record {
	d := &admission.Denial{Reason: admission.CauseQueueSubmitDenied, Message: `usher: user "alice" may not submit to queue "root.ops" (label queue="root.ops" on the pod template of Job ` + ns + "/" + name + ")",
		Code: 403, Operation: "CREATE", Group: "batch", Kind: "Job", Namespace: ns, Name: name, User: "alice",
		Queue: "root.ops", Check: admission.CheckSubmit, Field: "spec.template.metadata.labels[queue]"}
	return admission.Record{Operation: "CREATE", Kind: "Job", Namespace: ns, Name: name, User: "alice", Queue: "root.ops", Code: 403, Denial: d}
}

func listEvents(t *testing.T, c *fake.Clientset, ns string) []corev1.Event {
	t.Helper()
	l, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// waitEvents waits until the namespace holds n Events, and a little more
// to see that no more arrive.
func waitEvents(t *testing.T, c *fake.Clientset, ns string, n int) []corev1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(listEvents(t, c, ns)) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return listEvents(t, c, ns)
}

// TestDenialEvent: a denial becomes one Warning Event on the object's
// namespace: involvedObject the object, reason the Cause, message the
// message, usher as the reporting controller, and the denial in its
// stable shape as an annotation. An object created with generateName
// (named generateName + "*") gets one too. Dry runs, undecodable requests and allowed
// reviews record none.
func TestDenialEvent(t *testing.T) {
	c := fake.NewClientset()
	e := newDenialEvents(c.CoreV1(), "usher-0", slog.New(slog.DiscardHandler))
	defer e.shutdown()

	dry := denialRecord("team-a", "dry")
	dry.Denial.DryRun, dry.DryRun = true, true
	e.record(dry)
	e.record(admission.Record{Namespace: "team-a", Kind: "Job", Name: "ok", Allowed: true})
	e.record(admission.Record{Code: 400, Denial: &admission.Denial{Reason: admission.CauseInvalidRequest, Message: "bad body"}})
	e.record(denialRecord("team-a", "spark-1"))
	gen := denialRecord("team-b", "spark-*")
	e.record(gen)

	evs := waitEvents(t, c, "team-a", 1)
	if len(evs) != 1 {
		t.Fatalf("team-a: %d Events, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	io := ev.InvolvedObject
	if io.Kind != "Job" || io.APIVersion != "batch/v1" || io.Namespace != "team-a" || io.Name != "spark-1" ||
		ev.Reason != "QueueSubmitDenied" || ev.Type != corev1.EventTypeWarning || ev.Message != denialRecord("team-a", "spark-1").Denial.Message ||
		ev.ReportingController != reportingController || ev.ReportingInstance != "usher-0" || !strings.HasPrefix(ev.Name, "spark-1.") {
		t.Fatalf("Event %+v", ev)
	}
	var shape admission.Denial
	if err := json.Unmarshal([]byte(ev.Annotations[DenialEventAnnotation]), &shape); err != nil || shape != *denialRecord("team-a", "spark-1").Denial {
		t.Fatalf("annotation %q: %+v %v", ev.Annotations[DenialEventAnnotation], shape, err)
	}
	evs = waitEvents(t, c, "team-b", 1)
	if len(evs) != 1 || evs[0].InvolvedObject.Name != "spark-*" || evs[0].Reason != "QueueSubmitDenied" {
		t.Fatalf("team-b: %+v", evs)
	}
}

// TestDenialEventsBounded: a burst of denials neither blocks the reviews
// nor starts goroutines, and does not make an Event per denial: 5000
// denials of one object (one Event, its count patched) and 5000 of
// distinct objects in one namespace end as the namespace's burst of 25
// Events; another namespace still gets its own.
func TestDenialEventsBounded(t *testing.T) {
	c := fake.NewClientset()
	e := newDenialEvents(c.CoreV1(), "usher-0", slog.New(slog.DiscardHandler))
	defer e.shutdown()
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	start := time.Now()
	for i := range 5000 {
		e.record(denialRecord("burst", "same"))
		e.record(denialRecord("burst", fmt.Sprintf("job-%d", i)))
	}
	took := time.Since(start)
	if g := runtime.NumGoroutine(); g > before+2 {
		t.Fatalf("%d goroutines after the burst, %d before", g, before)
	}
	if took > 5*time.Second {
		t.Fatalf("10000 denials took %v to hand over: the review path blocks", took)
	}
	e.record(denialRecord("quiet", "job-1"))
	evs := waitStable(t, c, "burst")
	if len(evs) == 0 || len(evs) > eventBurst {
		t.Fatalf("%d Events for 10000 denials, want at most %d", len(evs), eventBurst)
	}
	if q := waitStable(t, c, "quiet"); len(q) != 1 {
		t.Fatalf("the burst in one namespace took the Event of another: %d Events", len(q))
	}
	t.Logf("10000 denials handed over in %v, %d Events", took, len(evs))
}

// waitStable waits until the namespace's Events stop changing.
func waitStable(t *testing.T, c *fake.Clientset, ns string) []corev1.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	last, since := -1, time.Now()
	for time.Now().Before(deadline) {
		n := len(listEvents(t, c, ns))
		if n != last {
			last, since = n, time.Now()
		} else if n > 0 && time.Since(since) > 500*time.Millisecond {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return listEvents(t, c, ns)
}

// recordingEvents is newDenialEvents whose Events go to a FakeRecorder.
func recordingEvents(t *testing.T) (*denialEvents, *record.FakeRecorder) {
	e := newDenialEvents(fake.NewClientset().CoreV1(), "usher-0", slog.New(slog.DiscardHandler))
	t.Cleanup(e.shutdown)
	rec := record.NewFakeRecorder(10000)
	e.recorder = rec
	return e, rec
}

// TestForgedDenialsLeaveVerifiedEvents: 3,000 denials from callers not
// verified as the API server (--webhook-auth report or none), half in the
// namespace of a genuine denial and half spread over others, get at most
// their own small share of Events, and the genuine (verified) denial that
// follows still gets its Event.
func TestForgedDenialsLeaveVerifiedEvents(t *testing.T) {
	e, rec := recordingEvents(t)
	for i := range 3000 {
		ns := "team-a"
		if i%2 == 1 {
			ns = fmt.Sprintf("team-%d", i)
		}
		r := denialRecord(ns, fmt.Sprintf("forged-%d", i))
		r.Caller = admission.CallerUnverified
		e.record(r)
	}
	forged := len(rec.Events)
	if forged == 0 || forged > unverifiedBurst+2 {
		t.Fatalf("%d Events for 3000 unverified denials, want at most about %d", forged, unverifiedBurst)
	}
	genuine := denialRecord("team-a", "genuine")
	genuine.Caller = admission.CallerVerified
	e.record(genuine)
	if len(rec.Events) != forged+1 {
		t.Fatalf("the verified denial got no Event after %d unverified ones took %d", 3000, forged)
	}
	for range forged {
		<-rec.Events
	}
	if ev := <-rec.Events; !strings.Contains(ev, "Job team-a/genuine") {
		t.Fatalf("last Event %q, want the verified denial's", ev)
	}
}

// TestRequesterStringsQuoted: an object name carrying a newline and a
// command reaches the denial's message and its Event only quoted, so
// that kubectl describe shows no line the requester wrote.
func TestRequesterStringsQuoted(t *testing.T) {
	e, rec := recordingEvents(t)
	var msg string
	h := admission.NewHandler(func() *admission.State {
		return admission.NewState(settings.MustCompile(settings.Config{}), admission.Authorizers{})
	}, admission.WithAudit(func(r admission.Record) {
		if r.Denial != nil {
			msg = r.Denial.Message
		}
		e.record(r)
	}), admission.WithCaller(func(context.Context) string { return admission.CallerVerified }))
	name := "p\ncurl x | sh"
	obj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "team-a", "annotations": map[string]string{admission.UserInfoAnnotation: `{"user":"bob"}`}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}})
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",
		"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
		"name":%q,"namespace":"team-a","operation":"CREATE","userInfo":{"username":"alice"},"object":%s}}`, name, obj)
	req := httptest.NewRequest("POST", "/validate", strings.NewReader(review))
	req.Header.Set("Content-Type", "application/json")
	resp := httptest.NewRecorder()
	h.ValidateHTTP().ServeHTTP(resp, req)
	quoted := strconv.Quote("team-a/" + name)
	if !strings.Contains(msg, quoted) || strings.Contains(msg, "\n") {
		t.Fatalf("denial message %q, want the name only quoted (%s)", msg, quoted)
	}
	if !strings.Contains(resp.Body.String(), strings.Trim(strconv.Quote(quoted), `"`)) {
		t.Fatalf("the response does not carry the quoted name: %s", resp.Body)
	}
	ev := <-rec.Events
	if !strings.Contains(ev, quoted) || strings.Contains(ev, "\n") {
		t.Fatalf("Event %q, want the name only quoted (%s)", ev, quoted)
	}
}
