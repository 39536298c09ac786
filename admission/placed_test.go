package admission

import (
	"context"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// placedElsewhere is a QueueAuthorizer whose placement puts every marker
// but root.tenants.e2e in root.tenants.e2e, as a tag rule on the
// namespace would after the provided rule fell through.
var placedElsewhere = QueueAuthorizerFunc(func(_ context.Context, r SubmitRequest) (SubmitDecision, error) {
	d := SubmitDecision{Allowed: true, Queue: "root.tenants.e2e", Reason: "rule 1 (provided): not allowed; rule 2 (tag): placed in root.tenants.e2e"}
	if r.Queue != "" && r.Queue != "root.tenants.e2e" {
		d.Asked = "root." + strings.TrimPrefix(r.Queue, "root.")
	}
	return d, nil
})

// TestQueuePlacedElsewhere: when YuniKorn's placement puts the pods in
// another queue than their marker asks for, the object is admitted (in
// deny and warn mode, on both webhooks) with a warning naming the marker,
// the queue asked for (quoted: the requester chose it), the queue chosen
// and why; the audit record's queue is the queue chosen and queueAsked
// the marker's; it is no denial (no Denial, so no Event). Placed where it
// asks, or without a marker, nothing is said; the record's queue is still
// the queue chosen. Every kind.
func TestQueuePlacedElsewhere(t *testing.T) {
	for _, mode := range []string{settings.ModeDeny, settings.ModeWarn} {
		for _, kc := range kindCases {
			t.Run(mode+"/"+kc.kind, func(t *testing.T) {
				sink := &auditSink{}
				h := NewHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true, EnforceQueueACLsMode: mode}), WithAuthorizer(placedElsewhere), WithAudit(sink.hook))
				for _, v := range []string{"root.ops", `ops"x`} {
					req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", v), nil, nil), nil)
					resp := run(t, h, hookMutate, req)
					wantAllowed(t, resp)
					asked := strconv.Quote("root." + strings.TrimPrefix(v, "root."))
					if len(resp.Warnings) != 1 {
						t.Fatalf("warnings %q, want one", resp.Warnings)
					}
					for _, want := range []string{`label queue=` + strconv.Quote(v), "asks for queue " + asked, `put the pods in queue "root.tenants.e2e"`, "rule 2 (tag)"} {
						if !strings.Contains(resp.Warnings[0], want) {
							t.Errorf("warning %q lacks %q", resp.Warnings[0], want)
						}
					}
					rec := sink.last(t)
					if rec.Queue != "root.tenants.e2e" || strconv.Quote(rec.QueueAsked) != asked || rec.Denial != nil || rec.Warned {
						t.Fatalf("record %+v, want queue root.tenants.e2e asked %s and no denial", rec, asked)
					}
					req.Object.Raw, _ = applyPatch(req.Object.Raw, resp.Patch)
					if resp := run(t, h, hookValidate, req); !resp.Allowed || len(resp.Warnings) != 1 || sink.last(t).QueueAsked == "" {
						t.Fatalf("validate: allowed %v warnings %q", resp.Allowed, resp.Warnings)
					}
				}
				for _, labels := range []map[string]string{m("queue", "root.tenants.e2e"), nil} {
					resp := run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(labels, nil, nil), nil))
					wantAllowed(t, resp)
					if rec := sink.last(t); len(resp.Warnings) != 0 || rec.Queue != "root.tenants.e2e" || rec.QueueAsked != "" {
						t.Fatalf("%v: warnings %q, record %+v", labels, resp.Warnings, rec)
					}
				}
			})
		}
	}
}

// TestQueueNoPlacementWhenNotEnforcing: with enforceQueueACLs off the
// review path asks no queue authorizer, and so runs no placement, for any
// operation of any kind, even while enforceDeleteACLs reads the markers.
func TestQueueNoPlacementWhenNotEnforcing(t *testing.T) {
	authz := &fakeAuthz{}
	for _, c := range []settings.Config{{}, {EnforceDeleteACLs: true}} {
		h := NewHandler(mustCompile(t, c), WithAuthorizer(authz), WithDeleteAuthorizer(newFakeDeleteAuthz()))
		for _, kc := range kindCases {
			obj := kc.build(m("queue", "root.ops"), m(UserInfoAnnotation, aliceInfo), nil)
			for _, req := range []*admissionv1.AdmissionRequest{
				request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", "root.ops"), nil, nil), nil),
				request(t, kc, admissionv1.Update, "team-a", alice, kc.build(m("queue", "root.dev"), m(UserInfoAnnotation, aliceInfo), nil), obj),
				request(t, kc, admissionv1.Delete, "team-a", alice, nil, obj),
			} {
				run(t, h, hookMutate, req)
				run(t, h, hookValidate, req)
			}
		}
	}
	if len(authz.calls) != 0 {
		t.Fatalf("the queue authorizer was asked %d times with enforceQueueACLs off: %+v", len(authz.calls), authz.calls)
	}
}
