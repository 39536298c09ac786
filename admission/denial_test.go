package admission

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/admission/settings"
)

// TestDenialShape: every denial carries its cause in one stable shape, the
// same in the three places it goes: the response's status (reason of the
// HTTP status, details naming the object with one cause whose type is the
// Cause, whose field is the field that decided and whose message is the
// queue), the response's audit annotations (decision, reason, queue), and
// the audit record's Denial. A warned denial carries the audit annotations
// and the record's Denial, and no status.
func TestDenialShape(t *testing.T) {
	qauthz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.team-a", ""}}}
	failing := QueueAuthorizerFunc(func(context.Context, SubmitRequest) (SubmitDecision, error) {
		return SubmitDecision{}, errors.New("directory down")
	})
	dauthz := newFakeDeleteAuthz()
	job := kindCaseOf(t, "Job")
	pod := kindCaseOf(t, "Pod")
	cron := kindCaseOf(t, "CronJob")
	mineJob := job.build(m("queue", "root.team-a"), m(UserInfoAnnotation, aliceInfo), nil)
	cfg := settings.Config{EnforceQueueACLs: true, EnforceDeleteACLs: true}
	cases := []struct {
		name                         string
		cfg                          settings.Config
		authz                        QueueAuthorizer
		hook                         hookKind
		req                          *admissionv1.AdmissionRequest
		cause                        Cause
		code                         int32
		kind                         string
		objName, queue, check, field string
		warned                       bool
	}{
		{"queue", cfg, qauthz, hookMutate,
			request(t, job, admissionv1.Create, "team-a", alice, job.build(m("queue", "root.ops"), nil, nil), nil),
			CauseQueueSubmitDenied, 403, "Job", "obj", "root.ops", CheckSubmit, "spec.template.metadata.labels[queue]", false},
		{"queue of a CronJob's job template (kueue)", cfg, qauthz, hookMutate,
			cronWithJobLabel(t, cron, "kueue.x-k8s.io/queue-name", "ops"),
			CauseQueueSubmitDenied, 403, "CronJob", "obj", "root.ops", CheckSubmit, "spec.jobTemplate.metadata.labels[kueue.x-k8s.io/queue-name]", false},
		{"queue warned", settings.Config{EnforceQueueACLs: true, EnforceQueueACLsMode: settings.ModeWarn}, qauthz, hookMutate,
			request(t, job, admissionv1.Create, "team-a", alice, job.build(m("queue", "root.ops"), nil, nil), nil),
			CauseQueueSubmitDenied, 200, "Job", "obj", "root.ops", CheckSubmit, "spec.template.metadata.labels[queue]", true},
		{"generateName", cfg, qauthz, hookMutate,
			generated(t, job, alice, job.build(m("queue", "root.ops"), nil, nil)),
			CauseQueueSubmitDenied, 403, "Job", "obj-*", "root.ops", CheckSubmit, "spec.template.metadata.labels[queue]", false},
		{"unknown queue", cfg, qauthz, hookMutate,
			request(t, job, admissionv1.Create, "team-a", alice, job.build(nil, nil, m("kueue.x-k8s.io/queue-name", "a..b")), nil),
			CauseUnknownQueue, 400, "Job", "obj", "", CheckSubmit, "", false},
		{"forged", cfg, qauthz, hookMutate,
			request(t, job, admissionv1.Create, "team-a", bob, mineJob, nil),
			CauseUserInfoForged, 403, "Job", "obj", "root.team-a", "", "spec.template.metadata.annotations[yunikorn.apache.org/user.info]", false},
		{"invalid", cfg, qauthz, hookValidate,
			request(t, pod, admissionv1.Create, "team-a", alice, pod.build(nil, m(UserInfoAnnotation, "{"), nil), nil),
			CauseUserInfoInvalid, 400, "Pod", "obj", defaultQueueInRecord, "", "metadata.annotations[yunikorn.apache.org/user.info]", false},
		{"missing", cfg, qauthz, hookValidate,
			request(t, pod, admissionv1.Create, "team-a", alice, pod.build(nil, nil, nil), nil),
			CauseUserInfoMissing, 403, "Pod", "obj", defaultQueueInRecord, "", "metadata.annotations[yunikorn.apache.org/user.info]", false},
		{"changed", cfg, qauthz, hookValidate,
			request(t, job, admissionv1.Update, "team-a", alice, job.build(m("queue", "root.team-a"), m(UserInfoAnnotation, forgedCarol), nil), mineJob),
			CauseUserInfoChanged, 403, "Job", "obj", "root.team-a", "", "spec.template.metadata.annotations[yunikorn.apache.org/user.info]", false},
		{"kill", cfg, qauthz, hookValidate, deleteRequest(t, job, "team-a", bob, mineJob),
			CauseKillDenied, 403, "Job", "obj", "root.team-a", CheckKill, "", false},
		{"eviction", cfg, qauthz, hookValidate, evictionRequest("team-a", "p1", bob),
			CauseEvictionDenied, 403, "Pod", "p1", "root", CheckKill, "", false},
		{"binding of user.info", cfg, qauthz, hookValidate, bindingRequest(bob, nil, m(UserInfoAnnotation, aliceInfo), false),
			CauseUserInfoChanged, 403, "Pod", "", "", "", "metadata.annotations[yunikorn.apache.org/user.info]", false},
		{"bad object", cfg, qauthz, hookMutate, badObject(request(t, job, admissionv1.Create, "team-a", alice, mineJob, nil)),
			CauseInvalidObject, 400, "Job", "obj", "", "", "", false},
		{"authorizer down", cfg, failing, hookMutate,
			request(t, job, admissionv1.Create, "team-a", alice, job.build(m("queue", "root.team-a"), nil, nil), nil),
			CauseDecisionFailed, 500, "Job", "obj", "root.team-a", CheckSubmit, "spec.template.metadata.labels[queue]", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := &auditSink{}
			h := newTestHandler(mustCompile(t, tc.cfg), WithAuthorizer(tc.authz), WithDeleteAuthorizer(dauthz), WithAudit(sink.hook))
			if tc.req.Kind.Kind == "Binding" || tc.req.SubResource == "binding" {
				tc.objName = tc.req.Name
			}
			resp := run(t, h, tc.hook, tc.req)
			rec := sink.last(t)
			d := rec.Denial
			if d == nil {
				t.Fatalf("record %+v has no denial", rec)
			}
			if d.Reason != tc.cause || d.Code != tc.code || d.Warned != tc.warned || d.Kind != tc.kind || d.Name != tc.objName ||
				d.Queue != tc.queue || d.Check != tc.check || d.Field != tc.field || d.User != tc.req.UserInfo.Username ||
				d.Namespace != tc.req.Namespace || d.Operation != string(tc.req.Operation) || d.Message == "" {
				t.Fatalf("denial %+v, want %s %d kind %s name %q queue %q check %q field %q warned %v",
					*d, tc.cause, tc.code, tc.kind, tc.objName, tc.queue, tc.check, tc.field, tc.warned)
			}
			wantAnn := map[string]string{"decision": "denied", "reason": string(tc.cause)}
			if tc.warned {
				wantAnn["decision"] = "warned"
			}
			if tc.queue != "" {
				wantAnn["queue"] = tc.queue
			}
			if !mapsEqual(resp.AuditAnnotations, wantAnn) {
				t.Fatalf("audit annotations %v, want %v", resp.AuditAnnotations, wantAnn)
			}
			if tc.warned {
				if !resp.Allowed || resp.Result != nil || len(resp.Warnings) != 1 || resp.Warnings[0] != d.Message {
					t.Fatalf("warned: response %+v", resp)
				}
				return
			}
			st := resp.Result
			if resp.Allowed || st == nil || st.Details == nil || st.Message != d.Message || st.Code != tc.code {
				t.Fatalf("response %+v", resp)
			}
			wantName := tc.objName
			if strings.HasSuffix(wantName, "*") {
				wantName = ""
			}
			want := metav1.StatusDetails{Name: wantName, Group: d.Group, Kind: tc.kind,
				Causes: []metav1.StatusCause{{Type: metav1.CauseType(tc.cause), Message: tc.queue, Field: tc.field}}}
			if b, w := mustJSON(t, st.Details), mustJSON(t, want); string(b) != string(w) {
				t.Fatalf("details %s, want %s", b, w)
			}
		})
	}
}

// TestDenialInAuditLog: the audit record's denial renders as the group
// "denial" of the JSON log line, with the fields of the shape.
func TestDenialInAuditLog(t *testing.T) {
	var buf strings.Builder
	qauthz := &fakeAuthz{allowed: map[string][]string{}}
	job := kindCaseOf(t, "Job")
	h := newTestHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}), WithAuthorizer(qauthz),
		WithAudit(SlogAudit(slog.New(slog.NewJSONHandler(&buf, nil)))))
	run(t, h, hookMutate, request(t, job, admissionv1.Create, "team-a", alice, job.build(m("queue", "root.ops"), nil, nil), nil))
	var line struct {
		Denial Denial `json:"denial"`
		Name   string `json:"name"`
		Queue  string `json:"queue"`
	}
	first, _, _ := strings.Cut(buf.String(), "\n")
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if line.Denial.Reason != CauseQueueSubmitDenied || line.Denial.Queue != "root.ops" || line.Denial.Name != "obj" ||
		line.Denial.Check != CheckSubmit || line.Denial.User != alice.Username || line.Name != "obj" || line.Queue != "root.ops" {
		t.Fatalf("audit line %s", buf.String())
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// cronWithJobLabel is alice's CronJob whose job template carries label
// key=value.
func cronWithJobLabel(t *testing.T, kc kindCase, key, value string) *admissionv1.AdmissionRequest {
	t.Helper()
	req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		t.Fatal(err)
	}
	jt := obj["spec"].(map[string]any)["jobTemplate"].(map[string]any)
	jt["metadata"] = map[string]any{"labels": map[string]any{key: value}}
	req.Object.Raw = mustJSON(t, obj)
	return req
}

// badObject replaces the request's object with one that is not valid.
func badObject(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionRequest {
	req.Object.Raw = []byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"obj","labels":7}}`)
	return req
}
