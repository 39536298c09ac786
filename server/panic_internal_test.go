package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/admission/settings"
)

type panickingAuthz struct{}

func (panickingAuthz) AuthorizeSubmit(context.Context, admission.SubmitRequest) (admission.SubmitDecision, error) {
	panic("boom in a rule")
}

// A panic inside a rule is recovered once, at the edge: the review is
// answered with a denial carrying its UID (usher fails closed), the panic
// is counted and logged with the UID, and the next review is served.
func TestPanicInARuleDeniesTheReviewByUID(t *testing.T) {
	var logs bytes.Buffer
	s, err := New(Options{NoAudit: true, WebhookAuth: WebhookAuthNone, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	st := admission.NewState(settings.MustCompile(settings.Config{EnforceQueueACLs: true}), admission.Authorizers{Queue: panickingAuthz{}})
	s.admission = admission.NewHandler(func() *admission.State { return st })
	h := s.Handler() // the routes usher serve serves: edge, body budget, webhook auth
	body, err := os.ReadFile("../admission/testdata/pod-create.json")
	if err != nil {
		t.Fatal(err)
	}
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, r)
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != 200 || out.Response == nil {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
		if resp := out.Response; resp.UID != in.Request.UID || resp.Allowed || resp.Result.Code != 500 ||
			!strings.Contains(resp.Result.Message, "boom in a rule") || !strings.Contains(resp.Result.Message, "fails closed") {
			t.Fatalf("response %+v %+v", resp, resp.Result)
		}
	}
	var m dto.Metric
	if err := s.metrics.panics.WithLabelValues("mutate").Write(&m); err != nil || m.GetCounter().GetValue() != 2 {
		n := m.GetCounter().GetValue()
		t.Fatalf("usher_panics_recovered_total{handler=mutate} = %v, want 2", n)
	}
	if !strings.Contains(logs.String(), "panic recovered") || !strings.Contains(logs.String(), string(in.Request.UID)) {
		t.Fatalf("log: %s", logs.String())
	}
}
