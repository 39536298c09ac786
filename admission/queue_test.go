package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/usherhq/usher/admission/settings"
)

// once returns the queues one review asked for: run reviews every request
// twice (HTTP and Go API), so the calls come in two identical halves.
func once(t *testing.T, q []string) []string {
	t.Helper()
	if len(q)%2 != 0 || !reflect.DeepEqual(q[:len(q)/2], q[len(q)/2:]) {
		t.Fatalf("queues %q are not two identical reviews", q)
	}
	return q[:len(q)/2]
}

func enforcing(t *testing.T, c settings.Config, authz QueueAuthorizer) *Handler {
	t.Helper()
	c.EnforceQueueACLs = true
	return NewHandler(mustCompile(t, c), WithAuthorizer(authz))
}

// TestTwentySources: the decoder takes its slots from the settings, so a
// marker of the twentieth source, and one of the seventeenth that a
// pod-level scheduler reads, are read and checked like the first.
func TestTwentySources(t *testing.T) {
	src := make([]settings.QueueSource, 20)
	for i := range src {
		src[i] = settings.QueueSource{Kind: "label", Key: fmt.Sprintf("q%d", i), Scheduler: "kueue"}
	}
	src[16].Scheduler, src[16].Level = "acme", settings.LevelPod
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.a", "root.b"}}}
	h := enforcing(t, settings.Config{QueueSources: src}, authz)
	kc := kindCaseOf(t, "Deployment")
	req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("q19", "a", "q16", "b"), nil, nil), nil)
	wantAllowed(t, run(t, h, hookMutate, req))
	if got := once(t, authz.queues()); !reflect.DeepEqual(got, []string{"root.b", "root.a"}) {
		t.Fatalf("queues checked %q", got)
	}
	req = request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("q19", "c", "q16", "b"), nil, nil), nil)
	wantDenied(t, run(t, h, hookMutate, req), 403, `queue "root.c"`, "label q19=\"c\"")
}

// TestQueueMarkersOfEachScheduler: each scheduler's marker, read with the
// default sources and mapping, on a pod and on a Deployment's template.
func TestQueueMarkersOfEachScheduler(t *testing.T) {
	cases := []struct {
		scheduler  string
		labels     map[string]string
		ann        map[string]string
		wantQueue  string
		wantMarker string
	}{
		{"yunikorn label", m("queue", "root.team-a.batch"), nil, "root.team-a.batch", `label queue="root.team-a.batch"`},
		{"yunikorn canonical label", m("yunikorn.apache.org/queue", "root.team-a.batch"), nil, "root.team-a.batch", `label yunikorn.apache.org/queue="root.team-a.batch"`},
		{"yunikorn annotation", nil, m("yunikorn.apache.org/queue", "team-a"), "root.team-a", `annotation yunikorn.apache.org/queue="team-a"`},
		{"kueue", m("kueue.x-k8s.io/queue-name", "gpu"), nil, "root.gpu", `label kueue.x-k8s.io/queue-name="gpu"`},
		{"volcano", nil, m("scheduling.volcano.sh/queue-name", "research"), "root.research", `annotation scheduling.volcano.sh/queue-name="research"`},
		{"kai", m("kai.scheduler/queue", "root"), nil, "root", `label kai.scheduler/queue="root"`},
	}
	for _, kind := range []string{"Pod", "Deployment", "CronJob"} {
		kc := kindCaseOf(t, kind)
		for _, tc := range cases {
			t.Run(kind+"/"+tc.scheduler, func(t *testing.T) {
				// Pods without a YuniKorn marker also run in YuniKorn's
				// default queue: alice may use it.
				authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {tc.wantQueue, ""}}}
				h := enforcing(t, settings.Config{Partition: "gpu-cluster"}, authz)
				req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(tc.labels, tc.ann, nil), nil)
				resp := run(t, h, hookMutate, req)
				wantAllowed(t, resp)
				if patched(t, kc, req, resp)[UserInfoAnnotation] != aliceInfo {
					t.Fatal("not stamped")
				}
				want := authzCall{"gpu-cluster", tc.wantQueue, alice.Username, alice.Groups}
				if len(authz.calls) == 0 || !reflect.DeepEqual(authz.calls[0], want) {
					t.Fatalf("authorizer calls %+v, want %+v", authz.calls, want)
				}
				// Another user may not submit there.
				req = request(t, kc, admissionv1.Create, "team-a", bob, kc.build(tc.labels, tc.ann, nil), nil)
				for _, hook := range []hookKind{hookMutate, hookValidate} {
					if hook == hookValidate {
						req.Object.Raw, _ = applyPatch(req.Object.Raw, run(t, NewHandler(nil), hookMutate, req).Patch)
					}
					wantDenied(t, run(t, h, hook, req), 403, `user "bob" may not submit to queue "`+tc.wantQueue+`" of partition "gpu-cluster"`,
						tc.wantMarker, "submitacl of "+tc.wantQueue+" does not list bob")
				}
			})
		}
	}
}

func TestQueueMapping(t *testing.T) {
	kueue := settings.QueueSource{Kind: "label", Key: "kueue.x-k8s.io/queue-name", Scheduler: "kueue", Template: "root.{namespace}.{value}"}
	volcano := settings.QueueSource{Kind: "annotation", Key: "scheduling.volcano.sh/queue-name", Scheduler: "volcano"}
	yk := settings.QueueSource{Kind: "label", Key: "queue", Scheduler: "yunikorn"}
	cfg := settings.Config{
		QueueSources: []settings.QueueSource{yk, kueue, volcano},
		QueueMapping: settings.QueueMapping{
			Template: "root.{scheduler}.{value}",
			Table: []settings.QueueMappingEntry{
				{Scheduler: "kueue", Namespace: "team-a", Value: "gpu", Queue: "root.gpu.team-a"},
				{Value: "shared", Queue: "root.shared"},
				{Scheduler: "volcano", Value: "bad", Queue: "root.volcano.bad"},
			},
		},
	}
	cases := []struct {
		name   string
		ns     string
		labels map[string]string
		ann    map[string]string
		want   string
	}{
		{"table with scheduler and namespace", "team-a", m("kueue.x-k8s.io/queue-name", "gpu"), nil, "root.gpu.team-a"},
		{"table entry for another namespace misses", "team-b", m("kueue.x-k8s.io/queue-name", "gpu"), nil, "root.team-b.gpu"},
		{"table entry for any scheduler", "team-b", m("kueue.x-k8s.io/queue-name", "shared"), nil, "root.shared"},
		{"source template", "team-c", m("kueue.x-k8s.io/queue-name", "cpu"), nil, "root.team-c.cpu"},
		{"global template", "team-a", nil, m("scheduling.volcano.sh/queue-name", "research"), "root.volcano.research"},
		{"global template applies to values with root", "team-a", m("queue", "root.x"), nil, "root.yunikorn.root.x"},
	}
	kc := kindCaseOf(t, "Pod")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {tc.want, ""}}}
			h := enforcing(t, cfg, authz)
			wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, tc.ns, alice, kc.build(tc.labels, tc.ann, nil), nil)))
			if q := authz.queues(); len(q) == 0 || q[0] != tc.want {
				t.Fatalf("queues %q, want %q", q, tc.want)
			}
		})
	}
	t.Run("default rule", func(t *testing.T) {
		c := mustCompile(t, settings.Config{})
		src := &c.Sources[3] // kueue
		for value, want := range map[string]string{"root": "root", "root.a.b": "root.a.b", "a.b": "root.a.b", "rootless": "root.rootless"} {
			if got, place, err := c.MapQueue(src, value, "ns", true); err != nil || got != want || place {
				t.Errorf("%q maps to %q (place %v, %v), want %q", value, got, place, err, want)
			}
		}
		// YuniKorn's markers are not mapped: its placement rules decide,
		// from the value as the shim passes it.
		for _, value := range []string{"root", "root.a.b", "a.b", "rootless"} {
			if got, place, err := c.MapQueue(&c.Sources[0], value, "ns", true); err != nil || got != value || !place {
				t.Errorf("yunikorn %q maps to %q (place %v, %v), want it unchanged for placement", value, got, place, err)
			}
		}
	})
	t.Run("value mapping to no queue", func(t *testing.T) {
		h := enforcing(t, settings.Config{}, &fakeAuthz{})
		for _, v := range []string{"root..a", "a.", ".a", "root. a"} {
			req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("kueue.x-k8s.io/queue-name", v), nil, nil), nil)
			wantDenied(t, run(t, h, hookMutate, req), 400, `label kueue.x-k8s.io/queue-name="`+v+`" on the pod maps to no queue`, "is not a queue path")
		}
		// YuniKorn's marker is not mapped: its placement rules judge the
		// value (an invalid name is a rule error there, a denial).
		authz := &fakeAuthz{}
		h2 := enforcing(t, settings.Config{}, authz)
		req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", "root..a"), nil, nil), nil)
		wantDenied(t, run(t, h2, hookMutate, req), 403, `label queue="root..a" on the pod, read for yunikorn, whose placement rules choose the queue`)
		if len(authz.reqs) == 0 || !authz.reqs[0].Place || authz.reqs[0].Queue != "root..a" || authz.reqs[0].Namespace != "team-a" {
			t.Fatalf("asked %+v, want a placement of the value as given", authz.reqs)
		}
		// An explicit mapping (here the global template) applies to
		// YuniKorn's markers too: the operator said what the value means.
		h = enforcing(t, settings.Config{QueueMapping: settings.QueueMapping{Template: "{value}"}}, &fakeAuthz{})
		req = request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", "other.q"), nil, nil), nil)
		wantDenied(t, run(t, h, hookMutate, req), 400, `"other.q" is not a queue path: want root or root.<name>`)
	})
}

// TestQueueEveryMarkerCounts: markers for two schedulers naming different
// queues are both checked; a forbidden one denies.
func TestQueueEveryMarkerCounts(t *testing.T) {
	kc := kindCaseOf(t, "Deployment")
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.team-a", ""}}}
	h := enforcing(t, settings.Config{}, authz)
	obj := kc.build(m("queue", "root.team-a"), m("scheduling.volcano.sh/queue-name", "root.admin"), m("kueue.x-k8s.io/queue-name", "root.team-a"))
	resp := run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, obj, nil))
	wantDenied(t, resp, 403, `queue "root.admin"`, "scheduling.volcano.sh/queue-name", "pod template")
	if got := authz.queues(); !reflect.DeepEqual(got[:2], []string{"root.team-a", "root.admin"}) {
		t.Fatalf("queues asked %q (same queue from two markers must be asked once)", got)
	}
	// Same queue twice: one question.
	authz.calls = nil
	obj = kc.build(nil, nil, m("kueue.x-k8s.io/queue-name", "team-a", "kai.scheduler/queue", "root.team-a"))
	wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, obj, nil)))
	if got := once(t, authz.queues()); len(got) != 2 || got[0] != "root.team-a" || got[1] != "" {
		t.Fatalf("queues asked %q, want root.team-a once, then YuniKorn's default", got)
	}
	// YuniKorn's two markers with one value: one placement question.
	authz.calls, authz.reqs = nil, nil
	obj = kc.build(m("queue", "root.team-a", "yunikorn.apache.org/queue", "root.team-a"), nil, nil)
	wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, obj, nil)))
	if got := once(t, authz.queues()); len(got) != 1 {
		t.Fatalf("queues asked %q, want one", got)
	}
	// A YuniKorn marker and another scheduler's naming the same path ask
	// two questions: YuniKorn's placement may put the pods elsewhere.
	authz.calls, authz.reqs = nil, nil
	obj = kc.build(m("queue", "root.team-a"), nil, m("kueue.x-k8s.io/queue-name", "team-a"))
	wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, obj, nil)))
	if got := once(t, authz.queues()); len(got) != 2 || !authz.reqs[0].Place || authz.reqs[1].Place {
		t.Fatalf("queues asked %q (%+v), want a placement and a queue check", got, authz.reqs)
	}
}

func TestQueueLevels(t *testing.T) {
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.a", "root.b", "root.c"}}}
	h := enforcing(t, settings.Config{}, authz)
	// A Kueue Job carries its label on the Job itself, and a YuniKorn
	// marker on its pods keeps them out of the default queue.
	jk := kindCaseOf(t, "Job")
	wantAllowed(t, run(t, h, hookMutate, request(t, jk, admissionv1.Create, "team-a", alice, jk.build(m("queue", "a"), nil, m("kueue.x-k8s.io/queue-name", "a")), nil)))
	// A CronJob at all three levels: pod template, job template, CronJob.
	// Kueue's label counts at every level; YuniKorn's queue label only on
	// the pod template, where YuniKorn reads it (the CronJob's own is
	// ignored, so "forbidden" there does not matter).
	ck := kindCaseOf(t, "CronJob")
	cj := ck.build(m("queue", "c"), nil, m("queue", "forbidden", "kueue.x-k8s.io/queue-name", "a")).(*batchv1.CronJob)
	cj.Spec.JobTemplate.Labels = m("kueue.x-k8s.io/queue-name", "b", "queue", "forbidden")
	authz.calls = nil
	wantAllowed(t, run(t, h, hookMutate, request(t, ck, admissionv1.Create, "team-a", alice, cj, nil)))
	if got := once(t, authz.queues()); !reflect.DeepEqual(got, []string{"root.c", "root.b", "root.a"}) {
		t.Fatalf("queues %q", got)
	}
	cj.Spec.JobTemplate.Labels = m("kueue.x-k8s.io/queue-name", "forbidden")
	resp := run(t, h, hookMutate, request(t, ck, admissionv1.Create, "team-a", alice, cj, nil))
	wantDenied(t, resp, 403, `label kueue.x-k8s.io/queue-name="forbidden" on the job template`)
}

func TestQueueDefault(t *testing.T) {
	kc := kindCaseOf(t, "Deployment")
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {""}}}
	h := enforcing(t, settings.Config{}, authz)
	wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", ""), nil, nil), nil)))
	if got := once(t, authz.queues()); !reflect.DeepEqual(got, []string{""}) {
		t.Fatalf("queues %q, want the default queue", got)
	}
	resp := run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", bob, kc.build(nil, nil, nil), nil))
	wantDenied(t, resp, 403, `may not submit to the default queue of partition "default" (the pod template carries no yunikorn queue marker, so yunikorn runs its pods there)`)
	// No queue sources at all: always the default queue.
	authz.calls = nil
	h = enforcing(t, settings.Config{QueueSources: []settings.QueueSource{}}, authz)
	wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", "root.x"), nil, nil), nil)))
	if got := once(t, authz.queues()); !reflect.DeepEqual(got, []string{""}) {
		t.Fatalf("queues %q, want the default queue", got)
	}
}

// TestQueueIdentity: the identity checked is the effective user.info.
func TestQueueIdentity(t *testing.T) {
	pk := kindCaseOf(t, "Pod")
	cases := []struct {
		name   string
		cfg    settings.Config
		user   authenticationv1.UserInfo
		labels map[string]string
		ann    map[string]string
		want   authzCall
	}{
		{"stamped submitter", settings.Config{}, alice, m("queue", "root.q"), nil, authzCall{"default", "root.q", alice.Username, alice.Groups}},
		{"annotation copied by a controller", settings.Config{}, rsCtrl, m("queue", "root.q"), m(UserInfoAnnotation, aliceInfo),
			authzCall{"default", "root.q", alice.Username, alice.Groups}},
		{"external submitter's annotation", settings.Config{AccessControl: settings.AccessControl{ExternalGroups: settings.Patterns{"^submitters$"}}}, livyMember,
			m("queue", "root.q"), m(UserInfoAnnotation, `{"user":"dana","groups":["ds"]}`), authzCall{"default", "root.q", "dana", []string{"ds"}}},
		{"annotation without groups", settings.Config{AccessControl: settings.AccessControl{BypassAuth: true}}, bob,
			m("queue", "root.q"), m(UserInfoAnnotation, `{"user":"dana"}`), authzCall{"default", "root.q", "dana", nil}},
		{"legacy label with bypassAuth", settings.Config{AccessControl: settings.AccessControl{BypassAuth: true}}, bob,
			m("queue", "root.q", LegacyUserLabel, "john"), nil, authzCall{"default", "root.q", "john", nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			authz := &fakeAuthz{allowed: map[string][]string{tc.want.user: {"root.q"}}}
			h := enforcing(t, tc.cfg, authz)
			wantAllowed(t, run(t, h, hookMutate, request(t, pk, admissionv1.Create, "team-a", tc.user, pk.build(tc.labels, tc.ann, nil), nil)))
			if len(authz.calls) == 0 || !reflect.DeepEqual(authz.calls[0], tc.want) {
				t.Fatalf("calls %+v, want %+v", authz.calls, tc.want)
			}
		})
	}
}

func TestQueueFailsClosed(t *testing.T) {
	pk := kindCaseOf(t, "Pod")
	req := request(t, pk, admissionv1.Create, "team-a", alice, pk.build(m("queue", "root.q"), nil, nil), nil)
	h := enforcing(t, settings.Config{}, &fakeAuthz{err: errors.New("policy not loaded")})
	wantDenied(t, run(t, h, hookMutate, req), 500, "cannot decide whether user", "policy not loaded", "fails closed")
	h = NewHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}))
	wantDenied(t, run(t, h, hookMutate, req), 500, "no queue authorizer is configured")
	// Not enforcing: the authorizer is never asked.
	authz := &fakeAuthz{err: errors.New("unused")}
	h = NewHandler(nil, WithAuthorizer(authz))
	wantAllowed(t, run(t, h, hookMutate, req))
	if len(authz.calls) != 0 {
		t.Fatal("authorizer asked while enforceQueueACLs is off")
	}
}

// TestQueueUpdate: on UPDATE, queues the object newly asks for are checked
// for the workload's owner (its user.info), not for whoever edits it.
func TestQueueUpdate(t *testing.T) {
	kc := kindCaseOf(t, "Deployment")
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.a"}, "bob": {"root.a", "root.b"}}}
	h := enforcing(t, settings.Config{}, authz)
	old := kc.build(m("queue", "root.a"), m(UserInfoAnnotation, aliceInfo), nil)
	moved := kc.build(m("queue", "root.b"), m(UserInfoAnnotation, aliceInfo), nil)
	req := request(t, kc, admissionv1.Update, "team-a", bob, moved, old)
	for _, hook := range []hookKind{hookValidate, hookMutate} {
		wantDenied(t, run(t, h, hook, req), 403, `user "alice@EXAMPLE.COM" may not submit to queue "root.b"`)
	}
	if got := authz.calls[0]; got.user != alice.Username || got.queue != "root.b" {
		t.Fatalf("asked %+v", got)
	}
	authz.calls = nil
	relabelled := kc.build(m("queue", "root.a", "tier", "gold"), m(UserInfoAnnotation, aliceInfo), nil)
	wantAllowed(t, run(t, h, hookValidate, request(t, kc, admissionv1.Update, "team-a", bob, relabelled, old)))
	if len(authz.calls) != 0 {
		t.Fatalf("unchanged queue asked again: %+v", authz.calls)
	}
	// An object without user.info (created before usher) is checked for
	// the editor.
	bare := kc.build(m("queue", "root.a"), nil, nil)
	bareMoved := kc.build(m("queue", "root.b"), nil, nil)
	wantAllowed(t, run(t, h, hookValidate, request(t, kc, admissionv1.Update, "team-a", bob, bareMoved, bare)))
	if got := authz.calls[0]; got.user != "bob" {
		t.Fatalf("asked %+v", got)
	}
}

func TestQueueAuditRecord(t *testing.T) {
	var got []Record
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.q"}}}
	c := mustCompile(t, settings.Config{EnforceQueueACLs: true})
	h := NewHandler(c, WithAuthorizer(authz), WithAudit(func(r Record) { got = append(got, r) }))
	pk := kindCaseOf(t, "Pod")
	run(t, h, hookMutate, request(t, pk, admissionv1.Create, "team-a", alice, pk.build(m("queue", "root.q"), nil, nil), nil))
	run(t, h, hookMutate, request(t, pk, admissionv1.Create, "team-a", bob, pk.build(nil, nil, nil), nil))
	if got[0].Queue != "root.q" || !got[0].Allowed || got[0].Identity != alice.Username {
		t.Fatalf("record %+v", got[0])
	}
	if got[2].Queue != "(default)" || got[2].Allowed || got[2].Identity != "bob" || !strings.Contains(got[2].Reason, "default queue") {
		t.Fatalf("record %+v", got[2])
	}
}

// TestQueuePlacement: with enforceQueueACLs, a YuniKorn marker is not
// mapped to a path but handed to the authorizer for placement, as the
// shim hands it to the scheduler: unchanged, with the namespace as the
// namespace tag; a pod without YuniKorn's marker is a placement without a
// queue. The authorizer's reason (the placement's) is the denial's.
// Every kind, since each puts its pods' markers somewhere else.
func TestQueuePlacement(t *testing.T) {
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			authz := QueueAuthorizerFunc(func(_ context.Context, r SubmitRequest) (SubmitDecision, error) {
				if !r.Place || r.Namespace != "team-a" {
					return SubmitDecision{}, fmt.Errorf("not a placement: %+v", r)
				}
				if r.Queue == "ml.training" {
					return SubmitDecision{Reason: "YuniKorn's placement rejected: root.ml_dot_training does not exist"}, nil
				}
				return SubmitDecision{Allowed: r.Queue == "root.ml.training" || r.Queue == ""}, nil
			})
			h := NewHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}), WithAuthorizer(authz))
			for _, key := range []string{"queue", "yunikorn.apache.org/queue"} {
				resp := run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m(key, "ml.training"), nil, nil), nil))
				wantDenied(t, resp, 403, `queue "root.ml_dot_training" of partition "default"`, `label `+key+`="ml.training"`,
					"whose placement rules choose the queue", "root.ml_dot_training does not exist")
				wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m(key, "root.ml.training"), nil, nil), nil)))
			}
			resp := run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, m("yunikorn.apache.org/queue", "ml.training"), nil), nil))
			wantDenied(t, resp, 403, `annotation yunikorn.apache.org/queue="ml.training"`)
			wantAllowed(t, run(t, h, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)))
		})
	}
}
