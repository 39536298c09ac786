package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/admission/settings"
)

// owned sets metadata.ownerReferences on obj and returns it.
func owned(obj runtime.Object, refs ...metav1.OwnerReference) runtime.Object {
	obj.(metav1.Object).SetOwnerReferences(refs)
	return obj
}

func ownerRef(kind, name, uid string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid),
		Controller: &controller, BlockOwnerDeletion: &controller}
}

// TestUpdateOwnerReferences: with enforceDeleteACLs, adding, changing or
// removing metadata.ownerReferences needs the right to delete the object,
// decided on the object as it was: otherwise anyone who may edit it could
// point it at a missing (or his own) owner and let the garbage collector
// delete it. Trusted controllers adopt and release without the rule; an
// update that leaves the references alone is not affected. The status
// subresource is decided the same way.
func TestUpdateOwnerReferences(t *testing.T) {
	authz := newFakeDeleteAuthz()
	// The ReplicaSet that adopts is alice's (see TestAdoption).
	h := deleteHandler(t, settings.Config{}, authz, WithOwnerLookup((&fakeOwners{objs: map[string]runtime.Object{
		"/apis/apps/v1/namespaces/team-a/replicasets/web-5d8f": replicaSet("web-5d8f", "1111-aaaa", m(UserInfoAnnotation, aliceInfo))}}).LookupOwner))
	rs := ownerRef("ReplicaSet", "web-5d8f", "1111-aaaa", true)
	ghost := ownerRef("ReplicaSet", "ghost", "dead-beef", true)
	bobs := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "bobs", UID: "2222-bbbb"}
	gc := kubeSystemSA("generic-garbage-collector")
	for _, kc := range kindCases {
		for _, sub := range []string{"", "status"} {
			t.Run(kc.kind+"/"+sub, func(t *testing.T) {
				labels := m("queue", "root.team-a")
				ann := m(UserInfoAnnotation, aliceInfo)
				build := func(refs ...metav1.OwnerReference) runtime.Object {
					return owned(kc.build(labels, ann, nil), refs...)
				}
				cases := []struct {
					name       string
					user       authenticationv1.UserInfo
					old, after runtime.Object
					allowed    bool
				}{
					{"stranger adds a missing owner", bob, build(), build(ghost), false},
					{"stranger adds his own object as owner", bob, build(), build(bobs), false},
					{"stranger replaces the owner", bob, build(rs), build(ghost), false},
					{"stranger removes the owner", bob, build(rs), build(), false},
					{"stranger clears blockOwnerDeletion", bob, build(rs), build(ownerRef("ReplicaSet", "web-5d8f", "1111-aaaa", false)), false},
					{"stranger leaves them alone", bob, build(rs), owned(kc.build(m("queue", "root.team-a", "x", "y"), ann, nil), rs), true},
					{"owner adds one", alice, build(), build(bobs), true},
					{"queue admin removes it", dave, build(rs), build(), true},
					{"cluster admin", erin, build(), build(ghost), true},
					{"controller adopts", rsCtrl, build(), build(rs), true},
					{"shared controller-manager user adopts", kcm, build(), build(rs), true},
					{"garbage collector orphans", gc, build(rs), build(), true},
					{"system:masters", superuser, build(rs), build(ghost), true},
				}
				for _, tc := range cases {
					req := request(t, kc, admissionv1.Update, "team-a", tc.user, tc.after, tc.old)
					req.SubResource = sub
					resp := run(t, h, hookValidate, req)
					if tc.allowed {
						if !resp.Allowed {
							t.Errorf("%s: denied: %s", tc.name, resp.Result.Message)
						}
						continue
					}
					if resp.Allowed {
						t.Errorf("%s: allowed, want denied", tc.name)
						continue
					}
					want := fmt.Sprintf("usher: user %q may not change metadata.ownerReferences on %s \"team-a/obj\": ", tc.user.Username, kc.kind)
					wantDenied(t, resp, 403, want, `bob may not kill the application of alice@EXAMPLE.COM in "root.team-a"`)
				}
			})
		}
	}

	// Off: ownerReferences are none of usher's business.
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Update, "team-a", bob,
		owned(kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil), ghost), kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil))
	wantAllowed(t, run(t, newTestHandler(nil, WithDeleteAuthorizer(authz)), hookValidate, req))
}

// TestUpdateOwnerReferencesMalformed: ownerReferences must be an array
// (or null); anything else is a bad request, not an unchanged field.
func TestUpdateOwnerReferencesMalformed(t *testing.T) {
	h := deleteHandler(t, settings.Config{}, newFakeDeleteAuthz())
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Update, "team-a", bob, nil, kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil))
	req.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"obj","ownerReferences":{"kind":"ReplicaSet"},` +
		`"annotations":{"yunikorn.apache.org/user.info":` + fmt.Sprintf("%q", aliceInfo) + `}}}`)
	wantDenied(t, run(t, h, hookValidate, req), 400, "metadata.ownerReferences: found an object, want an array")
}

// TestUpdateQueueMarkers: with enforceDeleteACLs, moving a workload to
// another queue (changing a queue marker on the pod, the pod template, a
// CronJob's job template or the workload itself) needs the right to
// delete it, as moving an application needs the right to modify it in
// YARN: otherwise anyone who may edit it could move it into a queue he
// administers and then delete it.
func TestUpdateQueueMarkers(t *testing.T) {
	authz := newFakeDeleteAuthz()
	authz.queueAdmins["root.bobs"] = []string{"bob"}
	h := deleteHandler(t, settings.Config{}, authz)
	ann := m(UserInfoAnnotation, aliceInfo)
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			before := kc.build(m("queue", "root.team-a"), ann, nil)
			cases := []struct {
				name    string
				user    authenticationv1.UserInfo
				after   runtime.Object
				allowed bool
				what    string
			}{
				{"stranger moves it to his queue", bob, kc.build(m("queue", "root.bobs"), ann, nil), false, "label queue"},
				{"stranger removes the marker", bob, kc.build(nil, ann, nil), false, "label queue"},
				{"stranger adds another marker", bob, kc.build(m("queue", "root.team-a"), m(UserInfoAnnotation, aliceInfo, "yunikorn.apache.org/queue", "root.bobs"), nil), false,
					"annotation yunikorn.apache.org/queue"},
				{"owner moves it", alice, kc.build(m("queue", "root.bobs"), ann, nil), true, ""},
				{"admin of its queue moves it", dave, kc.build(m("queue", "root.bobs"), ann, nil), true, ""},
				{"controller", depCtrl, kc.build(m("queue", "root.bobs"), ann, nil), true, ""},
			}
			if kc.kind != "Pod" {
				cases = append(cases, struct {
					name    string
					user    authenticationv1.UserInfo
					after   runtime.Object
					allowed bool
					what    string
				}{"stranger labels the workload itself", bob, kc.build(m("queue", "root.team-a"), ann, m("kueue.x-k8s.io/queue-name", "root.bobs")), false,
					"label kueue.x-k8s.io/queue-name"})
			}
			for _, tc := range cases {
				resp := run(t, h, hookValidate, request(t, kc, admissionv1.Update, "team-a", tc.user, tc.after, before))
				if tc.allowed {
					if !resp.Allowed {
						t.Errorf("%s: denied: %s", tc.name, resp.Result.Message)
					}
					continue
				}
				if resp.Allowed {
					t.Errorf("%s: allowed, want denied", tc.name)
					continue
				}
				wantDenied(t, resp, 403, fmt.Sprintf("usher: user %q may not change %s on %s \"team-a/obj\": ", tc.user.Username, tc.what, kc.kind),
					`in "root.team-a"`)
			}
		})
	}
	// A CronJob's job template carries markers too.
	ck := kindCaseOf(t, "CronJob")
	before := ck.build(nil, ann, nil)
	after := ck.build(nil, ann, nil).(*batchv1.CronJob)
	after.Spec.JobTemplate.Labels = m("queue", "root.bobs")
	wantDenied(t, run(t, h, hookValidate, request(t, ck, admissionv1.Update, "team-a", bob, after, before)), 403,
		`usher: user "bob" may not change label queue on CronJob "team-a/obj": `)
}

// TestUpdateLegacyOwnerLabel: with bypassAuth, the legacy username label
// names the owner of an object without user.info; changing it changes
// who may delete it, so it needs the right to delete.
func TestUpdateLegacyOwnerLabel(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{AccessControl: settings.AccessControl{BypassAuth: true}}, authz)
	kc := kindCaseOf(t, "Pod")
	before := kc.build(m(LegacyUserLabel, "alice"), nil, nil)
	req := request(t, kc, admissionv1.Update, "team-a", bob, kc.build(m(LegacyUserLabel, "bob"), nil, nil), before)
	wantDenied(t, run(t, h, hookValidate, req), 403, `usher: user "bob" may not change label yunikorn.apache.org/username on Pod "team-a/obj": `)
	req = request(t, kc, admissionv1.Update, "team-a", authenticationv1.UserInfo{Username: "alice"}, kc.build(m(LegacyUserLabel, "carol"), nil, nil), before)
	wantAllowed(t, run(t, h, hookValidate, req))
}

// TestStatusSubresource: the status subresource can change a pod's (or a
// workload's) labels and annotations; usher decides it as any UPDATE, so
// user.info cannot change and the modify ACL needs the kill right.
func TestStatusSubresource(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz)
	node := authenticationv1.UserInfo{Username: "system:node:worker-1", Groups: []string{"system:nodes", "system:authenticated"}}
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			before := kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
			req := request(t, kc, admissionv1.Update, "team-a", bob, kc.build(nil, m(UserInfoAnnotation, forgedCarol), nil), before)
			req.SubResource = "status"
			wantDenied(t, run(t, h, hookValidate, req), 403, "may not change annotation yunikorn.apache.org/user.info on")
			req = request(t, kc, admissionv1.Update, "team-a", bob, kc.build(nil, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "bob"), nil), before)
			req.SubResource = "status"
			wantDenied(t, run(t, h, hookValidate, req), 403, "may not change annotation usher.io/modify-acl on")
			// A status update that keeps the metadata (the kubelet's).
			req = request(t, kc, admissionv1.Update, "team-a", node, before, before)
			req.SubResource = "status"
			wantAllowed(t, run(t, h, hookValidate, req))
		})
	}
}

// evictionRequest is a CREATE of pods/eviction as the API server sends it
// (recorded from kube-apiserver v1.35.4): kind policy/v1 Eviction,
// resource pods, subResource eviction, the pod's name, and the Eviction as
// the object. The pod itself is not in the review.
func evictionRequest(ns, pod string, user authenticationv1.UserInfo) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID:                "uid-eviction",
		Kind:               metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
		Resource:           metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"},
		SubResource:        "eviction",
		RequestKind:        &metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"},
		RequestResource:    &metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"},
		RequestSubResource: "eviction",
		Name:               pod,
		Namespace:          ns,
		Operation:          admissionv1.Create,
		UserInfo:           user,
		Object: runtime.RawExtension{Raw: []byte(`{"kind":"Eviction","apiVersion":"policy/v1","metadata":{"name":"` + pod +
			`","namespace":"` + ns + `","creationTimestamp":null},"deleteOptions":{}}`)},
		Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
	}
}

// TestEviction: an eviction deletes the pod without a DELETE review, and
// the review does not carry the pod. With enforceDeleteACLs on, usher lets
// through evictions by those who may delete any pod without the rule
// (trusted controllers such as the cluster autoscaler, trusted front ends,
// system:masters) and by those who may kill every application (cluster
// admins, application admins, admins of root); anyone else is refused and
// told to delete the pod instead, which the kill rule decides.
func TestEviction(t *testing.T) {
	authz := newFakeDeleteAuthz()
	authz.queueAdmins["root"] = []string{"rooty"}
	h := deleteHandler(t, settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^system:serviceaccount:airflow:scheduler$"}}}, authz)
	allowed := []authenticationv1.UserInfo{
		kubeSystemSA("cluster-autoscaler"), kubeSystemSA("descheduler"), kcm, superuser, airflow,
		erin, {Username: "rooty"},
	}
	for _, u := range allowed {
		t.Run("allowed/"+u.Username, func(t *testing.T) {
			for _, hook := range []hookKind{hookMutate, hookValidate} {
				resp := run(t, h, hook, evictionRequest("team-a", "p", u))
				wantAllowed(t, resp)
				if resp.Patch != nil {
					t.Fatalf("patched an eviction")
				}
			}
		})
	}
	for _, u := range []authenticationv1.UserInfo{bob, alice, dave, {Username: "frank"}} {
		t.Run("denied/"+u.Username, func(t *testing.T) {
			wantDenied(t, run(t, h, hookValidate, evictionRequest("team-a", "p", u)), 403,
				fmt.Sprintf(`usher: user %q may not evict Pod "team-a/p": `, u.Username),
				"enforceDeleteACLs", "delete the pod instead")
		})
	}
	// The rule is asked about the application nobody owns, in root, with a
	// modify ACL that allows nobody: only admins of every queue pass.
	authz.reset()
	run(t, h, hookValidate, evictionRequest("team-a", "p", bob))
	calls := authz.reset()
	if len(calls) != 2 || !deleteCallEqual(calls[0], calls[1]) || calls[0].queue != "root" || calls[0].owner != "" || calls[0].modifyACL != " " || calls[0].user != "bob" {
		t.Fatalf("calls %+v", calls)
	}

	// Off, in a bypassed namespace, or not an eviction: not decided.
	off := newTestHandler(nil, WithDeleteAuthorizer(authz))
	wantAllowed(t, run(t, off, hookValidate, evictionRequest("team-a", "p", bob)))
	wantAllowed(t, run(t, h, hookValidate, evictionRequest("kube-system", "p", bob)))
	other := evictionRequest("team-a", "p", bob)
	other.SubResource = "exec"
	other.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}
	wantAllowed(t, run(t, h, hookValidate, other))
	if calls := authz.reset(); len(calls) != 0 {
		t.Fatalf("authorizer asked: %+v", calls)
	}

	// Fails closed.
	noAuthz := newTestHandler(mustCompile(t, settings.Config{EnforceDeleteACLs: true}))
	wantDenied(t, run(t, noAuthz, hookValidate, evictionRequest("team-a", "p", bob)), 500, "no delete authorizer is configured")
	wantAllowed(t, run(t, noAuthz, hookValidate, evictionRequest("team-a", "p", kubeSystemSA("cluster-autoscaler"))))
	broken := deleteHandler(t, settings.Config{}, &fakeDeleteAuthz{err: errors.New("directory unreachable")})
	wantDenied(t, run(t, broken, hookValidate, evictionRequest("team-a", "p", bob)), 500, "directory unreachable", "usher fails closed")
}

// TestEvictionAuditRecord: the record names the pod and says why.
func TestEvictionAuditRecord(t *testing.T) {
	var got []Record
	h := deleteHandler(t, settings.Config{}, newFakeDeleteAuthz(), WithAudit(func(r Record) { got = append(got, r) }))
	run(t, h, hookValidate, evictionRequest("team-a", "p", kubeSystemSA("cluster-autoscaler")))
	run(t, h, hookValidate, evictionRequest("team-a", "p", bob))
	if len(got) != 4 { // run reviews twice: over HTTP and through the Go API
		t.Fatalf("records %+v", got)
	}
	if r := got[0]; !r.Allowed || r.Kind != "Eviction" || r.Name != "p" || r.Operation != "CREATE" || r.Reason != "eviction by a trusted controller" {
		t.Fatalf("record %+v", r)
	}
	if r := got[2]; r.Allowed || r.Code != 403 || r.Queue != "root" {
		t.Fatalf("record %+v", r)
	}
}

// bindingRequest is a CREATE of pods/binding as the scheduler sends it
// (resource "bindings" when posted to the namespace's bindings), with
// the Binding's own annotations and labels, which the API server copies
// onto the pod.
func bindingRequest(user authenticationv1.UserInfo, labels, annotations map[string]string, legacyResource bool) *admissionv1.AdmissionRequest {
	meta := map[string]any{"name": "p", "namespace": "team-a"}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	obj, err := json.Marshal(map[string]any{"kind": "Binding", "apiVersion": "v1", "metadata": meta,
		"target": map[string]any{"kind": "Node", "name": "worker-1"}})
	if err != nil {
		panic(err)
	}
	req := &admissionv1.AdmissionRequest{
		UID:         "uid-binding",
		Kind:        metav1.GroupVersionKind{Version: "v1", Kind: "Binding"},
		Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		SubResource: "binding",
		Name:        "p",
		Namespace:   "team-a",
		Operation:   admissionv1.Create,
		UserInfo:    user,
		Object:      runtime.RawExtension{Raw: obj},
	}
	if legacyResource {
		req.Resource.Resource, req.SubResource = "bindings", ""
	}
	return req
}

// TestBinding: a Binding's annotations and labels are copied onto the pod
// it binds, after the pod's own reviews. user.info can never arrive that
// way; with enforceDeleteACLs the modify ACL and queue markers only from
// those who may kill every application (the review does not carry the
// pod). A scheduler's plain binding, and the topology labels the API
// server adds to it, pass.
func TestBinding(t *testing.T) {
	authz := newFakeDeleteAuthz()
	authz.queueAdmins["root"] = []string{"rooty"}
	h := deleteHandler(t, settings.Config{}, authz)
	sched := authenticationv1.UserInfo{Username: "system:kube-scheduler", Groups: []string{"system:authenticated"}}
	yk := authenticationv1.UserInfo{Username: "system:serviceaccount:yunikorn:yunikorn-admin", Groups: []string{"system:serviceaccounts"}}
	topo := m("topology.kubernetes.io/zone", "z1", "topology.kubernetes.io/region", "r1")
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("bindings=", legacy), func(t *testing.T) {
			for _, tc := range []struct {
				name        string
				user        authenticationv1.UserInfo
				labels, ann map[string]string
				code        int32 // 0: allowed
				contains    string
			}{
				{"scheduler", sched, nil, nil, 0, ""},
				{"scheduler with topology labels", sched, topo, nil, 0, ""},
				{"yunikorn with its own annotation", yk, nil, m("yunikorn.apache.org/app-id", "a1"), 0, ""},
				{"user.info from the scheduler", sched, nil, m(UserInfoAnnotation, forgedCarol), 403,
					`usher: user "system:kube-scheduler" may not set annotation yunikorn.apache.org/user.info on Pod "team-a/p" through a Binding`},
				{"user.info from system:masters", superuser, nil, m(UserInfoAnnotation, aliceInfo), 403, "cannot change after creation"},
				{"modify ACL", yk, nil, m(settings.DefaultModifyACLAnnotation, "*"), 403,
					`may not set annotation usher.io/modify-acl on Pod "team-a/p" through a Binding`},
				{"queue label", sched, m("queue", "root.bobs"), nil, 403, "may not set label queue on Pod \"team-a/p\" through a Binding"},
				{"queue label by a root admin", authenticationv1.UserInfo{Username: "rooty"}, m("queue", "root.bobs"), nil, 0, ""},
				{"modify ACL by a trusted controller", kcm, nil, m(settings.DefaultModifyACLAnnotation, "*"), 0, ""},
			} {
				resp := run(t, h, hookValidate, bindingRequest(tc.user, tc.labels, tc.ann, legacy))
				if tc.code == 0 {
					if !resp.Allowed {
						t.Errorf("%s: denied: %s", tc.name, resp.Result.Message)
					}
					continue
				}
				if resp.Allowed {
					t.Errorf("%s: allowed, want denied", tc.name)
					continue
				}
				wantDenied(t, resp, tc.code, tc.contains)
			}
		})
	}
	// Off: the kill rule's fields pass, user.info still does not.
	off := newTestHandler(nil)
	wantAllowed(t, run(t, off, hookValidate, bindingRequest(sched, m("queue", "root.bobs"), m(settings.DefaultModifyACLAnnotation, "*"), false)))
	wantDenied(t, run(t, off, hookValidate, bindingRequest(sched, nil, m(UserInfoAnnotation, forgedCarol), false)), 403, "through a Binding")
	// Bypassed namespace.
	req := bindingRequest(sched, nil, m(UserInfoAnnotation, forgedCarol), false)
	req.Namespace = "kube-system"
	wantAllowed(t, run(t, off, hookValidate, req))
	// Malformed.
	req = bindingRequest(sched, nil, nil, false)
	req.Object.Raw = []byte(`{"kind":"Binding","apiVersion":"v1","metadata":{"annotations":[]}}`)
	wantDenied(t, run(t, off, hookValidate, req), 400, "metadata.annotations")
	req.Object.Raw = []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{}}`)
	wantDenied(t, run(t, off, hookValidate, req), 400, `request.object is a "v1" "Pod", want v1 Binding as request.kind says`)
}

// TestBindingQueueMarker: with enforceQueueACLs, a Binding carrying a
// queue marker would move the pod into a queue nobody checked against its
// identity (the review does not carry the pod; an UPDATE of the pod's
// label is checked): refused for everyone, trusted controllers,
// system:masters and root admins included, with enforceDeleteACLs or
// without; warned in warn mode. TestFuzz found it: a trusted external user
// bound erin's pod with the label queue=root.dev, a queue erin may not use.
func TestBindingQueueMarker(t *testing.T) {
	authz := newFakeDeleteAuthz()
	authz.queueAdmins["root"] = []string{"rooty"}
	sched := authenticationv1.UserInfo{Username: "system:kube-scheduler", Groups: []string{"system:authenticated"}}
	queue := m("queue", "root.bobs")
	for name, c := range map[string]settings.Config{
		"queue":            {EnforceQueueACLs: true},
		"queue and delete": {EnforceQueueACLs: true, EnforceDeleteACLs: true},
	} {
		h := newTestHandler(mustCompile(t, c), WithDeleteAuthorizer(authz))
		for _, u := range []authenticationv1.UserInfo{kcm, superuser, {Username: "rooty"}} {
			t.Run(name+"/"+u.Username, func(t *testing.T) {
				wantDenied(t, run(t, h, hookValidate, bindingRequest(u, queue, nil, false)), 403,
					`may not set label queue on Pod "team-a/p" through a Binding: with enforceQueueACLs on`)
				wantAllowed(t, run(t, h, hookValidate, bindingRequest(u, m("topology.kubernetes.io/zone", "z1"), nil, true)))
			})
		}
		wantDenied(t, run(t, h, hookValidate, bindingRequest(sched, queue, nil, true)), 403, "through a Binding")
	}
	warn := newTestHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true, EnforceQueueACLsMode: settings.ModeWarn}))
	resp := run(t, warn, hookValidate, bindingRequest(sched, queue, nil, false))
	wantAllowed(t, resp)
	if !slices.ContainsFunc(resp.Warnings, func(w string) bool { return strings.Contains(w, "through a Binding") }) {
		t.Errorf("warn mode: warnings %q, want the Binding's refusal", resp.Warnings)
	}
}
