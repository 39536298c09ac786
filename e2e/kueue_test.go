//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// defaultConfig is usher's configuration with every setting at its
// default: one open queue, controllers trusted.
const defaultConfig = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
`

// A real queueing system decides after usher: alice's Job labelled for a
// LocalQueue is stamped by usher, suspended by Kueue's webhook, becomes a
// Kueue Workload that Kueue admits on the ClusterQueue's quota (adding the
// ResourceFlavor's node label and toleration), its pods are bound to a
// KWOK node by kube-scheduler, run and succeed (KWOK), and the Job
// completes, its pods still alice's.
func TestKueueAdmitsAndRunsAliceJob(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 8*time.Minute)
	e := startUsher(t, ctx, defaultConfig)
	ns, err := cluster.NewNamespace(ctx, "kueue", map[string]string{usherNSLabel: e.label, KueueNamespaceLabel: "true"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	e.register(ctx, ns)

	dyn, err := cluster.Dynamic(Admin)
	if err != nil {
		t.Fatal(err)
	}
	flavor, cq := "kwok-"+e.label, "cq-"+e.label
	createKueue(ctx, t, dyn, ResourceFlavors, "", map[string]any{
		"kind":     "ResourceFlavor",
		"metadata": map[string]any{"name": flavor},
		"spec": map[string]any{
			"nodeLabels":  map[string]any{KWOKNodeLabel: KWOKNodeValue},
			"tolerations": []any{map[string]any{"key": KWOKTaint, "operator": "Equal", "value": KWOKTaintValue, "effect": "NoSchedule"}},
		},
	})
	createKueue(ctx, t, dyn, ClusterQueues, "", map[string]any{
		"kind":     "ClusterQueue",
		"metadata": map[string]any{"name": cq},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{usherNSLabel: e.label}},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu", "memory"},
				"flavors": []any{map[string]any{"name": flavor, "resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": "2"},
					map[string]any{"name": "memory", "nominalQuota": "4Gi"},
				}}},
			}},
		},
	})
	createKueue(ctx, t, dyn, LocalQueues, ns, map[string]any{
		"kind":     "LocalQueue",
		"metadata": map[string]any{"name": "team", "namespace": ns},
		"spec":     map[string]any{"clusterQueue": cq},
	})

	job := Job(ns, "train", map[string]string{"kueue.x-k8s.io/queue-name": "team"}, nil)
	job.Spec.Parallelism, job.Spec.Completions = ptr(int32(2)), ptr(int32(2))
	job.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
	}
	alice := client(t, Alice)
	// The ClusterQueue and LocalQueue become active asynchronously;
	// Kueue's webhook suspends the Job whatever their state.
	created, err := alice.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Suspend == nil || !*created.Spec.Suspend {
		t.Errorf("the stored Job is not suspended (suspend %v): Kueue's webhook did not act", created.Spec.Suspend)
	}
	wantIdentity(t, "the stored Job's pod template", created.Spec.Template.Annotations, Alice, "dev")

	wl := admittedWorkload(ctx, t, dyn, created, cq)

	waitJobComplete(ctx, t, alice, ns, "train")
	pods := waitPods(ctx, t, e.admin, ns, "app=train", 2, 60*time.Second)
	for _, p := range pods {
		if !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") || p.Spec.SchedulerName != corev1.DefaultSchedulerName {
			t.Errorf("pod %s: bound to node %q by scheduler %q, want a kwok-node-N by %q", p.Name, p.Spec.NodeName, p.Spec.SchedulerName, corev1.DefaultSchedulerName)
		}
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s: phase %s, want %s", p.Name, p.Status.Phase, corev1.PodSucceeded)
		}
		if p.Spec.NodeSelector[KWOKNodeLabel] != KWOKNodeValue {
			t.Errorf("pod %s: node selector %v, want %s=%s from the ResourceFlavor", p.Name, p.Spec.NodeSelector, KWOKNodeLabel, KWOKNodeValue)
		}
		wantIdentity(t, "pod "+p.Name, p.Annotations, Alice, "dev")
	}
	err = Eventually(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		w, err := dyn.Resource(Workloads).Namespace(ns).Get(ctx, wl.GetName(), metav1.GetOptions{})
		return err == nil && condition(w, "Finished") == "True", err
	})
	if err != nil {
		t.Errorf("Workload %s/%s is not Finished: %v", ns, wl.GetName(), err)
	}
}

// admittedWorkload waits for Kueue to admit the Workload of job and
// checks that ClusterQueue cq admitted it.
func admittedWorkload(ctx context.Context, t *testing.T, dyn dynamic.Interface, job *batchv1.Job, cq string) *unstructured.Unstructured {
	t.Helper()
	var wl *unstructured.Unstructured
	err := Eventually(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := dyn.Resource(Workloads).Namespace(job.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range l.Items {
			if slices.ContainsFunc(l.Items[i].GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == job.UID }) {
				wl = &l.Items[i]
				return condition(wl, "Admitted") == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no admitted Kueue Workload for Job %s/%s (last seen: %v; see %s/logs/kueue.log): %v", job.Namespace, job.Name, wl, cluster.StateDir, err)
	}
	if got, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue"); got != cq {
		t.Errorf("Workload %s admitted by ClusterQueue %q, want %q", wl.GetName(), got, cq)
	}
	return wl
}

// waitJobComplete waits for Job ns/name to complete: kube-scheduler bound
// its pods to KWOK's nodes and KWOK ran them.
func waitJobComplete(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	err := Eventually(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		j, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
			return c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue
		}), err
	})
	if err != nil {
		t.Fatalf("Job %s/%s did not complete (see %s/logs/kube-scheduler.log and kwok.log): %v", ns, name, cluster.StateDir, err)
	}
}

// createKueue makes a Kueue object (obj names its kind) as admin,
// namespaced when ns is set, and deletes it when the test ends.
func createKueue(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(gvr.GroupVersion().String())
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", gvr.Resource, u.GetName(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", gvr.Resource, u.GetName(), err)
		}
	})
}

// condition returns the status of obj's status.conditions entry of type
// typ, or "".
func condition(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
