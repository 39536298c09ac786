package admission

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/usherhq/usher/admission/settings"
)

// TestDenialBoundsHostileValues: a mutating webhook sees the object before
// the API server validates it, so a name, generateName or queue marker can
// be megabytes long (up to the request's limit). A denial that quotes such
// a value stays small wherever it goes: the response's status message,
// details and audit annotations, the audit record and its Denial (which
// becomes a denial Event and its usher.io/denial annotation, refused by
// the API server over 256 KiB). Control characters, which quoting turns
// into four bytes each and JSON into more, are no way around the bound.
func TestDenialBoundsHostileValues(t *testing.T) {
	qauthz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.team-a", ""}}}
	job := kindCaseOf(t, "Job")
	cfg := settings.Config{EnforceQueueACLs: true}
	const huge = 300_000
	ctl := strings.Repeat("\x01", huge)
	named := func(name, genName string, obj runtime.Object) *admissionv1.AdmissionRequest {
		acc, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		acc.SetName(name)
		acc.SetGenerateName(genName)
		req := request(t, job, admissionv1.Create, "team-a", alice, obj, nil)
		req.Name = name
		return req
	}
	cases := []struct {
		name   string
		req    *admissionv1.AdmissionRequest
		cause  Cause
		quoted bool // the message quotes the hostile value, and says it was cut
	}{
		{"unknown queue, control characters", request(t, job, admissionv1.Create, "team-a", alice,
			job.build(nil, nil, m("kueue.x-k8s.io/queue-name", "a..b"+ctl)), nil), CauseUnknownQueue, true},
		{"YuniKorn annotation, placement", request(t, job, admissionv1.Create, "team-a", alice,
			job.build(nil, m("yunikorn.apache.org/queue", "root.x"+strings.Repeat("y", 250_000)), nil), nil), CauseQueueSubmitDenied, true}, // within the API server's 256 KiB of annotations
		{"queue label", request(t, job, admissionv1.Create, "team-a", alice,
			job.build(m("queue", "root."+ctl), nil, nil), nil), CauseQueueSubmitDenied, true},
		{"huge name", named(strings.Repeat("n", huge), "", job.build(m("queue", "root.ops"), nil, nil)), CauseQueueSubmitDenied, false},
		{"huge generateName", named("", strings.Repeat("g", huge), job.build(m("queue", "root.ops"), nil, nil)), CauseQueueSubmitDenied, false},
	}
	const (
		maxField   = 1 << 10  // a name, queue or identity, with the note of what was cut
		maxMessage = 4 << 10  // a message
		maxDenial  = 16 << 10 // the Denial as JSON, the Event's annotation
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := &auditSink{}
			h := NewHandler(mustCompile(t, cfg), WithAuthorizer(qauthz), WithAudit(sink.hook))
			resp := run(t, h, hookMutate, tc.req)
			rec := sink.last(t)
			d := rec.Denial
			if d == nil || d.Reason != tc.cause || resp.Allowed || resp.Result == nil {
				t.Fatalf("want a %s denial, got %+v", tc.cause, d)
			}
			shape, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if len(shape) > maxDenial {
				t.Errorf("Denial is %d bytes of JSON, want at most %d", len(shape), maxDenial)
			}
			for what, v := range map[string]string{"Denial.Message": d.Message, "Record.Reason": rec.Reason, "status message": resp.Result.Message} {
				if len(v) > maxMessage {
					t.Errorf("%s is %d bytes, want at most %d", what, len(v), maxMessage)
				}
			}
			fields := map[string]string{"Record.Name": rec.Name, "Record.Queue": rec.Queue, "Record.Identity": rec.Identity,
				"Denial.Name": d.Name, "Denial.Queue": d.Queue, "details name": resp.Result.Details.Name}
			for k, v := range resp.AuditAnnotations {
				fields["audit annotation "+k] = v
			}
			for _, c := range resp.Result.Details.Causes {
				fields["cause message"] = c.Message
			}
			for what, v := range fields {
				if len(v) > maxField {
					t.Errorf("%s is %d bytes, want at most %d", what, len(v), maxField)
				}
			}
			if tc.quoted && !strings.Contains(d.Message, " bytes") {
				t.Errorf("the message does not say the value was cut: %.300q", d.Message)
			}
		})
	}
}

// TestHTTPErrorBounded: a body that is not a usable review is answered
// with an error quoting what was wrong, bounded as a denial is, however
// long the value (here an apiVersion of 1 MiB).
func TestHTTPErrorBounded(t *testing.T) {
	h := NewHandler(mustCompile(t, settings.Config{}))
	huge := strings.Repeat("v", 1<<20)
	body := `{"apiVersion":"` + huge + `","kind":"AdmissionReview","request":{"uid":"u"}}`
	rec := httptest.NewRecorder()
	hr := httptest.NewRequest(http.MethodPost, "/mutate", strings.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	h.MutateHTTP().ServeHTTP(rec, hr)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("HTTP %d, want 400", rec.Code)
	}
	if n := rec.Body.Len(); n > 4<<10 {
		t.Fatalf("the error answer is %d bytes, want at most 4 KiB: %.200s", n, rec.Body)
	}
}
