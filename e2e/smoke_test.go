//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// smokeMutated is the annotation the smoke test's mutating webhook adds.
	smokeMutated = "usher-e2e/mutated"
	// smokeDeny is the label that makes the smoke test's validating webhook
	// deny an object; its value is the reason given.
	smokeDeny = "usher-e2e/deny"
	// smokeReason is the message the validating webhook denies with.
	smokeReason = "the smoke webhook refuses objects labelled " + smokeDeny
)

// smokeRespond annotates pods on /mutate and denies objects labelled
// smokeDeny on /validate.
func smokeRespond(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "smoke webhook: " + err.Error()}}
	}
	switch path {
	case "/mutate":
		if req.Kind.Kind != "Pod" {
			return nil
		}
		var patch []map[string]any
		if obj.Annotations == nil {
			patch = append(patch, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{}})
		}
		patch = append(patch, map[string]any{"op": "add", "path": "/metadata/annotations/usher-e2e~1mutated", "value": "true"})
		b, _ := json.Marshal(patch)
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: b, PatchType: &pt}
	case "/validate":
		if _, deny := obj.Labels[smokeDeny]; deny {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{
				Code: 403, Reason: metav1.StatusReasonForbidden, Message: smokeReason,
			}}
		}
	}
	return nil
}

// smokeEnv is a namespace with a recording webhook pair limited to it.
type smokeEnv struct {
	ns  string
	rec *Recorder
}

func newSmokeEnv(t *testing.T, ctx context.Context) *smokeEnv {
	t.Helper()
	label := fmt.Sprintf("smoke-%d", time.Now().UnixNano())
	ns, err := cluster.NewNamespace(ctx, "smoke", map[string]string{"usher-e2e/smoke": label})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := cluster.StartRecorder(t.TempDir(), smokeRespond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close)
	admin := client(t, Admin)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"usher-e2e/smoke": label}}
	unMutate, err := RegisterMutatingWebhook(ctx, admin, Webhook{
		Name: "smoke-mutate-" + ns, URL: rec.URL + "/mutate", CABundle: rec.CABundle, NamespaceSelector: sel,
	})
	if err != nil {
		t.Fatal(err)
	}
	unValidate, err := RegisterValidatingWebhook(ctx, admin, Webhook{
		Name: "smoke-validate-" + ns, URL: rec.URL + "/validate", CABundle: rec.CABundle, NamespaceSelector: sel,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last in, first out: the webhooks go before the recorder
	// stops, or every write in the namespace would fail closed.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, un := range []func(context.Context) error{unMutate, unValidate} {
			if err := un(ctx); err != nil {
				t.Error(err)
			}
		}
	})

	// The API server starts calling new webhooks a moment after they are
	// registered: wait until both answer a dry run.
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		p, err := admin.CoreV1().Pods(ns).Create(ctx, Pod(ns, "probe", nil), dry)
		if err != nil || p.Annotations[smokeMutated] != "true" {
			return false, nil
		}
		denied := Pod(ns, "probe", nil)
		denied.Labels = map[string]string{smokeDeny: "yes"}
		_, err = admin.CoreV1().Pods(ns).Create(ctx, denied, dry)
		return err != nil && strings.Contains(err.Error(), smokeReason), nil
	})
	if err != nil {
		t.Fatalf("webhooks at %s never took effect: %v", rec.URL, err)
	}
	return &smokeEnv{ns: ns, rec: rec}
}

func client(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	c, err := cluster.Client(user)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// created returns the CREATE reviews of resource in ns that passed the
// validating webhook (which sees the object after mutation), skipping dry
// runs, and the metadata of each object.
func (e *smokeEnv) created(resource string) (reviews []Review, objs []metav1.PartialObjectMetadata) {
	for _, r := range e.rec.Reviews() {
		req := r.Request
		if r.Path != "/validate" || req.Operation != admissionv1.Create || req.Resource.Resource != resource ||
			req.Namespace != e.ns || (req.DryRun != nil && *req.DryRun) {
			continue
		}
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
			continue
		}
		reviews = append(reviews, r)
		objs = append(objs, obj)
	}
	return reviews, objs
}

func ownedBy(obj metav1.PartialObjectMetadata, kind, name string) bool {
	for _, o := range obj.OwnerReferences {
		if o.Kind == kind && o.Name == name {
			return true
		}
	}
	return false
}

func wantUser(t *testing.T, what string, got, want string, gotGroups, wantGroups []string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: the API server sent user %q, want %q", what, got, want)
	}
	for _, g := range wantGroups {
		if !slices.Contains(gotGroups, g) {
			t.Errorf("%s: the API server sent groups %v, want them to include %q", what, gotGroups, g)
		}
	}
}

// TestSmoke checks that the harness gives later scenarios what they need:
// tenants can create workloads, controllers turn Deployments into
// ReplicaSets and Pods under their own names, webhooks registered with the
// helpers are called over TLS with the real userInfo and can mutate and
// deny, kubectl shows a denial's reason, and tenants can neither
// impersonate nor touch webhook configurations.
func TestSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := newSmokeEnv(t, ctx)
	ns := env.ns
	alice := client(t, Alice)

	t.Run("alice creates a pod", func(t *testing.T) {
		p, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "alice-pod", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("alice creating a pod in %s: %v", ns, err)
		}
		if p.Annotations[smokeMutated] != "true" {
			t.Errorf("pod annotations = %v, want the mutating webhook's %s", p.Annotations, smokeMutated)
		}
		if p.Status.Phase != corev1.PodPending {
			t.Errorf("pod phase = %q, want Pending (no node takes a pod that does not tolerate the KWOK nodes' taint)", p.Status.Phase)
		}
		reviews, objs := env.created("pods")
		var found bool
		for i, r := range reviews {
			if objs[i].Name == "alice-pod" {
				found = true
				wantUser(t, "alice's pod", r.Request.UserInfo.Username, Alice, r.Request.UserInfo.Groups, []string{"dev", "system:authenticated"})
				if objs[i].Annotations[smokeMutated] != "true" {
					t.Errorf("the validating webhook saw annotations %v, want the mutation applied first", objs[i].Annotations)
				}
			}
		}
		if !found {
			t.Errorf("the validating webhook never saw alice-pod; reviews: %d", len(env.rec.Reviews()))
		}
	})

	t.Run("controllers expand alice's deployment", func(t *testing.T) {
		const name = "alice-deploy"
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, name, 2, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a deployment: %v", err)
		}
		var rsName string
		var pods []corev1.Pod
		err := Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
			rss, err := alice.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil || len(rss.Items) == 0 {
				return false, err
			}
			rsName = rss.Items[0].Name
			pl, err := alice.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil {
				return false, err
			}
			pods = pl.Items
			return len(pods) == 2, nil
		})
		if err != nil {
			t.Fatalf("deployment %s: replicaset %q and %d pods appeared, want a replicaset and 2 pods: %v (see %s/logs/kube-controller-manager.log)",
				name, rsName, len(pods), err, cluster.StateDir)
		}
		for _, p := range pods {
			if p.Annotations[smokeMutated] != "true" {
				t.Errorf("controller-made pod %s has annotations %v, want the mutating webhook's", p.Name, p.Annotations)
			}
		}

		dReviews, dObjs := env.created("deployments")
		if i := slices.IndexFunc(dObjs, func(o metav1.PartialObjectMetadata) bool { return o.Name == name }); i < 0 {
			t.Errorf("the webhook never saw deployment %s", name)
		} else {
			wantUser(t, "the deployment", dReviews[i].Request.UserInfo.Username, Alice, dReviews[i].Request.UserInfo.Groups, []string{"dev"})
		}
		rsReviews, rsObjs := env.created("replicasets")
		if i := slices.IndexFunc(rsObjs, func(o metav1.PartialObjectMetadata) bool { return ownedBy(o, "Deployment", name) }); i < 0 {
			t.Errorf("the webhook never saw the replicaset of %s", name)
		} else {
			wantUser(t, "the replicaset", rsReviews[i].Request.UserInfo.Username, cluster.ControllerUser("deployment-controller"), rsReviews[i].Request.UserInfo.Groups, nil)
		}
		podReviews, podObjs := env.created("pods")
		var n int
		for i, o := range podObjs {
			if ownedBy(o, "ReplicaSet", rsName) {
				n++
				wantUser(t, "a pod of "+rsName, podReviews[i].Request.UserInfo.Username, cluster.ControllerUser("replicaset-controller"), podReviews[i].Request.UserInfo.Groups, nil)
			}
		}
		if n < 2 {
			t.Errorf("the webhook saw %d pod creations by replicaset %s, want at least 2", n, rsName)
		}
	})

	t.Run("kubectl shows the webhook's reason", func(t *testing.T) {
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: bob-denied
  namespace: %s
  labels:
    %s: "yes"
spec:
  containers:
  - name: main
    image: %s
`, ns, smokeDeny, Image)
		_, stderr, err := cluster.RunKubectl(ctx, Bob, []byte(manifest), "create", "-f", "-")
		if err == nil {
			t.Fatal("kubectl create of a pod the webhook denies succeeded")
		}
		if !strings.Contains(stderr, smokeReason) {
			t.Errorf("kubectl's error = %q, want it to contain %q", stderr, smokeReason)
		}
		out, stderr, err := cluster.RunKubectl(ctx, Bob, nil, "get", "pods", "-n", ns, "-o", "name")
		if err != nil {
			t.Fatalf("kubectl get pods as bob: %v: %s", err, stderr)
		}
		if !strings.Contains(out, "pod/alice-pod") {
			t.Errorf("kubectl get pods as bob printed %q, want pod/alice-pod among them", out)
		}
	})

	t.Run("bob cannot impersonate", func(t *testing.T) {
		for _, target := range []string{Alice, "system:serviceaccount:kube-system:replicaset-controller", "system:kube-controller-manager"} {
			bobAs, err := cluster.ClientAs(Bob, target)
			if err != nil {
				t.Fatal(err)
			}
			_, err = bobAs.CoreV1().Pods(ns).Create(ctx, Pod(ns, "bob-as-someone", nil), metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) {
				t.Errorf("bob impersonating %q: err = %v, want Forbidden", target, err)
			}
		}
		// The control: admin may impersonate, and the webhook sees the
		// impersonated user.
		adminAs, err := cluster.ClientAs(Admin, Alice, "dev")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := adminAs.CoreV1().Pods(ns).Create(ctx, Pod(ns, "admin-as-alice", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("admin impersonating alice: %v", err)
		}
		reviews, objs := env.created("pods")
		if i := slices.IndexFunc(objs, func(o metav1.PartialObjectMetadata) bool { return o.Name == "admin-as-alice" }); i < 0 {
			t.Error("the webhook never saw admin-as-alice")
		} else {
			wantUser(t, "admin as alice", reviews[i].Request.UserInfo.Username, Alice, reviews[i].Request.UserInfo.Groups, []string{"dev"})
		}
	})

	t.Run("tenants cannot touch webhook configurations", func(t *testing.T) {
		for _, u := range Tenants {
			_, err := client(t, u).AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s listing mutating webhook configurations: err = %v, want Forbidden", u, err)
			}
			err = client(t, u).AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "smoke-validate-"+ns, metav1.DeleteOptions{})
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s deleting the validating webhook: err = %v, want Forbidden", u, err)
			}
		}
	})
}
