package admission

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/usherhq/usher/admission/settings"
)

// What a user allowed only on queue root.a tries, to get pods into a queue
// she may not use (the default queue, or root.b): every case is decided on
// the queue the scheduler will run the pods in.
func TestQueueIsWherePodsRun(t *testing.T) {
	const yk, ykCanon, ykAnn, kueue, volcano = "queue", "yunikorn.apache.org/queue", "yunikorn.apache.org/queue", "kueue.x-k8s.io/queue-name", "scheduling.volcano.sh/queue-name"
	cases := []struct {
		name            string
		podL, podA, top map[string]string
		allow           bool
		want            []string // the denial names these
	}{
		{"marker on the workload only", nil, nil, m(yk, "root.a"), false,
			[]string{"default queue", "carries no yunikorn queue marker, so yunikorn runs its pods there"}},
		{"canonical label on the workload only", nil, nil, m(ykCanon, "root.a"), false, []string{"default queue"}},
		{"marker on the template only", m(yk, "root.a"), nil, nil, true, nil},
		{"allowed on top, forbidden on the template", m(yk, "root.b"), nil, m(yk, "root.a"), false,
			[]string{`queue "root.b"`, `label queue="root.b" on the `, `pod template`}},
		{"forbidden on top, allowed on the template: the template decides", m(yk, "root.a"), nil, m(yk, "root.b"), true, nil},
		{"YuniKorn's markers disagree: canonical label", m(yk, "root.a", ykCanon, "root.b"), nil, nil, false,
			[]string{`queue "root.b"`, `label yunikorn.apache.org/queue="root.b"`}},
		{"YuniKorn's markers disagree: annotation", m(yk, "root.a"), m(ykAnn, "root.b"), nil, false,
			[]string{`queue "root.b"`, `annotation yunikorn.apache.org/queue="root.b"`}},
		{"another scheduler's marker hides the default queue", nil, nil, m(kueue, "root.a"), false, []string{"default queue"}},
		{"another scheduler's marker on the pods hides the default queue", nil, m(volcano, "root.a"), nil, false, []string{"default queue"}},
		{"schedulers disagree", m(yk, "root.a"), nil, m(kueue, "root.b"), false, []string{`queue "root.b"`, "read for kueue"}},
		{"every scheduler agrees", m(yk, "root.a"), m(volcano, "root.a"), m(kueue, "root.a"), true, nil},
		{"empty marker on the template", m(yk, ""), nil, m(yk, "root.a"), false, []string{"default queue"}},
	}
	for _, kc := range kindCases {
		for _, tc := range cases {
			if kc.kind == "Pod" && tc.top != nil {
				continue // a pod has one level
			}
			t.Run(kc.kind+"/"+tc.name, func(t *testing.T) {
				authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.a"}}}
				h := enforcing(t, settings.Config{}, authz)
				obj := kc.build(tc.podL, tc.podA, tc.top)
				req := request(t, kc, admissionv1.Create, "team-a", alice, obj, nil)
				for _, hook := range []hookKind{hookMutate, hookValidate} {
					if hook == hookValidate {
						req.Object.Raw, _ = applyPatch(req.Object.Raw, run(t, NewHandler(nil), hookMutate, req).Patch)
					}
					resp := run(t, h, hook, req)
					if tc.allow {
						wantAllowed(t, resp)
						continue
					}
					wantDenied(t, resp, 403, append([]string{`user "alice@EXAMPLE.COM" may not submit to `}, tc.want...)...)
				}
				if !tc.allow {
					return
				}
				// What a controller then makes from it (a Deployment's
				// ReplicaSet, a CronJob's Job, the pods) passes too, under
				// alice's identity.
				for _, made := range madeFrom(t, kc, obj) {
					resp := run(t, h, hookMutate, made)
					wantAllowed(t, resp)
				}
			})
		}
	}
}

// madeFrom returns the CREATE requests a controller sends for objects made
// from workload obj of kind kc (stamped with alice's identity): the pod,
// and for a CronJob the Job.
func madeFrom(t *testing.T, kc kindCase, obj runtime.Object) []*admissionv1.AdmissionRequest {
	t.Helper()
	stamped := run(t, NewHandler(nil), hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, obj, nil))
	raw, err := applyPatch(mustJSON(t, obj), stamped.Patch)
	if err != nil {
		t.Fatal(err)
	}
	var podL, podA map[string]string
	switch kc.kind {
	case "Pod":
		return nil
	case "CronJob":
		cj := &batchv1.CronJob{}
		decodeInto(t, raw, cj)
		podL, podA = cj.Spec.JobTemplate.Spec.Template.Labels, cj.Spec.JobTemplate.Spec.Template.Annotations
		jk := kindCaseOf(t, "Job")
		job := jk.build(podL, podA, cj.Spec.JobTemplate.Labels)
		pk := kindCaseOf(t, "Pod")
		return []*admissionv1.AdmissionRequest{
			request(t, jk, admissionv1.Create, "team-a", kcm, job, nil),
			request(t, pk, admissionv1.Create, "team-a", jobCtrl, pk.build(podL, podA, nil), nil),
		}
	}
	ann, err := kc.podAnnotations(raw)
	if err != nil {
		t.Fatal(err)
	}
	podA = ann
	var probe struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	decodeInto(t, raw, &probe)
	podL = probe.Spec.Template.Metadata.Labels
	pk := kindCaseOf(t, "Pod")
	return []*admissionv1.AdmissionRequest{request(t, pk, admissionv1.Create, "team-a", rsCtrl, pk.build(podL, podA, nil), nil)}
}

func decodeInto(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// TestQueueControllerMadeObjects: an object a controller makes is checked
// like any other, under the identity stamped on it. A pod that carries no
// marker runs in the default queue; whatever its Deployment's own labels
// said, alice's pod is checked there, and refused when alice may not use
// it. A pod with a marker is checked against its queue.
func TestQueueControllerMadeObjects(t *testing.T) {
	pk := kindCaseOf(t, "Pod")
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.a"}}}
	h := enforcing(t, settings.Config{}, authz)
	for _, ctrl := range []authenticationv1.UserInfo{rsCtrl, jobCtrl, kcm} {
		resp := run(t, h, hookMutate, request(t, pk, admissionv1.Create, "team-a", ctrl, pk.build(nil, m(UserInfoAnnotation, aliceInfo), nil), nil))
		wantDenied(t, resp, 403, `user "alice@EXAMPLE.COM" may not submit to the default queue`)
		authz.calls = nil
		wantAllowed(t, run(t, h, hookMutate, request(t, pk, admissionv1.Create, "team-a", ctrl, pk.build(m("queue", "root.a"), m(UserInfoAnnotation, aliceInfo), nil), nil)))
		want := authzCall{"default", "root.a", alice.Username, alice.Groups}
		if len(authz.calls) == 0 || !reflect.DeepEqual(authz.calls[0], want) {
			t.Fatalf("asked %+v, want %+v", authz.calls, want)
		}
	}
	// A ReplicaSet the Deployment controller makes from a Deployment
	// labelled at the top only: its pods would run in the default queue.
	rk := kindCaseOf(t, "ReplicaSet")
	resp := run(t, h, hookMutate, request(t, rk, admissionv1.Create, "team-a", depCtrl, rk.build(nil, m(UserInfoAnnotation, aliceInfo), m("queue", "root.a")), nil))
	wantDenied(t, resp, 403, `may not submit to the default queue`)
	// Alice may use the default queue: all of it passes.
	authz.allowed[alice.Username] = append(authz.allowed[alice.Username], "")
	wantAllowed(t, run(t, h, hookMutate, request(t, pk, admissionv1.Create, "team-a", rsCtrl, pk.build(nil, m(UserInfoAnnotation, aliceInfo), nil), nil)))
}

// TestQueueSourceLevel: the level of a configured source, its default and
// its validation.
func TestQueueSourceLevel(t *testing.T) {
	_, err := settings.Config{QueueSources: []settings.QueueSource{{Kind: "label", Key: "q", Scheduler: "x", Level: "top"}}}.Compile()
	if err == nil || !strings.Contains(err.Error(), `admissionController.queueSources[0].level: "top" is not a level: want pod or workload`) {
		t.Fatalf("error %v", err)
	}
	dk := kindCaseOf(t, "Deployment")
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.a"}}}
	for _, tc := range []struct {
		src   settings.QueueSource
		allow bool
	}{
		{settings.QueueSource{Kind: "label", Key: "q", Scheduler: "yunikorn"}, false},                               // default: pod
		{settings.QueueSource{Kind: "label", Key: "q", Scheduler: "custom"}, true},                                  // default: workload
		{settings.QueueSource{Kind: "label", Key: "q", Scheduler: "custom", Level: settings.LevelPod}, false},       // explicit
		{settings.QueueSource{Kind: "label", Key: "q", Scheduler: "yunikorn", Level: settings.LevelWorkload}, true}, // explicit
	} {
		h := enforcing(t, settings.Config{QueueSources: []settings.QueueSource{tc.src}}, authz)
		// The marker on the Deployment only: read by a workload-level
		// scheduler; a pod-level one runs the pods in the default queue.
		resp := run(t, h, hookMutate, request(t, dk, admissionv1.Create, "team-a", alice, dk.build(nil, nil, m("q", "a")), nil))
		if resp.Allowed != tc.allow {
			t.Errorf("%+v: allowed = %v, want %v (%v)", tc.src, resp.Allowed, tc.allow, resp.Result)
		}
	}
}

// TestQueueUpdateMovesPodsToTheDefaultQueue: an UPDATE that moves
// YuniKorn's marker from the pod template to the workload's own metadata
// moves the pods to the default queue: checked there, for the owner.
func TestQueueUpdateMovesPodsToTheDefaultQueue(t *testing.T) {
	kc := kindCaseOf(t, "Deployment")
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.a"}}}
	h := enforcing(t, settings.Config{}, authz)
	old := kc.build(m("queue", "root.a"), m(UserInfoAnnotation, aliceInfo), nil)
	moved := kc.build(nil, m(UserInfoAnnotation, aliceInfo), m("queue", "root.a"))
	req := request(t, kc, admissionv1.Update, "team-a", alice, moved, old)
	for _, hook := range []hookKind{hookValidate, hookMutate} {
		wantDenied(t, run(t, h, hook, req), 403, `user "alice@EXAMPLE.COM" may not submit to the default queue`)
	}
}
