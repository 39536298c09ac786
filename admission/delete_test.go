package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/usherhq/usher/admission/settings"
)

// fakeDeleteAuthz is a hand-written DeleteAuthorizer applying a small kill
// rule (owner, modify ACL "users groups", queue admins, cluster admins) and
// recording every call.
type fakeDeleteAuthz struct {
	mu            sync.Mutex
	queueAdmins   map[string][]string // queue ("" = default) -> users
	clusterAdmins []string
	err           error
	calls         []deleteCall
}

type deleteCall struct {
	partition, queue, owner, modifyACL, user string
	groups                                   []string
}

func (f *fakeDeleteAuthz) AuthorizeDelete(_ context.Context, req DeleteRequest) (bool, string, error) {
	partition, queue, owner, user, groups := req.Partition, req.Queue, req.Owner, req.User, req.Groups
	modifyACL := "" // the calls record an ACL set to "" as " ", both allowing nobody
	if req.ModifyACL != nil {
		if modifyACL = *req.ModifyACL; modifyACL == "" {
			modifyACL = " "
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, deleteCall{partition, queue, owner, modifyACL, user, append([]string(nil), groups...)})
	if f.err != nil {
		return false, "", f.err
	}
	switch {
	case owner != "" && user == owner:
		return true, user + " owns it", nil
	case inYARNACL(modifyACL, user, groups):
		return true, user + " is in its modify ACL", nil
	case slices.Contains(f.queueAdmins[queue], user):
		return true, user + " administers " + queue, nil
	case slices.Contains(f.clusterAdmins, user):
		return true, user + " is a cluster admin", nil
	}
	return false, fmt.Sprintf("%s may not kill the application of %s in %q", user, owner, queue), nil
}

func (f *fakeDeleteAuthz) reset() []deleteCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

// inYARNACL is a minimal YARN ACL check for the fake: "*", or "u1,u2 g1,g2".
func inYARNACL(text, user string, groups []string) bool {
	if strings.TrimSpace(text) == "*" {
		return true
	}
	users, grps, _ := strings.Cut(text, " ")
	if slices.Contains(strings.Split(users, ","), user) {
		return true
	}
	for _, g := range strings.Split(grps, ",") {
		if g != "" && slices.Contains(groups, g) {
			return true
		}
	}
	return false
}

// Identities of the kill-rule tests.
var (
	carol     = authenticationv1.UserInfo{Username: "carol", Groups: []string{"data-eng", "system:authenticated"}}
	dave      = authenticationv1.UserInfo{Username: "dave", Groups: []string{"system:authenticated"}}
	erin      = authenticationv1.UserInfo{Username: "erin", Groups: []string{"system:authenticated"}}
	superuser = authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:masters", "system:authenticated"}}
)

// kubeSystemSA is a controller acting as its own service account.
func kubeSystemSA(name string) authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
}

// deleteRequest builds a DELETE as the API server sends it: object null,
// oldObject the object being deleted, options a DeleteOptions.
func deleteRequest(t testing.TB, kc kindCase, ns string, user authenticationv1.UserInfo, old runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	req := request(t, kc, admissionv1.Delete, ns, user, nil, old)
	req.Options.Raw = []byte(`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`)
	return req
}

func deleteHandler(t testing.TB, c settings.Config, authz *fakeDeleteAuthz, opts ...Option) *Handler {
	t.Helper()
	c.EnforceDeleteACLs = true
	return NewHandler(mustCompile(t, c), append([]Option{WithDeleteAuthorizer(authz)}, opts...)...)
}

func newFakeDeleteAuthz() *fakeDeleteAuthz {
	return &fakeDeleteAuthz{
		queueAdmins:   map[string][]string{"root.team-a": {"dave"}, "": {"frank"}},
		clusterAdmins: []string{"erin"},
	}
}

// TestDeleteDisabled: without enforceDeleteACLs (the default) a DELETE
// passes untouched, and the authorizer is never asked.
func TestDeleteDisabled(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := NewHandler(nil, WithDeleteAuthorizer(authz))
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			old := kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
			for _, hook := range []hookKind{hookMutate, hookValidate} {
				resp := run(t, h, hook, deleteRequest(t, kc, "team-a", bob, old))
				if !resp.Allowed || resp.Patch != nil || resp.Warnings != nil {
					t.Fatalf("%v: %+v", hook, resp)
				}
			}
			// Even a body /validate could not read is none of its business.
			req := deleteRequest(t, kc, "team-a", bob, nil)
			req.OldObject.Raw = []byte(`{"kind":"Secret"}`)
			wantAllowed(t, run(t, h, hookValidate, req))
		})
	}
	if calls := authz.reset(); len(calls) != 0 {
		t.Fatalf("authorizer asked %d times while enforceDeleteACLs is off", len(calls))
	}
}

// TestDeleteKillRule: owner, modify-ACL members (by user or group), queue
// admins and cluster admins may delete, on every kind; a stranger is
// denied with the authorizer's reason.
func TestDeleteKillRule(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz)
	ann := m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "carol,zoe ops")
	labels := m("queue", "root.team-a")
	cases := []struct {
		name    string
		user    authenticationv1.UserInfo
		allowed bool
		by      string
	}{
		{"owner", alice, true, "owns it"},
		{"modify ACL user", carol, true, "modify ACL"},
		{"modify ACL group", authenticationv1.UserInfo{Username: "oscar", Groups: []string{"ops"}}, true, "modify ACL"},
		{"queue admin", dave, true, "administers root.team-a"},
		{"cluster admin", erin, true, "cluster admin"},
		{"stranger", bob, false, `bob may not kill the application of alice@EXAMPLE.COM in "root.team-a"`},
		{"admin of another queue", authenticationv1.UserInfo{Username: "frank"}, false, "frank may not kill"},
	}
	for _, kc := range kindCases {
		for _, tc := range cases {
			t.Run(kc.kind+"/"+tc.name, func(t *testing.T) {
				authz.reset()
				req := deleteRequest(t, kc, "team-a", tc.user, kc.build(labels, ann, nil))
				resp := run(t, h, hookValidate, req)
				if tc.allowed {
					wantAllowed(t, resp)
				} else {
					wantDenied(t, resp, 403, fmt.Sprintf("usher: user %q may not delete %s \"team-a/obj\": ", tc.user.Username, kc.kind), tc.by)
				}
				calls := authz.reset()
				want := deleteCall{settings.DefaultPartition, "root.team-a", alice.Username, "carol,zoe ops", tc.user.Username, tc.user.Groups}
				if len(calls) != 2 || !deleteCallEqual(calls[0], want) || !deleteCallEqual(calls[1], want) {
					t.Fatalf("calls %+v, want twice %+v", calls, want)
				}
			})
		}
	}
}

func deleteCallEqual(a, b deleteCall) bool {
	return a.partition == b.partition && a.queue == b.queue && a.owner == b.owner && a.modifyACL == b.modifyACL &&
		a.user == b.user && slices.Equal(a.groups, b.groups)
}

// TestDeleteTrusted: the cluster's controllers (per-controller service
// accounts and the shared controller-manager user), trusted front ends and
// system:masters delete without the kill rule, so garbage collection, Job
// and ReplicaSet cleanup and namespace deletion keep working.
func TestDeleteTrusted(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{AccessControl: settings.AccessControl{
		ExternalUsers: settings.Patterns{"^system:serviceaccount:airflow:scheduler$"}, ExternalGroups: settings.Patterns{"^submitters$"}}}, authz)
	var users []authenticationv1.UserInfo
	for _, c := range []string{"generic-garbage-collector", "job-controller", "cronjob-controller", "ttl-after-finished-controller",
		"replicaset-controller", "node-controller", "pod-garbage-collector", "namespace-controller", "statefulset-controller",
		"daemon-set-controller", "deployment-controller", "replication-controller"} {
		users = append(users, kubeSystemSA(c))
	}
	users = append(users, kcm, airflow, livyMember, superuser)
	for _, kc := range kindCases {
		old := kc.build(m("queue", "root.team-a"), m(UserInfoAnnotation, aliceInfo), nil)
		for _, u := range users {
			t.Run(kc.kind+"/"+u.Username, func(t *testing.T) {
				wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", u, old)))
			})
		}
	}
	if calls := authz.reset(); len(calls) != 0 {
		t.Fatalf("the kill rule was asked for trusted deleters: %+v", calls[0])
	}

	// Without trustControllers, controllers are subject to the rule.
	h = deleteHandler(t, settings.Config{AccessControl: settings.AccessControl{TrustControllers: boolPtr(false)}}, authz)
	kc := kindCaseOf(t, "Pod")
	req := deleteRequest(t, kc, "team-a", kubeSystemSA("generic-garbage-collector"), kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil))
	wantDenied(t, run(t, h, hookValidate, req), 403, "generic-garbage-collector may not kill")
	// Anchored patterns: a look-alike is not trusted.
	req = deleteRequest(t, kc, "team-a", authenticationv1.UserInfo{Username: "system:kube-controller-manager-evil"}, kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil))
	wantDenied(t, run(t, deleteHandler(t, settings.Config{}, authz), hookValidate, req), 403)
}

// TestDeleteTerminating: an object that already has a deletionTimestamp
// may be deleted again by anyone (the kubelet's final delete of a
// terminated pod; the DELETE that began it was checked).
func TestDeleteTerminating(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz)
	node := authenticationv1.UserInfo{Username: "system:node:worker-1", Groups: []string{"system:nodes", "system:authenticated"}}
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			obj := kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
			now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			obj.(metav1.Object).SetDeletionTimestamp(&now)
			wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", node, obj)))
			// The same object before deletion began: the node is a stranger.
			obj.(metav1.Object).SetDeletionTimestamp(nil)
			wantDenied(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", node, obj)), 403, "system:node:worker-1 may not kill")
		})
	}
}

// TestDeleteOwnerless: an object without a valid user.info has no owner:
// the authorizer is asked with owner "", the denial says why, and admins
// and modify-ACL members still may delete it.
func TestDeleteOwnerless(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz)
	cases := []struct {
		name, note string
		ann        map[string]string
	}{
		{"no user.info", "it has no annotation yunikorn.apache.org/user.info (created before usher?), so it has no recorded owner", nil},
		{"invalid user.info", `its annotation yunikorn.apache.org/user.info is not valid ("user" is missing or empty), so it has no recorded owner`,
			m(UserInfoAnnotation, `{"user":""}`)},
	}
	for _, kc := range kindCases {
		for _, tc := range cases {
			t.Run(kc.kind+"/"+tc.name, func(t *testing.T) {
				old := kc.build(nil, tc.ann, nil)
				wantDenied(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", alice, old)), 403, tc.note)
				calls := authz.reset()
				if calls[0].owner != "" || calls[0].queue != "" {
					t.Fatalf("call %+v, want no owner and the default queue", calls[0])
				}
				wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", erin, old)))
				wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", authenticationv1.UserInfo{Username: "frank"}, old)))
			})
		}
	}
	// With bypassAuth the legacy label names the owner.
	authz.reset()
	h = deleteHandler(t, settings.Config{AccessControl: settings.AccessControl{BypassAuth: true}}, authz)
	kc := kindCaseOf(t, "Pod")
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", bob, kc.build(m(LegacyUserLabel, "bob"), nil, nil))))
	if calls := authz.reset(); calls[0].owner != "bob" {
		t.Fatalf("owner %q, want the legacy label's bob", calls[0].owner)
	}
	// Without bypassAuth it does not.
	h = deleteHandler(t, settings.Config{}, authz)
	wantDenied(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", bob, kc.build(m(LegacyUserLabel, "bob"), nil, nil))), 403)
}

// TestDeleteModifyACLAnnotation: the modify ACL is read where user.info
// is (pod or pod template), from the configured key; absent is "", set
// but empty is " " (nobody).
func TestDeleteModifyACLAnnotation(t *testing.T) {
	authz := newFakeDeleteAuthz()
	cases := []struct {
		name      string
		cfg       settings.Config
		podAnn    map[string]string
		wantACL   string
		wantAllow bool
	}{
		{"absent", settings.Config{}, m(UserInfoAnnotation, aliceInfo), "", false},
		{"empty", settings.Config{}, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, ""), " ", false},
		{"member", settings.Config{}, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "bob"), "bob", true},
		{"wildcard", settings.Config{}, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "*"), "*", true},
		{"other key configured", settings.Config{ModifyACLAnnotation: "example.com/kill-acl"},
			m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "bob", "example.com/kill-acl", "carol"), "carol", false},
	}
	for _, kc := range kindCases {
		for _, tc := range cases {
			t.Run(kc.kind+"/"+tc.name, func(t *testing.T) {
				h := deleteHandler(t, tc.cfg, authz)
				resp := run(t, h, hookValidate, deleteRequest(t, kc, "team-a", bob, kc.build(nil, tc.podAnn, nil)))
				if resp.Allowed != tc.wantAllow {
					t.Fatalf("allowed = %v: %+v", resp.Allowed, resp.Result)
				}
				if calls := authz.reset(); calls[0].modifyACL != tc.wantACL {
					t.Fatalf("modifyACL %q, want %q", calls[0].modifyACL, tc.wantACL)
				}
			})
		}
	}
	// On a workload only the pod template's annotation counts, like user.info.
	dk := kindCaseOf(t, "Deployment")
	dep := dk.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
	dep.(metav1.Object).SetAnnotations(m(settings.DefaultModifyACLAnnotation, "bob"))
	h := deleteHandler(t, settings.Config{}, authz)
	wantDenied(t, run(t, h, hookValidate, deleteRequest(t, dk, "team-a", bob, dep)), 403)
}

// TestDeleteQueues: every queue the object names counts (an admin of any
// may delete), the default queue without a marker, root when a marker maps
// to no queue.
func TestDeleteQueues(t *testing.T) {
	authz := &fakeDeleteAuthz{queueAdmins: map[string][]string{"root.team-a.gpu": {"dave"}, "root": {"rooty"}}}
	h := deleteHandler(t, settings.Config{QueueSources: []settings.QueueSource{
		{Kind: "label", Key: "queue", Scheduler: "yunikorn"},
		{Kind: "label", Key: "kueue.x-k8s.io/queue-name", Scheduler: "kueue", Template: "root.{namespace}.{value}"},
	}}, authz)
	dk := kindCaseOf(t, "Deployment")
	two := dk.build(m("queue", "root.batch", "kueue.x-k8s.io/queue-name", "gpu"), m(UserInfoAnnotation, aliceInfo), nil)
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, dk, "team-a", dave, two)))
	calls := authz.reset()
	if len(calls) != 4 || calls[0].queue != "root.batch" || calls[1].queue != "root.team-a.gpu" {
		t.Fatalf("calls %+v, want root.batch then root.team-a.gpu, twice", calls)
	}
	// A denial reports the first queue's reason.
	wantDenied(t, run(t, h, hookValidate, deleteRequest(t, dk, "team-a", bob, two)), 403, `in "root.batch"`)
	authz.reset()

	// A marker on the workload itself counts too.
	own := dk.build(nil, m(UserInfoAnnotation, aliceInfo), m("kueue.x-k8s.io/queue-name", "gpu"))
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, dk, "team-a", dave, own)))

	// A marker that maps to no queue: root's admins.
	bad := dk.build(m("queue", "root..x"), m(UserInfoAnnotation, aliceInfo), nil)
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, dk, "team-a", authenticationv1.UserInfo{Username: "rooty"}, bad)))
	wantDenied(t, run(t, h, hookValidate, deleteRequest(t, dk, "team-a", dave, bad)), 403,
		`label queue="root..x" on the pod template maps to no queue`, "only admins of root count")
	authz.reset()

	// Markers are read for deletes even with enforceQueueACLs off, and the
	// queue check itself stays off for CREATE.
	pk := kindCaseOf(t, "Pod")
	wantAllowed(t, run(t, h, hookMutate, request(t, pk, admissionv1.Create, "team-a", alice, pk.build(m("queue", "root.forbidden"), nil, nil), nil)))
}

// TestDeleteFailsClosed: no authorizer, or an authorizer error, denies.
func TestDeleteFailsClosed(t *testing.T) {
	kc := kindCaseOf(t, "Job")
	old := kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
	h := NewHandler(mustCompile(t, settings.Config{EnforceDeleteACLs: true}))
	wantDenied(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", alice, old)), 500,
		`enforceDeleteACLs is on but no delete authorizer is configured: user "alice@EXAMPLE.COM" may not delete Job "team-a/obj"`)
	// Trusted controllers do not need the authorizer.
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", jobCtrl, old)))

	authz := &fakeDeleteAuthz{err: errors.New("directory unreachable")}
	h = deleteHandler(t, settings.Config{}, authz)
	wantDenied(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", alice, old)), 500,
		`cannot decide whether user "alice@EXAMPLE.COM" may delete Job "team-a/obj": directory unreachable; denied (usher fails closed)`)
}

// TestDeleteMalformed: an oldObject that is missing or is not the kind
// request.kind names is denied with a message saying what is wrong.
func TestDeleteMalformed(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz)
	kc := kindCaseOf(t, "Pod")
	cases := []struct {
		name, old, want string
	}{
		{"missing", "", "usher: cannot tell who may delete Pod \"team-a/obj\": request.oldObject is empty: want a Pod"},
		{"wrong kind", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"obj"}}`, `request.oldObject is a "v1" "Secret", want v1 Pod`},
		{"not an object", `[1,2]`, "request.oldObject is not a JSON object"},
		{"bad labels", `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"queue":7}}}`, `metadata.labels["queue"]: found a number, want a string`},
		{"bad deletionTimestamp", `{"apiVersion":"v1","kind":"Pod","metadata":{"deletionTimestamp":5}}`, "metadata.deletionTimestamp"},
		{"duplicate user.info", `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"bob\"}","yunikorn.apache.org/user.info":"{\"user\":\"alice\"}"}}}`,
			"duplicate key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := deleteRequest(t, kc, "team-a", bob, nil)
			if tc.old != "" {
				req.OldObject.Raw = []byte(tc.old)
			}
			wantDenied(t, run(t, h, hookValidate, req), 400, tc.want)
		})
	}
	if calls := authz.reset(); len(calls) != 0 {
		t.Fatalf("authorizer asked about a malformed object: %+v", calls)
	}
}

// TestDeleteNamespaces: namespace filtering applies as for CREATE.
func TestDeleteNamespaces(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{ProcessNamespaces: settings.Patterns{"^team-"}}, authz)
	kc := kindCaseOf(t, "Pod")
	old := kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "kube-system", bob, old)))
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "monitoring", bob, old)))
	if calls := authz.reset(); len(calls) != 0 {
		t.Fatalf("authorizer asked about a bypassed namespace")
	}
	wantDenied(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-b", bob, old)), 403)
}

// TestUpdateModifyACL: with enforceDeleteACLs, only those who may delete a
// workload may add, change or remove its modify ACL; other updates pass.
func TestUpdateModifyACL(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz)
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			before := kc.build(nil, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "carol"), nil)
			cases := []struct {
				name    string
				user    authenticationv1.UserInfo
				after   runtime.Object
				allowed bool
			}{
				{"stranger adds himself", bob, kc.build(nil, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "carol,bob"), nil), false},
				{"stranger removes it", bob, kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil), false},
				{"stranger other change", bob, kc.build(m("app", "x"), m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "carol"), nil), true},
				{"owner widens it", alice, kc.build(nil, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "*"), nil), true},
				{"member changes it", carol, kc.build(nil, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "carol,bob"), nil), true},
				{"controller", depCtrl, kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil), true},
			}
			for _, tc := range cases {
				req := request(t, kc, admissionv1.Update, "team-a", tc.user, tc.after, before)
				resp := run(t, h, hookValidate, req)
				if tc.allowed {
					wantAllowed(t, resp)
					continue
				}
				wantDenied(t, resp, 403, fmt.Sprintf("usher: user %q may not change annotation usher.io/modify-acl on %s \"team-a/obj\": ", tc.user.Username, kc.kind))
			}
		})
	}
	// Off: changing it is an ordinary update.
	kc := kindCaseOf(t, "Pod")
	off := NewHandler(nil)
	req := request(t, kc, admissionv1.Update, "team-a", bob,
		kc.build(nil, m(UserInfoAnnotation, aliceInfo, settings.DefaultModifyACLAnnotation, "bob"), nil), kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil))
	wantAllowed(t, run(t, off, hookValidate, req))
}

// TestDeleteAuditRecord: the record names the owner and the queue.
func TestDeleteAuditRecord(t *testing.T) {
	var got []Record
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz, WithAudit(func(r Record) { got = append(got, r) }))
	kc := kindCaseOf(t, "Pod")
	old := kc.build(m("queue", "root.team-a"), m(UserInfoAnnotation, aliceInfo), nil)
	run(t, h, hookValidate, deleteRequest(t, kc, "team-a", dave, old))
	run(t, h, hookValidate, deleteRequest(t, kc, "team-a", bob, old))
	run(t, h, hookValidate, deleteRequest(t, kc, "team-a", rsCtrl, old))
	if r := got[0]; !r.Allowed || r.Operation != "DELETE" || r.Identity != alice.Username || r.Queue != "root.team-a" || r.Reason != "dave administers root.team-a" {
		t.Fatalf("record %+v", r)
	}
	if r := got[2]; r.Allowed || r.Code != 403 || r.Identity != alice.Username || !strings.Contains(r.Reason, "bob may not kill") {
		t.Fatalf("record %+v", r)
	}
	if r := got[4]; !r.Allowed || r.Rule != RuleTrustedDeleter || r.Trust != TrustController || r.Reason != "delete by a trusted controller" {
		t.Fatalf("record %+v", r)
	}
}

// TestStoreKeepsDeleteAuthorizer: a reload (Store) keeps the delete
// authorizer.
func TestStoreKeepsDeleteAuthorizer(t *testing.T) {
	authz := newFakeDeleteAuthz()
	h := NewHandler(nil, WithDeleteAuthorizer(authz))
	if err := h.Store(mustCompile(t, settings.Config{EnforceDeleteACLs: true}), nil); err != nil {
		t.Fatal(err)
	}
	kc := kindCaseOf(t, "Pod")
	wantAllowed(t, run(t, h, hookValidate, deleteRequest(t, kc, "team-a", alice, kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil))))
	if calls := authz.reset(); len(calls) != 2 {
		t.Fatalf("authorizer asked %d times, want 2", len(calls))
	}
}

// TestDeleteTestdataReviews drives /validate with DELETE reviews recorded
// from a real kube-apiserver and kube-controller-manager (v1.35.4): users
// deleting pods and workloads, the garbage collector, ReplicaSet
// scale-down, namespace deletion, a second DELETE of a terminating pod.
func TestDeleteTestdataReviews(t *testing.T) {
	authz := &fakeDeleteAuthz{}
	h := deleteHandler(t, settings.Config{}, authz)
	cases := []struct {
		file     string
		allowed  bool
		contains string
		call     *deleteCall // the first authorizer call, nil for none
	}{
		// bob (group ops) deletes alice's pod; its modify ACL is "carol ops".
		{"pod-delete-modify-acl-member.json", true, "", &deleteCall{"default", "root.team-a", "alice", "carol ops", "bob", []string{"ops", "system:authenticated"}}},
		// carol deletes alice's pod (label queue=team-a).
		{"pod-delete-stranger.json", false, `usher: user "carol" may not delete Pod "e2e/p3": carol may not kill the application of alice in "root.team-a"`,
			&deleteCall{"default", "root.team-a", "alice", "", "carol", []string{"spark-submitters", "system:authenticated"}}},
		// The third call of bob's DELETE: the pod is already terminating.
		{"pod-delete-terminating.json", true, "", nil},
		// alice deletes a pod that has no user.info (created before usher).
		{"pod-delete-no-userinfo.json", false, "so it has no recorded owner", &deleteCall{"default", "", "", "", "alice", []string{"dev", "system:authenticated"}}},
		{"deployment-delete-owner.json", true, "", &deleteCall{"default", "root.gpu", "alice", "", "alice", []string{"dev", "system:authenticated"}}},
		// carol deletes alice's Deployment, whose template's modify ACL is "bob".
		{"deployment-delete-stranger.json", false, `may not delete Deployment "e2e/api": carol may not kill`, &deleteCall{"default", "", "alice", "bob", "carol", []string{"spark-submitters", "system:authenticated"}}},
		{"job-delete-owner.json", true, "", &deleteCall{"default", "", "alice", "", "alice", []string{"dev", "system:authenticated"}}},
		{"cronjob-delete-owner.json", true, "", &deleteCall{"default", "", "alice", "", "alice", []string{"dev", "system:authenticated"}}},
		{"pod-delete-garbage-collector.json", true, "", nil},
		{"replicaset-delete-garbage-collector.json", true, "", nil},
		{"pod-delete-replicaset-scaledown.json", true, "", nil},
		{"job-delete-namespace-controller.json", true, "", nil},
		{"pod-delete-masters.json", true, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			authz.reset()
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var in admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &in); err != nil {
				t.Fatal(err)
			}
			if in.Request.Operation != admissionv1.Delete || in.Request.Object.Raw != nil || in.Request.OldObject.Raw == nil {
				t.Fatalf("not a DELETE review with an oldObject")
			}
			rec := post(t, h.ValidateHTTP(), "application/json", body)
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != 200 {
				t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
			}
			resp := out.Response
			if resp.UID != in.Request.UID || resp.Allowed != tc.allowed || resp.Patch != nil {
				t.Fatalf("response %+v %+v", resp, resp.Result)
			}
			if !tc.allowed && (resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, tc.contains)) {
				t.Fatalf("status %+v, want 403 containing %q", resp.Result, tc.contains)
			}
			calls := authz.reset()
			switch {
			case tc.call == nil && len(calls) != 0:
				t.Fatalf("authorizer asked: %+v", calls)
			case tc.call != nil && (len(calls) == 0 || !deleteCallEqual(calls[0], *tc.call)):
				t.Fatalf("calls %+v, want first %+v", calls, *tc.call)
			}
		})
	}
}

// TestDeleteCollectionAuditName: a collection delete (a namespace being
// emptied) sends reviews without request.name; the audit record takes the
// name from the deleted object, for trusted and decided deletes alike.
func TestDeleteCollectionAuditName(t *testing.T) {
	var got []Record
	h := deleteHandler(t, settings.Config{}, newFakeDeleteAuthz(), WithAudit(func(r Record) { got = append(got, r) }))
	kc := kindCaseOf(t, "Pod")
	old := kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
	for _, user := range []authenticationv1.UserInfo{rsCtrl, bob} {
		req := deleteRequest(t, kc, "team-a", user, old)
		name := req.Name
		req.Name = ""
		got = got[:0]
		run(t, h, hookValidate, req)
		if len(got) == 0 || got[0].Name != name || name == "" {
			t.Fatalf("%s: record names %q, want %q", user.Username, got[0].Name, name)
		}
	}
}
