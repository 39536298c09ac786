//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/admission/settings"
)

// startUsherReading starts usher with config and the credentials of a
// service account bound to the shipped usher-owner-reader (Namespaces and
// LocalQueues), and registers it for a new namespace carrying labels too.
func startUsherReading(t *testing.T, ctx context.Context, config, prefix string, labels map[string]string) (*usherEnv, string) {
	t.Helper()
	roles := shippedClusterRoles(t)
	e := &usherEnv{t: t, label: fmt.Sprintf("s%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1)), admin: client(t, Admin)}
	ns := e.namespace(ctx, prefix)
	if len(labels) > 0 {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, KueueNamespaceLabel, labels[KueueNamespaceLabel])
		if _, err := e.admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := usherServiceAccount(t, ctx, e, ns, t.TempDir())
	bindShipped(t, ctx, e, roles, "usher-owner-reader", "system:serviceaccount:"+ns+":usher")
	label := e.label
	e = startUsherWith(t, ctx, config, "--kubeconfig", kubeconfig)
	e.label = label
	e.register(ctx, ns)
	return e, ns
}

// A Job's kueue.x-k8s.io/queue-name is judged on the queue its LocalQueue's
// ClusterQueue maps to: alice's Job for LocalQueue "ops" (ClusterQueue
// ops-*, mapped to root.ops, which she may not use) is refused and never
// becomes a Kueue Workload; her Job for LocalQueue "team" (ClusterQueue
// open-*, mapped to root.dev) becomes a Workload, is admitted, its pods
// bound to a KWOK node by kube-scheduler and run to completion. Through
// the /validate rule admission.Registration renders for LocalQueues, she
// cannot create a LocalQueue on the ops ClusterQueue, and can on the open one.
func TestKueueJudgesJobsAndLocalQueuesByClusterQueue(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 8*time.Minute)
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	open, ops, flavor := "open-"+suffix, "ops-"+suffix, "kwok-"+suffix
	config := fmt.Sprintf(`partitions:
  - name: default
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: default
            submitacl: "*"
          - name: dev
            submitacl: alice
          - name: ops
            submitacl: bob
admissionController:
  enforceQueueACLs: true
  queueMapping:
    table:
      - {scheduler: kueue, value: %s, queue: root.dev}
      - {scheduler: kueue, value: %s, queue: root.ops}
`, open, ops)
	e, ns := startUsherReading(t, ctx, config, "kueue-steer", map[string]string{KueueNamespaceLabel: "true"})
	e.registerLocalQueues(ctx)
	dyn, err := cluster.Dynamic(Admin)
	if err != nil {
		t.Fatal(err)
	}
	createKueue(ctx, t, dyn, ResourceFlavors, "", map[string]any{"kind": "ResourceFlavor", "metadata": map[string]any{"name": flavor},
		"spec": map[string]any{"nodeLabels": map[string]any{KWOKNodeLabel: KWOKNodeValue},
			"tolerations": []any{map[string]any{"key": KWOKTaint, "operator": "Equal", "value": KWOKTaintValue, "effect": "NoSchedule"}}}})
	for _, cq := range []string{open, ops} {
		createKueue(ctx, t, dyn, ClusterQueues, "", map[string]any{"kind": "ClusterQueue", "metadata": map[string]any{"name": cq},
			"spec": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{usherNSLabel: e.label}},
				"resourceGroups": []any{map[string]any{"coveredResources": []any{"cpu", "memory"},
					"flavors": []any{map[string]any{"name": flavor, "resources": []any{
						map[string]any{"name": "cpu", "nominalQuota": "2"}, map[string]any{"name": "memory", "nominalQuota": "4Gi"}}}}}}}})
	}
	// The admin (system:masters) is not asked.
	for lq, cq := range map[string]string{"team": open, "ops": ops} {
		createKueue(ctx, t, dyn, LocalQueues, ns, map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": lq, "namespace": ns},
			"spec": map[string]any{"clusterQueue": cq}})
	}
	alice := client(t, Alice)
	job := func(name, lq string) *batchv1.Job {
		j := Job(ns, name, map[string]string{"kueue.x-k8s.io/queue-name": lq}, nil)
		j.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
		return j
	}

	_, err = alice.BatchV1().Jobs(ns).Create(ctx, job("to-ops", "ops"), metav1.CreateOptions{})
	wantDenied(t, "alice's Job for LocalQueue ops", err, `user "alice" may not submit to queue "root.ops"`,
		fmt.Sprintf(`label kueue.x-k8s.io/queue-name="ops" on the Job, read for kueue, whose LocalQueue uses ClusterQueue %q`, ops))
	_, err = alice.BatchV1().Jobs(ns).Create(ctx, job("to-nowhere", "gone"), metav1.CreateOptions{})
	if want := fmt.Sprintf(`names LocalQueue "%s/gone", which does not exist`, ns); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("alice's Job for a LocalQueue that does not exist: %v, want a 400 containing %q", err, want)
	}

	created, err := alice.BatchV1().Jobs(ns).Create(ctx, job("train", "team"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admittedWorkload(ctx, t, dyn, created, open)
	waitJobComplete(ctx, t, alice, ns, "train")
	for _, p := range waitPods(ctx, t, e.admin, ns, "app=train", 1, 60*time.Second) {
		if !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") || p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s: node %q, phase %s; want a kwok-node-N, Succeeded", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
	// The refused Job was never stored, so Kueue made no Workload of it.
	l, err := dyn.Resource(Workloads).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Errorf("Workloads in %s: %d (%v), want only train's", ns, len(l.Items), err)
	}
	if _, err := alice.BatchV1().Jobs(ns).Get(ctx, "to-ops", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Job to-ops: %v, want not found", err)
	}

	// alice may create LocalQueues in her namespace (RBAC): usher decides.
	rbac := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "localqueues", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"localqueues"}, Verbs: []string{"create", "get"}}}}
	if _, err := e.admin.RbacV1().Roles(ns).Create(ctx, rbac, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "localqueues", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "localqueues"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: Alice}}}
	if _, err := e.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	aliceDyn, err := cluster.Dynamic(Alice)
	if err != nil {
		t.Fatal(err)
	}
	lq := func(name, cq string) error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"clusterQueue": cq}}}
		_, err := aliceDyn.Resource(LocalQueues).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		return err
	}
	// RBAC takes a moment: until it allows the create, the API server refuses
	// it before usher is asked.
	var denied error
	_ = Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		denied = lq("mine", ops)
		return denied == nil || !strings.Contains(denied.Error(), "cannot create resource"), nil
	})
	wantDenied(t, "alice's LocalQueue on the ops ClusterQueue", denied,
		fmt.Sprintf(`user "alice" may not point LocalQueue "%s/mine" at ClusterQueue %q: it maps to queue "root.ops"`, ns, ops))
	err = Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := lq("mine", open)
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("alice's LocalQueue on the open ClusterQueue: %v (last: %v)", err, lq("mine", open))
	}
}

// registerLocalQueues registers this usher's /validate for the LocalQueue
// rule admission.Registration renders with enforceQueueACLs.
func (e *usherEnv) registerLocalQueues(ctx context.Context) {
	e.t.Helper()
	_, v := admission.Registration(settings.Config{EnforceQueueACLs: true}, admission.Install{})
	var rules []admissionregistrationv1.RuleWithOperations
	for _, r := range v.Webhooks[0].Rules {
		if slices.Contains(r.APIGroups, "kueue.x-k8s.io") {
			rules = append(rules, r)
		}
	}
	if len(rules) != 1 {
		e.t.Fatalf("validate.usher.io rules for LocalQueues: %+v", rules)
	}
	e.registerValidating(ctx, "usher-lq", rules, nil)
}

// A namespace annotated yunikorn.apache.org/parentqueue: root.prod has its
// next pod placed under root.prod by YuniKorn's usual rule (tag namespace
// under tag namespace.parentqueue), as usher's audit record shows; before
// the annotation the next rule places it under root.tenants. `usher place
// --tag namespace.parentqueue=root.prod` gives the same queue offline.
func TestNamespaceParentQueuePlacesPods(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	const config = `partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent:
          name: tag
          value: namespace.parentqueue
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: root.tenants
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: prod
            parent: true
            submitacl: alice
          - name: tenants
            parent: true
            submitacl: alice
admissionController:
  enforceQueueACLs: true
`
	e, ns := startUsherReading(t, ctx, config, "parentq", nil)
	alice := client(t, Alice)
	placed := func(name string) string {
		if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod %s: %v", name, err)
		}
		var q string
		err := Eventually(ctx, 15*time.Second, func(context.Context) (bool, error) {
			for _, r := range e.auditRecords() {
				if r["operation"] == "CREATE" && r["namespace"] == ns && r["name"] == name && r["dryRun"] != "true" && r["allowed"] == "true" {
					q = r["queue"]
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no audit record of pod %s: %v", name, err)
		}
		return q
	}
	if q := placed("before"); q != "root.tenants."+ns {
		t.Errorf("before the annotation: placed in %q, want root.tenants.%s", q, ns)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"yunikorn.apache.org/parentqueue":"root.prod"}}}`)
	if _, err := e.admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer sees the annotation soon after: a pod labelled for the
	// queue it gets draws no placed-elsewhere warning.
	want := "root.prod." + ns
	manifest := []byte(fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: probe, labels: {queue: %s}}\nspec: {containers: [{name: main, image: %s}]}\n", want, Image))
	var stderr string
	err := Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		_, stderr, err = cluster.RunKubectl(ctx, Alice, manifest, "-n", ns, "create", "--dry-run=server", "-f", "-")
		return err == nil && !strings.Contains(stderr, "Warning:"), nil
	})
	if err != nil {
		t.Fatalf("usher never placed a pod under root.prod (last: %s): %v", stderr, err)
	}
	if q := placed("after"); q != want {
		t.Errorf("after the annotation: placed in %q, want %s", q, want)
	}
	bin, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.CommandContext(ctx, bin, "place", "--config", e.u.ConfigPath, "--user", Alice, "--groups", "dev",
		"--tag", "namespace="+ns, "--tag", "namespace.parentqueue=root.prod").Output()
	if first, _, _ := strings.Cut(string(out), "\n"); first != want {
		t.Errorf("usher place: %q, want %s", out, want)
	}
}
