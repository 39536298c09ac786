package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/admission/settings"
)

// Identities used throughout the tests.
var (
	alice       = authenticationv1.UserInfo{Username: "alice@EXAMPLE.COM", Groups: []string{"dev.team", "system:authenticated"}}
	bob         = authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}}
	rsCtrl      = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	jobCtrl     = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:job-controller", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	depCtrl     = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:deployment-controller", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	kcm         = authenticationv1.UserInfo{Username: "system:kube-controller-manager", Groups: []string{"system:authenticated"}}
	airflow     = authenticationv1.UserInfo{Username: "system:serviceaccount:airflow:scheduler", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	livyMember  = authenticationv1.UserInfo{Username: "livy", Groups: []string{"submitters", "system:authenticated"}}
	aliceInfo   = `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"]}`
	forgedCarol = `{"user":"carol","groups":["admins"]}`
)

// kindCase describes how to build an object of one handled kind.
type kindCase struct {
	kind, group, version, resource string
	// build returns the object with the given pod(-template) labels and
	// annotations and own labels. tmplMeta=false leaves the pod template's
	// metadata empty (it then serialises without labels and annotations).
	build func(podLabels, podAnn, ownLabels map[string]string) runtime.Object
	// podAnnotations reads the pod (template) annotations of a decoded
	// object of this kind.
	podAnnotations func(raw []byte) (map[string]string, error)
}

func tmpl(labels, ann map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func decodeAnn[T any](raw []byte, get func(*T) map[string]string) (map[string]string, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return get(&v), nil
}

var kindCases = []kindCase{
	{"Pod", "", "v1", "pods",
		func(pl, pa, _ map[string]string) runtime.Object {
			return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: pl, Annotations: pa},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *corev1.Pod) map[string]string { return p.Annotations })
		}},
	{"Deployment", "apps", "v1", "deployments",
		func(pl, pa, ol map[string]string) runtime.Object {
			return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: ol},
				Spec:       appsv1.DeploymentSpec{Template: tmpl(pl, pa)}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *appsv1.Deployment) map[string]string { return p.Spec.Template.Annotations })
		}},
	{"ReplicaSet", "apps", "v1", "replicasets",
		func(pl, pa, ol map[string]string) runtime.Object {
			return &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: ol},
				Spec:       appsv1.ReplicaSetSpec{Template: tmpl(pl, pa)}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *appsv1.ReplicaSet) map[string]string { return p.Spec.Template.Annotations })
		}},
	{"DaemonSet", "apps", "v1", "daemonsets",
		func(pl, pa, ol map[string]string) runtime.Object {
			return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: ol},
				Spec:       appsv1.DaemonSetSpec{Template: tmpl(pl, pa)}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *appsv1.DaemonSet) map[string]string { return p.Spec.Template.Annotations })
		}},
	{"StatefulSet", "apps", "v1", "statefulsets",
		func(pl, pa, ol map[string]string) runtime.Object {
			return &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: ol},
				Spec:       appsv1.StatefulSetSpec{Template: tmpl(pl, pa)}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *appsv1.StatefulSet) map[string]string { return p.Spec.Template.Annotations })
		}},
	{"Job", "batch", "v1", "jobs",
		func(pl, pa, ol map[string]string) runtime.Object {
			return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: ol},
				Spec:       batchv1.JobSpec{Template: tmpl(pl, pa)}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *batchv1.Job) map[string]string { return p.Spec.Template.Annotations })
		}},
	{"CronJob", "batch", "v1", "cronjobs",
		func(pl, pa, ol map[string]string) runtime.Object {
			return &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: ol},
				Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{
					Spec: batchv1.JobSpec{Template: tmpl(pl, pa)}}}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *batchv1.CronJob) map[string]string { return p.Spec.JobTemplate.Spec.Template.Annotations })
		}},
	{"ReplicationController", "", "v1", "replicationcontrollers",
		func(pl, pa, ol map[string]string) runtime.Object {
			t := tmpl(pl, pa)
			return &corev1.ReplicationController{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"},
				ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: "team-a", Labels: ol},
				Spec:       corev1.ReplicationControllerSpec{Template: &t}}
		},
		func(raw []byte) (map[string]string, error) {
			return decodeAnn(raw, func(p *corev1.ReplicationController) map[string]string { return p.Spec.Template.Annotations })
		}},
}

func kindCaseOf(t testing.TB, kind string) kindCase {
	t.Helper()
	for _, kc := range kindCases {
		if kc.kind == kind {
			return kc
		}
	}
	t.Fatalf("no kind case %s", kind)
	return kindCase{}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// request builds an AdmissionRequest as the API server sends it.
func request(t testing.TB, kc kindCase, op admissionv1.Operation, ns string, user authenticationv1.UserInfo, obj, old runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-" + strings.ToLower(kc.kind) + "-" + strings.ToLower(string(op))),
		Kind:      metav1.GroupVersionKind{Group: kc.group, Version: kc.version, Kind: kc.kind},
		Resource:  metav1.GroupVersionResource{Group: kc.group, Version: kc.version, Resource: kc.resource},
		Name:      "obj",
		Namespace: ns,
		Operation: op,
		UserInfo:  user,
	}
	if obj != nil {
		req.Object.Raw = mustJSON(t, obj)
	}
	if old != nil {
		req.OldObject.Raw = mustJSON(t, old)
	}
	return req
}

// reviewBody wraps a request in an AdmissionReview body.
func reviewBody(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	return mustJSON(t, &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

func m(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// applyPatch applies an RFC 6902 patch of add and replace operations (the
// only ones usher emits) to doc. It follows the RFC strictly: the parent
// of the target must exist; add on an existing member replaces it; replace
// needs the target to exist.
func applyPatch(doc, patch []byte) ([]byte, error) {
	var root any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	var ops []struct {
		Op    string           `json:"op"`
		Path  string           `json:"path"`
		Value *json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	for i, op := range ops {
		if op.Value == nil {
			return nil, fmt.Errorf("op %d: no value", i)
		}
		var val any
		if err := json.Unmarshal(*op.Value, &val); err != nil {
			return nil, fmt.Errorf("op %d value: %w", i, err)
		}
		if !strings.HasPrefix(op.Path, "/") {
			return nil, fmt.Errorf("op %d: path %q does not start with /", i, op.Path)
		}
		tokens := strings.Split(op.Path[1:], "/")
		for j, tok := range tokens {
			tokens[j] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		parent := root
		for _, tok := range tokens[:len(tokens)-1] {
			switch p := parent.(type) {
			case map[string]any:
				next, ok := p[tok]
				if !ok {
					return nil, fmt.Errorf("op %d: path %q: member %q does not exist", i, op.Path, tok)
				}
				parent = next
			case []any:
				n, err := strconv.Atoi(tok)
				if err != nil || n < 0 || n >= len(p) {
					return nil, fmt.Errorf("op %d: path %q: bad index %q", i, op.Path, tok)
				}
				parent = p[n]
			default:
				return nil, fmt.Errorf("op %d: path %q: %q is not a container", i, op.Path, tok)
			}
		}
		last := tokens[len(tokens)-1]
		obj, ok := parent.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("op %d: path %q: parent is not an object", i, op.Path)
		}
		switch op.Op {
		case "add":
			obj[last] = val
		case "replace":
			if _, ok := obj[last]; !ok {
				return nil, fmt.Errorf("op %d: replace of missing %q", i, op.Path)
			}
			obj[last] = val
		default:
			return nil, fmt.Errorf("op %d: unsupported op %q", i, op.Op)
		}
	}
	return json.Marshal(root)
}

// fakeAuthz is a hand-written QueueAuthorizer: it allows the queues listed
// for each user and records every call.
type fakeAuthz struct {
	mu      sync.Mutex
	allowed map[string][]string // user -> queues ("" = default queue)
	err     error
	panicV  any
	calls   []authzCall
	// reqs are the requests as received; for a placement request
	// (SubmitRequest.Place) the call's queue is the queue the implicit
	// provided rule gives.
	reqs []SubmitRequest
}

type authzCall struct {
	partition, queue, user string
	groups                 []string
}

func (f *fakeAuthz) AuthorizeSubmit(_ context.Context, req SubmitRequest) (SubmitDecision, error) {
	partition, queue, user, groups := req.Partition, req.Queue, req.User, req.Groups
	if req.Place {
		queue = providedQueue(queue) // the implicit provided rule; package placement runs the real rules
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, authzCall{partition, queue, user, append([]string(nil), groups...)})
	f.reqs = append(f.reqs, req)
	if f.panicV != nil {
		panic(f.panicV)
	}
	if f.err != nil {
		return SubmitDecision{}, f.err
	}
	for _, q := range f.allowed[user] {
		if q == queue {
			return SubmitDecision{Allowed: true}, nil
		}
	}
	return SubmitDecision{Reason: fmt.Sprintf("submitacl of %s does not list %s", queue, user)}, nil
}

func (f *fakeAuthz) queues() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.queue)
	}
	return out
}

func boolPtr(b bool) *bool { return &b }

func mustCompile(t testing.TB, c settings.Config) *settings.Compiled {
	t.Helper()
	out, err := c.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
