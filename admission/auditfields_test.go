package admission

import (
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/usherhq/usher/admission/settings"
)

// TestAuditRecordNamesObjectAndQueue: whichever path decides a review of
// a handled kind, allowed, denied or warned, its audit record names the
// object and the queue: CREATE (stamped, kept, refused for a forged or
// invalid user.info, refused or warned by the queue check, with
// generateName), UPDATE (unchanged, refused for a changed user.info,
// refused by the kill rule guarding the markers), DELETE (trusted, by the
// kill rule, refused, terminating, a collection delete) and eviction;
// through the Go API and the HTTP edge, on both webhooks where they apply,
// for every kind, in deny and in warn mode.
func TestAuditRecordNamesObjectAndQueue(t *testing.T) {
	qauthz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.team-a", ""}}}
	dauthz := newFakeDeleteAuthz()
	cfgs := map[string]settings.Config{
		"deny": {EnforceQueueACLs: true, EnforceDeleteACLs: true},
		"warn": {EnforceQueueACLs: true, EnforceDeleteACLs: true, EnforceQueueACLsMode: settings.ModeWarn, EnforceDeleteACLsMode: settings.ModeWarn},
	}
	inA := m("queue", "root.team-a")
	inOps := m("queue", "root.ops")
	for mode, cfg := range cfgs {
		for _, kc := range kindCases {
			t.Run(mode+"/"+kc.kind, func(t *testing.T) {
				sink := &auditSink{}
				h := NewHandler(mustCompile(t, cfg), WithAuthorizer(qauthz), WithDeleteAuthorizer(dauthz), WithAudit(sink.hook))
				mine := kc.build(inA, m(UserInfoAnnotation, aliceInfo), nil)
				cases := []struct {
					name      string
					hooks     []hookKind
					req       *admissionv1.AdmissionRequest
					wantName  string
					wantQueue string
				}{
					{"create stamped", both, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(inA, nil, nil), nil), "obj", "root.team-a"},
					{"create kept", both, request(t, kc, admissionv1.Create, "team-a", alice, mine, nil), "obj", "root.team-a"},
					{"create forged", both, request(t, kc, admissionv1.Create, "team-a", bob, mine, nil), "obj", "root.team-a"},
					{"create invalid user.info", both, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(inA, m(UserInfoAnnotation, "{"), nil), nil), "obj", "root.team-a"},
					{"create forbidden queue", both, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(inOps, nil, nil), nil), "obj", "root.ops"},
					{"create no marker", both, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil), "obj", defaultQueueInRecord},
					{"create generateName", both, generated(t, kc, bob, kc.build(inA, nil, nil)), "obj-*", "root.team-a"},
					{"update unchanged", both, request(t, kc, admissionv1.Update, "team-a", alice, mine, mine), "obj", "root.team-a"},
					{"update user.info changed", both, request(t, kc, admissionv1.Update, "team-a", alice,
						kc.build(inA, m(UserInfoAnnotation, forgedCarol), nil), mine), "obj", "root.team-a"},
					{"update markers by a stranger", []hookKind{hookValidate}, request(t, kc, admissionv1.Update, "team-a", bob,
						kc.build(inOps, m(UserInfoAnnotation, aliceInfo), nil), mine), "obj", map[string]string{
						"deny": "root.team-a", // refused by the kill rule, in the queue it is in
						"warn": "root.ops",    // admitted with warnings; the last is the queue check's of root.ops
					}[mode]},
					{"delete by a controller", []hookKind{hookValidate}, deleteRequest(t, kc, "team-a", rsCtrl, mine), "obj", "root.team-a"},
					{"delete by the owner", []hookKind{hookValidate}, deleteRequest(t, kc, "team-a", alice, mine), "obj", "root.team-a"},
					{"delete refused", []hookKind{hookValidate}, deleteRequest(t, kc, "team-a", bob, mine), "obj", "root.team-a"},
					{"delete terminating", []hookKind{hookValidate}, deleteRequest(t, kc, "team-a", bob,
						terminating(t, kc.build(inA, m(UserInfoAnnotation, aliceInfo), nil))), "obj", "root.team-a"},
					{"collection delete", []hookKind{hookValidate}, unnamed(deleteRequest(t, kc, "team-a", rsCtrl, mine)), "obj", "root.team-a"},
				}
				for _, tc := range cases {
					for _, hook := range tc.hooks {
						for _, edge := range []string{"go", "http"} {
							sink.recs = nil
							if edge == "go" {
								run(t, h, hook, tc.req)
							} else {
								hh := h.ValidateHTTP()
								if hook == hookMutate {
									hh = h.MutateHTTP()
								}
								if rec := post(t, hh, "application/json", reviewBody(t, tc.req)); rec.Code != http.StatusOK {
									t.Fatalf("%s %s %s: HTTP %d", tc.name, hook, edge, rec.Code)
								}
							}
							r := sink.last(t)
							if r.Name != tc.wantName || r.Queue != tc.wantQueue {
								t.Errorf("%s (%s, %s): record name %q queue %q, want %q %q", tc.name, hook, edge, r.Name, r.Queue, tc.wantName, tc.wantQueue)
							}
						}
					}
				}
			})
		}
	}

	t.Run("eviction", func(t *testing.T) {
		for mode, cfg := range cfgs {
			sink := &auditSink{}
			h := NewHandler(mustCompile(t, cfg), WithAuthorizer(qauthz), WithDeleteAuthorizer(dauthz), WithAudit(sink.hook))
			for _, u := range []struct {
				name string
				req  *admissionv1.AdmissionRequest
			}{{"controller", evictionRequest("team-a", "p1", rsCtrl)}, {"admin", evictionRequest("team-a", "p1", erin)}, {"stranger", evictionRequest("team-a", "p1", bob)}} {
				run(t, h, hookValidate, u.req)
				if r := sink.last(t); r.Name != "p1" || r.Queue != "root" {
					t.Errorf("%s eviction by %s: record name %q queue %q, want p1 root", mode, u.name, r.Name, r.Queue)
				}
			}
		}
	})
}

var both = []hookKind{hookMutate, hookValidate}

// generated builds the CREATE of obj with generateName "obj-" and no
// name, as the API server sends it.
func generated(t *testing.T, kc kindCase, user authenticationv1.UserInfo, obj runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	acc, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	acc.SetName("")
	acc.SetGenerateName("obj-")
	req := request(t, kc, admissionv1.Create, "team-a", user, obj, nil)
	req.Name = ""
	return req
}

// terminating marks obj as being deleted.
func terminating(t *testing.T, obj runtime.Object) runtime.Object {
	t.Helper()
	acc, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	acc.SetDeletionTimestamp(&now)
	return obj
}

// unnamed makes req a member of a collection delete, which names no
// object.
func unnamed(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionRequest {
	req.Name = ""
	return req
}
