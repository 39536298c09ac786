package admission

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/admission/settings"
)

var (
	sparkOperator = authenticationv1.UserInfo{Username: "system:serviceaccount:spark-operator:spark-operator",
		Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	sparkDriver = authenticationv1.UserInfo{Username: "system:serviceaccount:team-a:spark",
		Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	yunikorn = authenticationv1.UserInfo{Username: "system:serviceaccount:yunikorn:yunikorn-admin", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	bobInfo  = `{"user":"bob","groups":["system:authenticated"]}`
)

// operatorsConfig governs Kubeflow's SparkApplication, whose operator
// copies from it and whose drivers copy from themselves.
func operatorsConfig(unstamped string) settings.Config {
	return settings.Config{
		CustomResources: []settings.CustomResource{{Group: "sparkoperator.k8s.io", Version: "v1beta2", Kind: "SparkApplication",
			Resource: "sparkapplications", Templates: []string{"spec.driver", "spec.executor"}}},
		AccessControl: settings.AccessControl{
			Propagators: []settings.Propagator{
				{Users: settings.Patterns{"^system:serviceaccount:spark-operator:spark-operator$"}, Parents: []string{"sparkoperator.k8s.io/SparkApplication"}},
				{Users: settings.Patterns{"^system:serviceaccount:[^:]+:spark$"}, Parents: []string{"Pod"}},
				{Users: settings.Patterns{"^system:serviceaccount:yunikorn:yunikorn-admin$"}, Parents: []string{"Pod"}, PodParents: settings.PodParentsAny},
			},
			UnstampedParents: unstamped,
		},
	}
}

// parents is a ParentLookup over a fixed set of objects by "Kind ns/name".
type parents map[string]metav1.ObjectMeta

func (ps parents) lookup(_ context.Context, k settings.Kind, ns, name, _ string) (*metav1.PartialObjectMetadata, error) {
	if name == "broken" {
		return nil, errors.New("the API server did not answer")
	}
	p, ok := ps[k.Kind+" "+ns+"/"+name]
	if !ok {
		return nil, nil
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: p}, nil
}

func ownedPod(ann map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Annotations: ann, OwnerReferences: refs},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "spark"}}}}
}

func owner(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}
}

func controllerRef(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: boolPtr(true)}
}

func TestPropagatorsCopyNeverInvent(t *testing.T) {
	ps := parents{
		"SparkApplication team-a/etl":     {UID: "app-1", Annotations: m(UserInfoAnnotation, aliceInfo)},
		"SparkApplication team-a/bob-etl": {UID: "app-2", Annotations: m(UserInfoAnnotation, bobInfo)},
		"SparkApplication team-a/old":     {UID: "app-3"},
		"Pod team-a/etl-driver":           {UID: "driver-1", Annotations: m(UserInfoAnnotation, aliceInfo)},
		"Pod team-a/bob-driver":           {UID: "driver-2", Annotations: m(UserInfoAnnotation, bobInfo)},
	}
	etl := controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl", "app-1")
	driver := controllerRef("v1", "Pod", "etl-driver", "driver-1")
	boundTo := func(u authenticationv1.UserInfo, uid string) authenticationv1.UserInfo {
		u.Extra = map[string]authenticationv1.ExtraValue{podUIDExtra: {uid}, "authentication.kubernetes.io/pod-name": {"etl-driver"}}
		return u
	}
	kc := kindCaseOf(t, "Pod")
	for _, tc := range []struct {
		name      string
		unstamped string
		user      authenticationv1.UserInfo
		pod       *corev1.Pod
		cause     Cause   // "" allowed
		want      string  // the stamp after the patch, or a phrase of the denial
		record    *Record // fields of the audit record checked when set
	}{
		{name: "operator copies alice's stamp", user: sparkOperator, pod: ownedPod(m(UserInfoAnnotation, aliceInfo), etl), want: aliceInfo,
			record: &Record{Identity: "alice@EXAMPLE.COM", Propagation: `propagated by system:serviceaccount:spark-operator:spark-operator from SparkApplication "team-a/etl"`}},
		{name: "operator's pod without a stamp gets the parent's", user: sparkOperator, pod: ownedPod(nil, etl), want: aliceInfo},
		{name: "operator may not write bob", user: sparkOperator, pod: ownedPod(m(UserInfoAnnotation, bobInfo), etl),
			cause: CausePropagationDenied, want: `naming "{\"user\":\"bob\"`},
		{name: "no owner", user: sparkOperator, pod: ownedPod(nil), cause: CausePropagationDenied,
			want: "names no parent of the kinds it copies from (sparkoperator.k8s.io/SparkApplication)"},
		{name: "the only owner of a parent kind, not a controller", user: sparkOperator, want: aliceInfo,
			pod: ownedPod(nil, controllerRef("apps/v1", "ReplicaSet", "etl", "rs-1"), owner("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl", "app-1"))},
		{name: "two owners and no controller", user: sparkOperator, cause: CausePropagationDenied, want: "none is its controller",
			pod: ownedPod(nil, owner("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl", "app-1"), owner("sparkoperator.k8s.io/v1beta2", "SparkApplication", "bob-etl", "app-2"))},
		{name: "the controller decides", user: sparkOperator, want: aliceInfo,
			pod: ownedPod(nil, owner("sparkoperator.k8s.io/v1beta2", "SparkApplication", "bob-etl", "app-2"), etl)},
		{name: "a kind it may not copy from", user: sparkOperator, pod: ownedPod(nil, controllerRef("apps/v1", "ReplicaSet", "etl", "rs-1")),
			cause: CausePropagationDenied, want: "names no parent of the kinds it copies from"},
		{name: "YuniKorn's placeholder gets its originator's identity", user: yunikorn, want: aliceInfo,
			pod: ownedPod(nil, owner("v1", "Pod", "etl-driver", "driver-1"))},
		{name: "a placeholder for a pod that is not there", user: yunikorn, cause: CausePropagationDenied, want: "but that object's uid",
			pod: ownedPod(nil, owner("v1", "Pod", "etl-driver", "driver-9"))},
		{name: "a parent that does not exist", user: sparkOperator, pod: ownedPod(nil, controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "gone", "x")),
			cause: CausePropagationDenied, want: `SparkApplication "team-a/gone", which does not exist`},
		{name: "a name alone never counts", user: sparkOperator, pod: ownedPod(nil, controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl", "app-9")),
			cause: CausePropagationDenied, want: `but that object's uid is "app-1"`},
		{name: "a parent that cannot be read", user: sparkOperator, pod: ownedPod(nil, controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "broken", "x")),
			cause: CauseDecisionFailed, want: "fails closed"},
		{name: "unstamped parent: the propagator's identity", user: sparkOperator, pod: ownedPod(nil, controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "old", "app-3")),
			want:   `{"user":"system:serviceaccount:spark-operator:spark-operator","groups":["system:serviceaccounts","system:authenticated"]}`,
			record: &Record{Identity: sparkOperator.Username, UnstampedParent: `SparkApplication "team-a/old"`}},
		{name: "unstamped parent: deny", unstamped: settings.UnstampedDeny, user: sparkOperator, cause: CausePropagationDenied, want: "unstampedParents: deny",
			pod: ownedPod(nil, controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "old", "app-3"))},
		{name: "driver makes its executor", user: boundTo(sparkDriver, "driver-1"), pod: ownedPod(nil, driver), want: aliceInfo},
		{name: "driver may not name bob", user: boundTo(sparkDriver, "driver-1"), pod: ownedPod(m(UserInfoAnnotation, bobInfo), driver),
			cause: CausePropagationDenied, want: `its parent Pod "team-a/etl-driver", which is user "alice@EXAMPLE.COM"`},
		{name: "alice's driver may not make bob's driver's executors", user: boundTo(sparkDriver, "driver-1"),
			pod: ownedPod(nil, controllerRef("v1", "Pod", "bob-driver", "driver-2")), cause: CausePropagationDenied, want: "copies only from the pod its token is bound to"},
		{name: "a token bound to no pod", user: sparkDriver, pod: ownedPod(nil, driver), cause: CausePropagationDenied, want: "copies only from the pod its token is bound to"},
		{name: "others are unchanged", user: bob, pod: ownedPod(m(UserInfoAnnotation, aliceInfo), etl), cause: CauseUserInfoForged, want: "may not set annotation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Record
			h := newTestHandler(mustCompile(t, operatorsConfig(tc.unstamped)), WithParentLookup(ps.lookup), WithAudit(func(r Record) { got = append(got, r) }))
			req := request(t, kc, admissionv1.Create, "team-a", tc.user, tc.pod, nil)
			resp := run(t, h, hookMutate, req)
			if tc.cause != "" {
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.want) || got[0].Denial == nil || got[0].Denial.Reason != tc.cause {
					t.Fatalf("want a denial %s containing %q, got %+v (%+v)", tc.cause, tc.want, resp.Result, got)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("denied: %s", resp.Result.Message)
			}
			doc := req.Object.Raw
			if len(resp.Patch) > 0 {
				var err error
				if doc, err = applyPatch(doc, resp.Patch); err != nil {
					t.Fatal(err)
				}
			}
			var pod corev1.Pod
			if err := json.Unmarshal(doc, &pod); err != nil {
				t.Fatal(err)
			}
			if s := pod.Annotations[UserInfoAnnotation]; s != tc.want {
				t.Fatalf("stamp %s, want %s", s, tc.want)
			}
			// /validate agrees with the stamped pod.
			req.Object.Raw = doc
			if v := run(t, h, hookValidate, req); !v.Allowed {
				t.Fatalf("/validate denies the stamped pod: %s", v.Result.Message)
			}
			if r := tc.record; r != nil {
				if got[0].Identity != r.Identity || got[0].Propagation != r.Propagation || got[0].UnstampedParent != r.UnstampedParent {
					t.Fatalf("record %+v, want %+v", got[0], *r)
				}
				if r.UnstampedParent != "" && !strings.Contains(strings.Join(resp.Warnings, " "), "unstampedParents: propagatorIdentity") {
					t.Fatalf("no warning: %q", resp.Warnings)
				}
			}
		})
	}
}

// TestPropagatorsDeleteWhatTheyMay: with the kill rule on, a propagator
// may delete what it may create (an object carrying its parent's
// identity) and nothing else: alice's driver deletes its executor, not
// bob's driver's.
func TestPropagatorsDeleteWhatTheyMay(t *testing.T) {
	ps := parents{
		"Pod team-a/etl-driver": {UID: "driver-1", Annotations: m(UserInfoAnnotation, aliceInfo)},
		"Pod team-a/bob-driver": {UID: "driver-2", Annotations: m(UserInfoAnnotation, bobInfo)},
	}
	cfg := operatorsConfig("")
	cfg.EnforceDeleteACLs = true
	killRule := DeleteAuthorizerFunc(func(context.Context, DeleteRequest) (bool, string, error) { return false, "not the owner", nil })
	h := newTestHandler(mustCompile(t, cfg), WithParentLookup(ps.lookup), WithDeleteAuthorizer(killRule))
	driver := sparkDriver
	driver.Extra = map[string]authenticationv1.ExtraValue{podUIDExtra: {"driver-1"}}
	kc := kindCaseOf(t, "Pod")
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		allow bool
	}{
		{"its executor", ownedPod(m(UserInfoAnnotation, aliceInfo), controllerRef("v1", "Pod", "etl-driver", "driver-1")), true},
		{"bob's driver's executor", ownedPod(m(UserInfoAnnotation, bobInfo), controllerRef("v1", "Pod", "bob-driver", "driver-2")), false},
		{"an executor of its own with another identity", ownedPod(m(UserInfoAnnotation, bobInfo), controllerRef("v1", "Pod", "etl-driver", "driver-1")), false},
		// Restamped with the groups the directory gave alice since (the
		// kill rule's owner is the user, too).
		{"its executor with alice's later groups", ownedPod(m(UserInfoAnnotation, `{"user":"alice@EXAMPLE.COM","groups":["gpu"]}`),
			controllerRef("v1", "Pod", "etl-driver", "driver-1")), true},
	} {
		req := request(t, kc, admissionv1.Delete, "team-a", driver, nil, tc.pod)
		if resp := run(t, h, hookValidate, req); resp.Allowed != tc.allow {
			t.Errorf("%s: allowed %v, want %v (%+v)", tc.name, resp.Allowed, tc.allow, resp.Result)
		}
	}
}

// TestWeakLink: an operator that sets no ownerReference names its parent
// by a label; the link is weak (no uid) and the record says so.
func TestWeakLink(t *testing.T) {
	cfg := operatorsConfig("")
	cfg.AccessControl.Propagators = []settings.Propagator{{Users: settings.Patterns{"^system:serviceaccount:spark-operator:spark-operator$"},
		Parents: []string{"sparkoperator.k8s.io/SparkApplication"}, ParentLabel: "sparkoperator.k8s.io/app-name"}}
	ps := parents{"SparkApplication team-a/etl": {UID: "app-1", Annotations: m(UserInfoAnnotation, aliceInfo)}}
	var got []Record
	h := newTestHandler(mustCompile(t, cfg), WithParentLookup(ps.lookup), WithAudit(func(r Record) { got = append(got, r) }))
	p := ownedPod(nil)
	p.Labels = m("sparkoperator.k8s.io/app-name", "etl")
	resp := run(t, h, hookMutate, request(t, kindCaseOf(t, "Pod"), admissionv1.Create, "team-a", sparkOperator, p, nil))
	if !resp.Allowed || !strings.Contains(string(resp.Patch), "alice@EXAMPLE.COM") ||
		got[0].Propagation != `propagated by system:serviceaccount:spark-operator:spark-operator from SparkApplication "team-a/etl" (weak link: label sparkoperator.k8s.io/app-name)` {
		t.Fatalf("%+v %s %+v", resp.Result, resp.Patch, got)
	}
	p.Labels = m("sparkoperator.k8s.io/app-name", "gone")
	if resp := run(t, h, hookMutate, request(t, kindCaseOf(t, "Pod"), admissionv1.Create, "team-a", sparkOperator, p, nil)); resp.Allowed {
		t.Fatal("a label naming no parent was allowed")
	}
	cfg.AccessControl.Propagators[0].Parents = []string{"Pod"}
	if _, err := cfg.Compile(); err == nil || !strings.Contains(err.Error(), "parentLabel") {
		t.Fatalf("a weak link to pods: %v", err)
	}
}

func TestPropagationWithoutCredentialsFailsClosed(t *testing.T) {
	h := newTestHandler(mustCompile(t, operatorsConfig("")))
	req := request(t, kindCaseOf(t, "Pod"), admissionv1.Create, "team-a", sparkOperator, ownedPod(nil,
		controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl", "app-1")), nil)
	if resp := run(t, h, hookMutate, req); resp.Allowed || !strings.Contains(resp.Result.Message, "no cluster credentials") {
		t.Fatalf("want a denial, got %+v", resp.Result)
	}
}

func sparkApp(ann map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
		"metadata": map[string]any{"name": "obj", "namespace": "team-a"}, "spec": spec}}
	u.SetAnnotations(ann)
	return u
}

func TestCustomResourcesAreStampedWithTheirTemplates(t *testing.T) {
	h := newTestHandler(mustCompile(t, operatorsConfig("")))
	kc := kindCase{kind: "SparkApplication", group: "sparkoperator.k8s.io", version: "v1beta2", resource: "sparkapplications"}
	app := sparkApp(nil, map[string]any{"type": "Scala",
		"driver":   map[string]any{"cores": 1, "annotations": map[string]any{"team": "a", UserInfoAnnotation: bobInfo}},
		"executor": map[string]any{"instances": 2}})
	req := request(t, kc, admissionv1.Create, "team-a", alice, app, nil)
	resp := run(t, h, hookMutate, req)
	if !resp.Allowed {
		t.Fatalf("denied: %s", resp.Result.Message)
	}
	doc, err := applyPatch(req.Object.Raw, resp.Patch)
	if err != nil {
		t.Fatalf("%v\npatch %s", err, resp.Patch)
	}
	var got struct {
		Metadata metav1.ObjectMeta
		Spec     struct {
			Driver, Executor struct{ Annotations map[string]string }
		}
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	for where, ann := range map[string]map[string]string{"metadata": got.Metadata.Annotations, "spec.driver": got.Spec.Driver.Annotations,
		"spec.executor": got.Spec.Executor.Annotations} {
		if ann[UserInfoAnnotation] != aliceInfo {
			t.Errorf("%s: user.info %q, want alice's", where, ann[UserInfoAnnotation])
		}
	}
	if got.Spec.Driver.Annotations["team"] != "a" {
		t.Errorf("the driver's other annotations are lost: %v", got.Spec.Driver.Annotations)
	}
	// The stamp cannot change afterwards.
	req.Object.Raw = doc
	if v := run(t, h, hookValidate, req); !v.Allowed {
		t.Fatalf("/validate: %s", v.Result.Message)
	}
	old := sparkApp(m(UserInfoAnnotation, aliceInfo), map[string]any{})
	upd := request(t, kc, admissionv1.Update, "team-a", alice, sparkApp(m(UserInfoAnnotation, bobInfo), map[string]any{}), old)
	if v := run(t, h, hookValidate, upd); v.Allowed || v.Result.Details == nil || v.Result.Details.Causes[0].Type != metav1.CauseType(CauseUserInfoChanged) {
		t.Fatalf("want UserInfoChanged, got %+v", v.Result)
	}
	// Kinds that are not configured are left alone.
	other := kindCase{kind: "RayJob", group: "ray.io", version: "v1", resource: "rayjobs"}
	if v := run(t, h, hookMutate, request(t, other, admissionv1.Create, "team-a", alice, sparkApp(nil, nil), nil)); !v.Allowed || len(v.Patch) > 0 {
		t.Fatalf("an unconfigured kind was changed: %+v", v)
	}
}

func TestOperatorSettingsErrors(t *testing.T) {
	c := operatorsConfig("sometimes")
	c.AccessControl.Propagators = append(c.AccessControl.Propagators, settings.Propagator{Users: settings.Patterns{"("}, Parents: []string{"ray.io/RayCluster"},
		PodParents: "some"})
	c.CustomResources = append(c.CustomResources, settings.CustomResource{Group: "apps", Version: "v1", Kind: "Thing", Resource: "Things"})
	_, err := c.Compile()
	var paths []string
	for _, se := range settings.SettingErrors(err) {
		paths = append(paths, strings.TrimSuffix(se.Error(), ": "+se.Msg))
	}
	want := "admissionController.customResources[1].group admissionController.customResources[1].resource " +
		"admissionController.accessControl.propagators[3].users admissionController.accessControl.propagators[3].podParents " +
		"admissionController.accessControl.propagators[3].parents " +
		"admissionController.accessControl.unstampedParents"
	if strings.Join(paths, " ") != want {
		t.Fatalf("errors at %q\nwant %q\n%v", strings.Join(paths, " "), want, err)
	}
}

// A workload's stamp is on its pod template; its own metadata, which is
// all the parents' cache keeps, is the submitter's to write. alice's Job
// naming bob at its top level must not give bob's identity to a pod a
// propagator makes for it: workloads are no parent kind.
func TestWorkloadParentsAreRefused(t *testing.T) {
	cfg := operatorsConfig("")
	cfg.AccessControl.Propagators = []settings.Propagator{{Users: settings.Patterns{"^system:serviceaccount:spark-operator:spark-operator$"},
		Parents: []string{"batch/Job"}}}
	c, err := cfg.Compile()
	if err == nil {
		h := newTestHandler(c, WithParentLookup(func(_ context.Context, k settings.Kind, ns, name, _ string) (*metav1.PartialObjectMetadata, error) {
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: "job-1", Annotations: m(UserInfoAnnotation, bobInfo)}}, nil // the Job's metadata
		}))
		kc := kindCaseOf(t, "Job")
		job := kc.build(nil, nil, nil)
		job.(metav1.Object).SetAnnotations(m(UserInfoAnnotation, bobInfo))
		req := request(t, kc, admissionv1.Create, "team-a", alice, job, nil)
		resp := run(t, h, hookMutate, req)
		if resp.Allowed {
			req.Object.Raw, err = applyPatch(req.Object.Raw, resp.Patch)
			resp = run(t, h, hookValidate, req)
		}
		if !resp.Allowed || err != nil || !strings.Contains(string(req.Object.Raw), `"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"bob\"`) {
			t.Skipf("alice may not name bob on her Job: %+v %v", resp.Result, err)
		}
		pod := ownedPod(m(UserInfoAnnotation, bobInfo), controllerRef("batch/v1", "Job", "obj", "job-1"))
		if resp := run(t, h, hookMutate, request(t, kindCaseOf(t, "Pod"), admissionv1.Create, "team-a", sparkOperator, pod, nil)); resp.Allowed {
			t.Fatal("alice's Job, naming bob in its own metadata, gave bob's identity to the propagator's pod")
		}
	}
	if err == nil || !strings.Contains(err.Error(), "parents") {
		t.Fatalf("a workload parent: %v", err)
	}
}

// A propagator copies the parent's usher.io/directory-groups with its
// user.info, or none: beside the parent's user.info it may not write a
// list of its own, which decides the groups looked up again for what the
// object makes.
func TestPropagatorMayNotInventDirectoryGroups(t *testing.T) {
	ps := parents{"SparkApplication team-a/etl": {UID: "app-1", Annotations: m(UserInfoAnnotation, aliceInfo, DirectoryGroupsAnnotation, `["dev.team"]`)}}
	h := newTestHandler(mustCompile(t, operatorsConfig("")), WithParentLookup(ps.lookup))
	etl := controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl", "app-1")
	for _, dir := range []string{`["dev.team"]`, `[]`, `["system:authenticated"]`} {
		pod := ownedPod(m(UserInfoAnnotation, aliceInfo, DirectoryGroupsAnnotation, dir), etl)
		req := request(t, kindCaseOf(t, "Pod"), admissionv1.Create, "team-a", sparkOperator, pod, nil)
		resp := run(t, h, hookMutate, req)
		if resp.Allowed && len(resp.Patch) > 0 {
			req.Object.Raw, _ = applyPatch(req.Object.Raw, resp.Patch)
		}
		var got corev1.Pod
		_ = json.Unmarshal(req.Object.Raw, &got)
		if resp.Allowed && got.Annotations[DirectoryGroupsAnnotation] != `["dev.team"]` {
			t.Errorf("the propagator's pod keeps %s %s beside its parent's user.info, whose list is [\"dev.team\"]", DirectoryGroupsAnnotation, dir)
		}
		if !resp.Allowed && dir == `["dev.team"]` {
			t.Errorf("a faithful copy was denied: %s", resp.Result.Message)
		}
	}
}

// With a directory, usher restamps what it keeps with the groups it
// decides: a driver made after alice joined "gpu" carries her new groups,
// and /validate, which sees that restamp, must agree with /mutate rather
// than compare it with the SparkApplication's older stamp (so must /mutate
// when reinvoked after a sidecar injector). Another user is still refused;
// a stamp naming alice is written again as usher decides, so groups the
// operator adds are dropped, never kept.
func TestPropagatedRestampedWithTheDirectory(t *testing.T) {
	parentInfo := `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated","ml"]}`
	ps := parents{"SparkApplication team-a/etl": {UID: "app-1", Annotations: m(UserInfoAnnotation, parentInfo, DirectoryGroupsAnnotation, `["ml"]`)}}
	h := stampHandler(t, operatorsConfig(""), &fakeDirectory{table: map[string][]string{alice.Username: {"ml", "gpu"}}}, nil, &auditSink{})
	h.reads.parents = ps.lookup
	etl := controllerRef("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl", "app-1")
	now := `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated","ml","gpu"]}`
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want string // the stamp, or "" for a denial
	}{
		{"no stamp", nil, now},
		{"the parent's stamp", m(UserInfoAnnotation, parentInfo, DirectoryGroupsAnnotation, `["ml"]`), now},
		{"groups of its own", m(UserInfoAnnotation, `{"user":"alice@EXAMPLE.COM","groups":["admins"]}`), now},
		{"bob", m(UserInfoAnnotation, bobInfo), ""},
	} {
		req := request(t, kindCaseOf(t, "Pod"), admissionv1.Create, "team-a", sparkOperator, ownedPod(tc.ann, etl), nil)
		resp := run(t, h, hookMutate, req)
		if tc.want == "" {
			if resp.Allowed {
				t.Errorf("%s: allowed", tc.name)
			}
			continue
		}
		if !resp.Allowed {
			t.Errorf("%s: /mutate: %s", tc.name, resp.Result.Message)
			continue
		}
		req.Object.Raw, _ = applyPatch(req.Object.Raw, resp.Patch)
		var pod corev1.Pod
		_ = json.Unmarshal(req.Object.Raw, &pod)
		if got := pod.Annotations[UserInfoAnnotation]; got != tc.want {
			t.Errorf("%s: stamp %s, want %s", tc.name, got, tc.want)
		}
		for hook, name := range map[hookKind]string{hookValidate: "/validate", hookMutate: "/mutate reinvoked"} {
			if v := run(t, h, hook, req); !v.Allowed || len(v.Patch) > 0 {
				t.Errorf("%s: %s refuses or changes usher's own stamp: %+v %s", tc.name, name, v.Result, v.Patch)
			}
		}
	}
	// /validate refuses what /mutate would not have written.
	req := request(t, kindCaseOf(t, "Pod"), admissionv1.Create, "team-a", sparkOperator,
		ownedPod(m(UserInfoAnnotation, `{"user":"alice@EXAMPLE.COM","groups":["admins"]}`), etl), nil)
	if v := run(t, h, hookValidate, req); v.Allowed {
		t.Error("/validate admits groups the operator wrote")
	}
}
