package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/admission/settings"
)

// localQueues answers a ClusterQueueLookup from namespace/name -> ClusterQueue.
func localQueues(lqs map[string]string, err error) Option {
	return WithClusterQueueLookup(func(_ context.Context, ns, name string) (string, bool, error) {
		cq, ok := lqs[ns+"/"+name]
		return cq, ok, err
	})
}

// A Job's kueue.x-k8s.io/queue-name names a LocalQueue: it is checked on
// the queue the LocalQueue's ClusterQueue maps to, not on one named like
// the LocalQueue. A LocalQueue that does not exist is refused (whoever
// creates it later would choose the Job's ClusterQueue); one that cannot
// be read fails closed.
func TestKueueMarkerMapsThroughItsLocalQueue(t *testing.T) {
	lqs := map[string]string{"team-a/team": "research", "team-a/ops": "prod"}
	job := kindCaseOf(t, "Job")
	submit := func(h *Handler, lq string) *admissionv1.AdmissionResponse {
		return run(t, h, hookMutate, request(t, job, admissionv1.Create, "team-a", alice, job.build(m("kueue.x-k8s.io/queue-name", lq), nil, nil), nil))
	}
	// alice may use root.research, and root.team, named like her LocalQueue.
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.research", "root.team", ""}}}
	cfg := mustCompile(t, settings.Config{EnforceQueueACLs: true})
	h := newTestHandler(cfg, WithAuthorizer(authz), localQueues(lqs, nil))
	wantAllowed(t, submit(h, "team"))
	if got := once(t, authz.queues()); !reflect.DeepEqual(got, []string{"root.research", ""}) {
		t.Fatalf("queues checked %q, want root.research and the default queue", got)
	}
	wantDenied(t, submit(h, "ops"), 403, `queue "root.prod"`, `label kueue.x-k8s.io/queue-name="ops" on the pod template, read for kueue, whose LocalQueue uses ClusterQueue "prod"`)
	wantDenied(t, submit(h, "gone"), 400, `names LocalQueue "team-a/gone", which does not exist`)
	wantDenied(t, submit(newTestHandler(cfg, WithAuthorizer(authz), localQueues(nil, errors.New("forbidden"))), "team"), 500,
		`cannot read LocalQueue "team-a/team": forbidden`)
	// Without a lookup (no cluster) the marker maps by name, as before.
	wantAllowed(t, submit(newTestHandler(cfg, WithAuthorizer(authz)), "team"))
	// An update that changes no marker records the LocalQueue's queue too.
	var rec Record
	h = newTestHandler(cfg, WithAuthorizer(authz), localQueues(lqs, nil), WithAudit(func(r Record) { rec = r }))
	obj := job.build(m("kueue.x-k8s.io/queue-name", "team"), nil, nil)
	wantAllowed(t, run(t, h, hookValidate, request(t, job, admissionv1.Update, "team-a", alice, obj, obj)))
	if rec.Queue != "root.research" {
		t.Errorf("the update's record names queue %q, want root.research", rec.Queue)
	}
}

// Creating a LocalQueue, or changing its ClusterQueue, needs submit on the
// queue the ClusterQueue maps to, the queue of every Job naming it; an
// update that keeps it, and system:masters, are not asked.
func TestLocalQueueWriteNeedsSubmitOnItsQueue(t *testing.T) {
	lq := func(op admissionv1.Operation, user string, cq, was string) *admissionv1.AdmissionRequest {
		req := &admissionv1.AdmissionRequest{UID: "lq", Kind: metav1.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "LocalQueue"},
			Resource: metav1.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"},
			Name:     "team", Namespace: "team-a", Operation: op, UserInfo: alice}
		if user == "masters" {
			req.UserInfo = superuser
		}
		req.Object.Raw = []byte(`{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","spec":{"clusterQueue":"` + cq + `"}}`)
		if was != "" {
			req.OldObject.Raw = []byte(`{"spec":{"clusterQueue":"` + was + `"}}`)
		}
		return req
	}
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.research"}}}
	h := newTestHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}), WithAuthorizer(authz))
	wantAllowed(t, run(t, h, hookValidate, lq(admissionv1.Create, "alice", "research", "")))
	wantDenied(t, run(t, h, hookValidate, lq(admissionv1.Create, "alice", "prod", "")), 403,
		`usher: user "alice@EXAMPLE.COM" may not point LocalQueue "team-a/team" at ClusterQueue "prod": it maps to queue "root.prod"`)
	wantDenied(t, run(t, h, hookValidate, lq(admissionv1.Update, "alice", "prod", "research")), 403, `ClusterQueue "prod"`)
	before := len(authz.queues())
	wantAllowed(t, run(t, h, hookValidate, lq(admissionv1.Update, "alice", "prod", "prod")))
	wantAllowed(t, run(t, h, hookValidate, lq(admissionv1.Create, "masters", "prod", "")))
	if len(authz.queues()) != before {
		t.Errorf("an unchanged ClusterQueue or system:masters was asked about: %q", authz.queues()[before:])
	}
	warn := newTestHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true, EnforceQueueACLsMode: "warn"}), WithAuthorizer(authz))
	if resp := run(t, warn, hookValidate, lq(admissionv1.Create, "alice", "prod", "")); !resp.Allowed || len(resp.Warnings) == 0 {
		t.Errorf("warn mode: allowed %v, warnings %q", resp.Allowed, resp.Warnings)
	}
	off := newTestHandler(mustCompile(t, settings.Config{}), WithAuthorizer(authz))
	wantAllowed(t, run(t, off, hookValidate, lq(admissionv1.Create, "alice", "prod", "")))
}

// The lookup of the Namespace's yunikorn.apache.org/parentqueue reaches
// the placement of a YuniKorn marker (SubmitRequest.ParentQueue), which
// reads it when its rules do; a failed read fails closed.
func TestParentQueueReachesPlacement(t *testing.T) {
	pod := kindCaseOf(t, "Pod")
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.web"}}}
	h := newTestHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}), WithAuthorizer(authz),
		WithParentQueueLookup(func(_ context.Context, ns string) (string, error) { return "root.prod." + ns, nil }))
	req := request(t, pod, admissionv1.Create, "team-a", alice, pod.build(m("queue", "web"), nil, nil), nil)
	wantAllowed(t, run(t, h, hookMutate, req))
	r := authz.reqs[0]
	if pq, _ := r.ParentQueue(context.Background(), r.Namespace); !r.Place || pq != "root.prod.team-a" {
		t.Errorf("request %+v reads parent queue %q, want a placement reading root.prod.team-a", r, pq)
	}
	authz.err = errors.New(`cannot read Namespace "team-a" for tag namespace.parentqueue: timeout`)
	wantDenied(t, run(t, h, hookMutate, req), 500, `cannot read Namespace "team-a" for tag namespace.parentqueue: timeout; denied (usher fails closed)`)
}

// With enforceQueueACLs, validate.usher.io receives LocalQueue CREATE and
// UPDATE in both versions Kueue serves; without, it does not.
func TestRegistrationSendsLocalQueues(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		_, v := Registration(settings.Config{EnforceQueueACLs: enforce}, Install{})
		var got []string
		for _, r := range v.Webhooks[0].Rules {
			if slices.Contains(r.APIGroups, "kueue.x-k8s.io") {
				got = append(got, fmt.Sprint(r.APIVersions, r.Resources, r.Operations))
			}
		}
		want := []string(nil)
		if enforce {
			want = []string{"[v1beta1 v1beta2] [localqueues] [CREATE UPDATE]"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("enforceQueueACLs %v: LocalQueue rules %q, want %q", enforce, got, want)
		}
	}
}
