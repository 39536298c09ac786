package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/admission/settings"
)

// fakeOwners answers owner lookups from objects by API path, as the API
// server would, and records the paths asked for.
type fakeOwners struct {
	objs  map[string]runtime.Object
	asked []string
}

func (f *fakeOwners) LookupOwner(_ context.Context, path string) ([]byte, error) {
	f.asked = append(f.asked, path)
	obj, ok := f.objs[path]
	if !ok {
		return nil, fmt.Errorf("%s not found", path)
	}
	return json.Marshal(obj)
}

// replicaSet is a ReplicaSet in team-a whose pod template carries
// annotations ann.
func replicaSet(name, uid string, ann map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID(uid)},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}}}
}

// TestAdoption: with enforceDeleteACLs, a controller adopting an object
// (adding an owner of a workload kind) needs the new owner to carry the
// object's user.info, or the user the owner's user.info names to have the
// right to kill the object: bob's ReplicaSet whose selector matches
// alice's bare pod must not adopt it (and then delete it when it scales
// down). The owner is read once through the OwnerLookup; without one the
// adoption fails closed.
func TestAdoption(t *testing.T) {
	const bobInfo = `{"user":"bob","groups":["ops","system:authenticated"]}`
	const daveInfo = `{"user":"dave","groups":["system:authenticated"]}`
	path := func(name string) string { return "/apis/apps/v1/namespaces/team-a/replicasets/" + name }
	owners := &fakeOwners{objs: map[string]runtime.Object{
		path("alices"):   replicaSet("alices", "1111", m(UserInfoAnnotation, aliceInfo)),
		path("bobs"):     replicaSet("bobs", "2222", m(UserInfoAnnotation, bobInfo)),
		path("daves"):    replicaSet("daves", "3333", m(UserInfoAnnotation, daveInfo)),
		path("old"):      replicaSet("old", "4444", nil),
		path("replaced"): replicaSet("replaced", "5555-new", m(UserInfoAnnotation, aliceInfo)),
	}}
	authz := newFakeDeleteAuthz()
	h := deleteHandler(t, settings.Config{}, authz, WithOwnerLookup(owners))
	rs := func(name, uid string) metav1.OwnerReference { return ownerRef("ReplicaSet", name, uid, true) }
	cm := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "bobs", UID: "6666"}
	pods := kindCaseOf(t, "Pod")
	pod := func(refs ...metav1.OwnerReference) runtime.Object {
		return owned(pods.build(m("app", "x", "queue", "root.team-a"), m(UserInfoAnnotation, aliceInfo), nil), refs...)
	}
	cases := []struct {
		name       string
		old, after runtime.Object
		want       string // "" allowed; else the denial's code and message
		asked      []string
	}{
		{"alice's ReplicaSet adopts alice's pod", pod(), pod(rs("alices", "1111")), "", []string{path("alices")}},
		{"bob's ReplicaSet may not", pod(), pod(rs("bobs", "2222")),
			`403 usher: user "bob" may not let ReplicaSet "bobs" adopt Pod "team-a/obj": bob may not kill the application of alice@EXAMPLE.COM in "root.team-a"`,
			[]string{path("bobs")}},
		{"an admin of the pod's queue's ReplicaSet may", pod(), pod(rs("daves", "3333")), "", []string{path("daves")}},
		{"a ReplicaSet without user.info may not", pod(), pod(rs("old", "4444")),
			`403 usher: ReplicaSet "old" may not adopt Pod "team-a/obj": it has no valid annotation ` + UserInfoAnnotation + ` on its pod template`,
			[]string{path("old")}},
		{"a ReplicaSet of another uid", pod(), pod(rs("replaced", "5555")),
			`500 usher: cannot tell whose ReplicaSet "replaced" is to adopt Pod "team-a/obj": it is another object than the owner reference names (uid "5555-new")`,
			[]string{path("replaced")}},
		{"a missing ReplicaSet", pod(), pod(rs("gone", "7777")),
			`500 usher: cannot tell whose ReplicaSet "gone" is to adopt Pod "team-a/obj": ` + path("gone") + ` not found; denied (usher fails closed)`,
			[]string{path("gone")}},
		{"an owner of a kind usher does not stamp is not read", pod(), pod(cm), "", nil},
		{"an owner kept is not read again", pod(rs("bobs", "2222")), pod(rs("bobs", "2222"), cm), "", nil},
		{"releasing reads nothing", pod(rs("bobs", "2222")), pod(), "", nil},
	}
	for _, tc := range cases {
		owners.asked = nil
		resp := run(t, h, hookValidate, request(t, pods, admissionv1.Update, "team-a", rsCtrl, tc.after, tc.old))
		got := ""
		if resp.Result != nil {
			got = fmt.Sprintf("%d %s", resp.Result.Code, resp.Result.Message)
		}
		if tc.want == "" && !resp.Allowed {
			t.Errorf("%s: denied: %s", tc.name, got)
		} else if tc.want != "" && (resp.Allowed || !strings.HasPrefix(got, tc.want)) {
			t.Errorf("%s: allowed=%v %q, want %q…", tc.name, resp.Allowed, got, tc.want)
		}
		// run reviews twice: through HTTP and the Go API.
		if !slices.Equal(owners.asked, slices.Concat(tc.asked, tc.asked)) {
			t.Errorf("%s: looked up %q, want %q", tc.name, owners.asked, tc.asked)
		}
	}
	// bob's right was asked with the groups of his ReplicaSet's user.info.
	if !slices.ContainsFunc(authz.calls, func(c deleteCall) bool {
		return c.user == "bob" && slices.Equal(c.groups, []string{"ops", "system:authenticated"}) && c.owner == "alice@EXAMPLE.COM"
	}) {
		t.Errorf("no kill decision for bob with his stamp's groups: %+v", authz.calls)
	}

	// A workload: bob's Deployment adopting alice's bare ReplicaSet.
	deploy := replicaSet("bobs-deploy", "8888", m(UserInfoAnnotation, bobInfo))
	owners.objs["/apis/apps/v1/namespaces/team-a/deployments/bobs-deploy"] = &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: deploy.ObjectMeta,
		Spec: appsv1.DeploymentSpec{Template: deploy.Spec.Template}}
	rsKind := kindCaseOf(t, "ReplicaSet")
	req := request(t, rsKind, admissionv1.Update, "team-a", kubeSystemSA("deployment-controller"),
		owned(rsKind.build(m("queue", "root.team-a"), m(UserInfoAnnotation, aliceInfo), nil), ownerRef("Deployment", "bobs-deploy", "8888", true)),
		rsKind.build(m("queue", "root.team-a"), m(UserInfoAnnotation, aliceInfo), nil))
	wantDenied(t, run(t, h, hookValidate, req), 403, `usher: user "bob" may not let Deployment "bobs-deploy" adopt ReplicaSet "team-a/obj": bob may not kill`)

	// Without a lookup (no cluster credentials) adoption fails closed;
	// with the kill rule off nothing is read or decided.
	req = request(t, pods, admissionv1.Update, "team-a", rsCtrl, pod(rs("alices", "1111")), pod())
	wantDenied(t, run(t, deleteHandler(t, settings.Config{}, authz), hookValidate, req), 500,
		`usher: cannot tell whose ReplicaSet "alices" is to adopt Pod "team-a/obj": usher has no cluster credentials to read it`)
	owners.asked = nil
	wantAllowed(t, run(t, NewHandler(nil, WithDeleteAuthorizer(authz), WithOwnerLookup(owners)), hookValidate, req))
	if len(owners.asked) != 0 {
		t.Errorf("kill rule off: looked up %q", owners.asked)
	}
	// A lookup that fails says why, and denies.
	failing := OwnerLookupFunc(func(context.Context, string) ([]byte, error) { return nil, errors.New("forbidden") })
	wantDenied(t, run(t, deleteHandler(t, settings.Config{}, authz, WithOwnerLookup(failing)), hookValidate, req), 500,
		`usher: cannot tell whose ReplicaSet "alices" is to adopt Pod "team-a/obj": forbidden; denied (usher fails closed)`)
}
