//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// autoscaler is the cluster autoscaler's user: a kube-system service
// account, so a trusted controller under usher's default systemUsers.
const autoscaler = "system:serviceaccount:kube-system:cluster-autoscaler"

// shippedWebhook returns the validating webhook name of
// deploy/webhooks.yaml (validate-status.usher.io, validate-binding.usher.io):
// its rules and matchConditions are what the tests register, so that they
// prove the shipped configuration.
func shippedWebhook(t *testing.T, name string) admissionregistrationv1.ValidatingWebhook {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("deploy/webhooks.yaml: %v", err)
		}
		var w admissionregistrationv1.ValidatingWebhookConfiguration
		if err := json.Unmarshal(raw, &w); err != nil || w.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		for _, h := range w.Webhooks {
			if h.Name == name {
				return h
			}
		}
	}
	t.Fatalf("deploy/webhooks.yaml has no %s", name)
	return admissionregistrationv1.ValidatingWebhook{}
}

// evictionRules is the rule docs/delete.md adds with enforceDeleteACLs:
// CREATE on pods/eviction.
var evictionRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule: admissionregistrationv1.Rule{
		APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"},
	},
}}

// registerValidating registers one more validating webhook of this usher
// and removes it at the end of the test.
func (e *usherEnv) registerValidating(ctx context.Context, name string, rules []admissionregistrationv1.RuleWithOperations, mcs []admissionregistrationv1.MatchCondition) {
	t := e.t
	t.Helper()
	un, err := RegisterValidatingWebhook(ctx, e.admin, Webhook{
		Name: name + "-" + e.label, URL: e.u.URL() + "/validate", CABundle: e.u.Cert.CABundle,
		FailurePolicy: admissionregistrationv1.Fail, Rules: rules, MatchConditions: mcs,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{usherNSLabel: e.label}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := un(ctx); err != nil {
			t.Error(err)
		}
	})
}

// grantSubresources lets the tenants (and the autoscaler's service
// account) in ns evict pods and write the status of pods and Deployments:
// and bind them: the built-in edit role grants the first, schedulers'
// and wildcard roles of operators the others.
func grantSubresources(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "usher-e2e-subresources", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods/eviction", "pods/binding"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/status"}, Verbs: []string{"get", "update", "patch"}},
		},
	}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "cluster-autoscaler", Namespace: "kube-system"}},
	}
	for _, u := range Tenants {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setupKill is setupDelete plus the shipped status webhook and the
// eviction rule of docs/delete.md, with the tenants allowed to use both
// subresources, and usher running as a service account bound to the
// ClusterRoles deploy/rbac.yaml ships (it reads the owners that adopt).
// It waits until both subresources demonstrably reach usher.
func setupKill(t *testing.T, ctx context.Context, config, prefix string) (*usherEnv, string) {
	t.Helper()
	roles := shippedClusterRoles(t)
	e := &usherEnv{t: t, label: fmt.Sprintf("k%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1)), admin: client(t, Admin)}
	ns := e.namespace(ctx, prefix)
	kubeconfig := usherServiceAccount(t, ctx, e, ns, t.TempDir())
	for _, role := range []string{"usher-event-recorder", "usher-owner-reader"} {
		bindShipped(t, ctx, e, roles, role, "system:serviceaccount:"+ns+":usher")
	}
	label := e.label
	e = startUsherWith(t, ctx, config, "--kubeconfig", kubeconfig)
	e.label = label
	e.register(ctx, ns)
	e.registerDelete(ctx, ns)
	grantSubresources(ctx, t, e.admin, ns)
	status := shippedWebhook(t, "validate-status.usher.io")
	e.registerValidating(ctx, "usher-status", status.Rules, status.MatchConditions)
	binding := shippedWebhook(t, "validate-binding.usher.io")
	e.registerValidating(ctx, "usher-binding", binding.Rules, binding.MatchConditions)
	e.registerValidating(ctx, "usher-evict", evictionRules, nil)

	alice, bob := client(t, Alice), client(t, Bob)
	const probe = "usher-kill-probe"
	if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, probe, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating the probe pod: %v", err)
	}
	var last error
	err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		last = bob.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: probe, Namespace: ns},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}},
		})
		return last != nil && strings.Contains(last.Error(), `user "bob" may not evict Pod`), nil
	})
	if err != nil {
		t.Fatalf("usher never decided evictions in %s (last dry-run eviction: %v): %v", ns, last, err)
	}
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := bob.CoreV1().Pods(ns).Get(ctx, probe, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p.Annotations[UserInfoAnnotation] = UserInfoJSON(Bob)
		_, last = bob.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), "may not change annotation "+UserInfoAnnotation), nil
	})
	if err != nil {
		t.Fatalf("usher never saw status updates in %s (last dry-run update: %v): %v", ns, last, err)
	}
	if err := alice.CoreV1().Pods(ns).Delete(ctx, probe, metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatalf("alice deleting her probe pod: %v", err)
	}
	return e, ns
}

// wantUntouched checks, a few seconds after a refused attempt (long
// enough for the garbage collector to act on a dangling owner), that the
// pod is still there, not terminating, and has the owner references want.
func wantUntouched(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, want []metav1.OwnerReference) {
	t.Helper()
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
	}
	wantStillThere(ctx, t, c, ns, name)
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	if len(p.OwnerReferences) != len(want) {
		t.Errorf("pod %s/%s has ownerReferences %+v, want %+v", ns, name, p.OwnerReferences, want)
		return
	}
	for i := range want {
		if p.OwnerReferences[i].UID != want[i].UID {
			t.Errorf("pod %s/%s has ownerReferences %+v, want %+v", ns, name, p.OwnerReferences, want)
		}
	}
}

// ownerPatch is a JSON merge patch that sets metadata.ownerReferences.
func ownerPatch(t *testing.T, refs ...metav1.OwnerReference) []byte {
	t.Helper()
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Scenario 12: with enforceDeleteACLs, nobody who may not delete alice's
// pod or workload can have the garbage collector delete it, move it into a
// queue he administers, or change it through the status subresource; the
// controllers that adopt and orphan keep working.
func TestUsherKillRuleEdits(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	e, ns := setupKill(t, ctx, deleteConfig, "kill-edits")
	alice, bob, admin := client(t, Alice), client(t, Bob), client(t, Admin)
	notKiller := func(user string) string {
		return fmt.Sprintf("%s may not kill the application of alice in root.default: not the owner", user)
	}

	if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "victim", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating a pod: %v", err)
	}
	bobsCM, err := bob.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bobs"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bob creating a ConfigMap: %v", err)
	}
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: types.UID("6c9a0000-0000-4000-8000-00000000dead")}
	bobs := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: bobsCM.Name, UID: bobsCM.UID}

	t.Run("bob may not give alice's pod a missing owner or one of his", func(t *testing.T) {
		for _, ref := range []metav1.OwnerReference{ghost, bobs} {
			_, err := bob.CoreV1().Pods(ns).Patch(ctx, "victim", types.MergePatchType, ownerPatch(t, ref), metav1.PatchOptions{})
			wantDenied(t, "bob setting ownerReferences "+ref.Name+" on alice's pod", err,
				fmt.Sprintf(`usher: user "bob" may not change metadata.ownerReferences on Pod "%s/victim": `, ns), notKiller(Bob))
		}
		// kubectl, as a user would try it.
		_, stderr, err := cluster.RunKubectl(ctx, Bob, nil, "-n", ns, "patch", "pod", "victim", "--type=merge", "-p", string(ownerPatch(t, ghost)))
		if err == nil || !strings.Contains(stderr, "may not change metadata.ownerReferences on Pod") {
			t.Errorf("kubectl patch as bob: err %v, stderr %q", err, stderr)
		}
		wantUntouched(ctx, t, admin, ns, "victim", nil)
	})

	t.Run("bob may not move alice's pod into the queue he administers", func(t *testing.T) {
		_, err := bob.CoreV1().Pods(ns).Patch(ctx, "victim", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"queue":"root.ops"}}}`), metav1.PatchOptions{})
		wantDenied(t, "bob labelling alice's pod queue=root.ops", err,
			fmt.Sprintf(`usher: user "bob" may not change label queue on Pod "%s/victim": `, ns), notKiller(Bob))
		err = bob.CoreV1().Pods(ns).Delete(ctx, "victim", metav1.DeleteOptions{})
		wantDenied(t, "bob deleting alice's pod", err, notKiller(Bob))
		wantUntouched(ctx, t, admin, ns, "victim", nil)
	})

	t.Run("the status subresource is guarded like the object", func(t *testing.T) {
		update := func(change func(p *corev1.Pod)) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := bob.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
				if err != nil {
					return err
				}
				change(p)
				_, err = bob.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
				return err
			})
		}
		err := update(func(p *corev1.Pod) { p.Annotations[UserInfoAnnotation] = UserInfoJSON(Bob, "ops") })
		wantDenied(t, "bob rewriting user.info through pods/status", err,
			fmt.Sprintf(`usher: user "bob" may not change annotation %s on Pod "%s/victim"`, UserInfoAnnotation, ns))
		err = update(func(p *corev1.Pod) { p.Annotations[modifyACLAnnotation] = Bob })
		wantDenied(t, "bob adding himself to the modify ACL through pods/status", err,
			fmt.Sprintf(`usher: user "bob" may not change annotation %s on Pod "%s/victim": `, modifyACLAnnotation, ns), notKiller(Bob))
		err = update(func(p *corev1.Pod) { p.Labels = map[string]string{"queue": "root.ops"} })
		wantDenied(t, "bob moving alice's pod through pods/status", err, "may not change label queue on Pod")
		// pods/status cannot change ownerReferences: the API server keeps
		// the stored ones (so usher is not even asked).
		if err := update(func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{ghost} }); err != nil {
			t.Errorf("bob's status update that only tries ownerReferences: %v", err)
		}
		// A status update that leaves the metadata alone passes (and, by
		// the shipped matchConditions, never reaches usher).
		if err := update(func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/Checked", Status: corev1.ConditionTrue})
		}); err != nil {
			t.Errorf("bob's plain status update: %v", err)
		}
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "pod victim", p.Annotations, Alice, aliceGroups...)
		if _, ok := p.Annotations[modifyACLAnnotation]; ok || p.Labels["queue"] != "" {
			t.Errorf("pod victim has annotations %v, labels %v after bob's refused status updates", p.Annotations, p.Labels)
		}
		wantUntouched(ctx, t, admin, ns, "victim", nil)
	})

	t.Run("a Binding may not carry user.info or the kill rule's fields", func(t *testing.T) {
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		bind := func(labels, annotations map[string]string) error {
			return bob.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns, Labels: labels, Annotations: annotations},
				Target:     corev1.ObjectReference{Kind: "Node", Name: "worker-1"},
			}, dry)
		}
		wantDenied(t, "bob binding alice's pod with his user.info", bind(nil, map[string]string{UserInfoAnnotation: UserInfoJSON(Bob)}),
			fmt.Sprintf(`usher: user "bob" may not set annotation %s on Pod "%s/victim" through a Binding`, UserInfoAnnotation, ns))
		wantDenied(t, "bob binding alice's pod with a modify ACL", bind(nil, map[string]string{modifyACLAnnotation: Bob}),
			fmt.Sprintf(`usher: user "bob" may not set annotation %s on Pod "%s/victim" through a Binding`, modifyACLAnnotation, ns))
		wantDenied(t, "bob binding alice's pod into root.ops", bind(map[string]string{"queue": "root.ops"}, nil),
			"may not set label queue on Pod")
		if err := bind(map[string]string{"topology.kubernetes.io/zone": "z1"}, nil); err != nil {
			t.Errorf("a plain binding (dry run): %v", err)
		}
	})

	t.Run("bob may not give alice's Deployment an owner through deployments/status", func(t *testing.T) {
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "keep", 0, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating Deployment keep: %v", err)
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := bob.AppsV1().Deployments(ns).Get(ctx, "keep", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.OwnerReferences = []metav1.OwnerReference{ghost}
			_, err = bob.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		})
		wantDenied(t, "bob setting ownerReferences on alice's Deployment through deployments/status", err,
			fmt.Sprintf(`usher: user "bob" may not change metadata.ownerReferences on Deployment "%s/keep": `, ns), notKiller(Bob))
		_, err = bob.AppsV1().Deployments(ns).Patch(ctx, "keep", types.MergePatchType, ownerPatch(t, ghost), metav1.PatchOptions{})
		wantDenied(t, "bob setting ownerReferences on alice's Deployment", err, "may not change metadata.ownerReferences on Deployment")
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
		}
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, "keep", metav1.GetOptions{})
		if err != nil || d.DeletionTimestamp != nil || len(d.OwnerReferences) != 0 {
			t.Errorf("Deployment keep after bob's refused edits: %v (err %v)", d, err)
		}
	})

	t.Run("alice gives her pod an owner of hers; the garbage collector deletes it with its owner", func(t *testing.T) {
		cm, err := alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "alices"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}
		if _, err := alice.CoreV1().Pods(ns).Patch(ctx, "victim", types.MergePatchType, ownerPatch(t, ref), metav1.PatchOptions{}); err != nil {
			t.Fatalf("alice setting an owner on her own pod: %v", err)
		}
		if err := alice.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, background()); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, "pod victim", 60*time.Second, func(ctx context.Context) error {
			_, err := admin.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
			return err
		})
	})

	t.Run("a Deployment still rolls out", func(t *testing.T) {
		d := Deployment(ns, "roll", 2, nil)
		// No kubelet runs pods here, so none becomes ready: let the
		// rollout replace every pod at once.
		all := intstr.FromString("100%")
		zero := intstr.FromInt32(0)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &all, MaxSurge: &zero}}
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating Deployment roll: %v", err)
		}
		first := waitPods(ctx, t, admin, ns, "app=roll", 2, 90*time.Second)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := alice.AppsV1().Deployments(ns).Get(ctx, "roll", metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "REVISION", Value: "2"}}
			_, err = alice.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("alice changing the template of Deployment roll: %v", err)
		}
		var last string
		err = Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, "roll", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=roll"})
			if err != nil {
				return false, err
			}
			pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=roll"})
			if err != nil {
				return false, err
			}
			old := 0
			for _, p := range pods.Items {
				for _, f := range first {
					if p.Name == f.Name {
						old++
					}
				}
			}
			last = fmt.Sprintf("generation %d observed %d updatedReplicas %d, %d ReplicaSets, %d pods of which %d old",
				d.Generation, d.Status.ObservedGeneration, d.Status.UpdatedReplicas, len(rss.Items), len(pods.Items), old)
			return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 2 && len(rss.Items) == 2 &&
				len(pods.Items) == 2 && old == 0, nil
		})
		if err != nil {
			t.Fatalf("Deployment roll did not roll out: %s: %v", last, err)
		}
		for _, p := range waitPods(ctx, t, admin, ns, "app=roll", 2, 60*time.Second) {
			wantIdentity(t, "pod "+p.Name, p.Annotations, Alice, aliceGroups...)
		}
	})

	t.Run("a ReplicaSet adopts alice's orphans and the garbage collector orphans them again", func(t *testing.T) {
		labels := map[string]string{"app": "adopt"}
		for _, name := range []string{"orphan-1", "orphan-2"} {
			p := Pod(ns, name, nil)
			p.Labels = labels
			if _, err := alice.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("alice creating pod %s: %v", name, err)
			}
		}
		two := int32(2)
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adopt"},
			Spec: appsv1.ReplicaSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: PodSpec()}},
		}
		rs, err := alice.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("alice creating ReplicaSet adopt: %v", err)
		}
		// The ReplicaSet adopts the orphans its controller's cache holds
		// when it syncs; one created a moment before may not be there yet,
		// and then it creates a pod and scales one away later. What counts
		// is that usher lets every adoption through and that the
		// ReplicaSet settles on two pods of its own.
		rsCtrl := cluster.ControllerUser("replicaset-controller")
		var last []string
		err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=adopt"})
			if err != nil {
				return false, err
			}
			last = last[:0]
			owned := 0
			for _, p := range pods.Items {
				ref := metav1.GetControllerOf(&p)
				last = append(last, fmt.Sprintf("%s owned by %v", p.Name, ref))
				if ref != nil && ref.UID == rs.UID {
					owned++
				}
			}
			adoptions := 0
			for _, r := range e.auditRecords() {
				if r["operation"] == "UPDATE" && r["object"] == "Pod" && r["namespace"] == ns && strings.HasPrefix(r["name"], "orphan-") && r["user"] == rsCtrl {
					if r["allowed"] != "true" {
						return false, fmt.Errorf("usher refused the adoption: %v", r)
					}
					adoptions++
				}
			}
			return owned == 2 && len(pods.Items) == 2 && adoptions > 0, nil
		})
		if err != nil {
			t.Fatalf("ReplicaSet adopt did not adopt alice's orphans and settle on two pods: %v: %v", last, err)
		}

		orphan := metav1.DeletePropagationOrphan
		if err := alice.AppsV1().ReplicaSets(ns).Delete(ctx, "adopt", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatalf("alice deleting ReplicaSet adopt, orphaning its pods: %v", err)
		}
		err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=adopt"})
			if err != nil {
				return false, err
			}
			last = last[:0]
			free := 0
			for _, p := range pods.Items {
				last = append(last, fmt.Sprintf("%s owners %v", p.Name, p.OwnerReferences))
				if len(p.OwnerReferences) == 0 && p.DeletionTimestamp == nil {
					free++
				}
			}
			return free == 2 && len(pods.Items) == 2, nil
		})
		if err != nil {
			t.Fatalf("the garbage collector did not orphan the pods: %v: %v", last, err)
		}
	})

	// No controller was ever refused: only bob.
	for _, r := range e.auditRecords() {
		if r["allowed"] != "true" && r["user"] != Bob && r["dryRun"] != "true" {
			t.Errorf("usher refused a request it should have let through: %v", r)
		}
	}
}

// Scenario 14: with enforceDeleteACLs, bob's ReplicaSet whose selector
// matches alice's bare pod may not adopt it: usher refuses the ReplicaSet
// controller's adoption (it reads bob's ReplicaSet, and bob may not kill
// alice's pod), so the pod keeps no owner and is not scaled away. alice's
// own ReplicaSet adopts it.
func TestUsherKillRuleAdoption(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	e, ns := setupKill(t, ctx, deleteConfig, "kill-adopt")
	alice, bob, admin := client(t, Alice), client(t, Bob), client(t, Admin)
	labels := map[string]string{"app": "bare"}
	p := Pod(ns, "bare", nil)
	p.Labels = labels
	if _, err := alice.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating her bare pod: %v", err)
	}
	replicaSet := func(name string, replicas int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: PodSpec()}},
		}
	}
	if _, err := bob.AppsV1().ReplicaSets(ns).Create(ctx, replicaSet("grab", 0), metav1.CreateOptions{}); err != nil {
		t.Fatalf("bob creating ReplicaSet grab: %v", err)
	}
	rsCtrl := cluster.ControllerUser("replicaset-controller")
	want := fmt.Sprintf(`usher: user "bob" may not let ReplicaSet "grab" adopt Pod "%s/bare": bob may not kill the application of alice`, ns)
	var refused auditRecord
	err := Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
		for _, r := range e.auditRecords() {
			if r["operation"] == "UPDATE" && r["object"] == "Pod" && r["name"] == "bare" && r["user"] == rsCtrl {
				if r["allowed"] != "false" {
					return false, fmt.Errorf("usher let the ReplicaSet controller adopt alice's pod for bob: %v", r)
				}
				refused = r
			}
		}
		return refused != nil, nil
	})
	if err != nil || !strings.Contains(refused["reason"], want) {
		t.Fatalf("the ReplicaSet controller's adoption for bob: %v (%v), want it refused with %q", refused, err, want)
	}
	wantUntouched(ctx, t, admin, ns, "bare", nil)
	if err := bob.AppsV1().ReplicaSets(ns).Delete(ctx, "grab", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("bob deleting ReplicaSet grab: %v", err)
	}

	mine, err := alice.AppsV1().ReplicaSets(ns).Create(ctx, replicaSet("mine", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("alice creating ReplicaSet mine: %v", err)
	}
	var owner *metav1.OwnerReference
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "bare", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		owner = metav1.GetControllerOf(p)
		return owner != nil && owner.UID == mine.UID, nil
	})
	if err != nil {
		t.Fatalf("alice's ReplicaSet did not adopt her pod (controller %v): %v", owner, err)
	}
	wantStillThere(ctx, t, admin, ns, "bare")
}

// Scenario 13: with enforceDeleteACLs and pods/eviction registered, an
// eviction (what kubectl drain and autoscalers do) is left to trusted
// controllers, system:masters and admins of every queue; a tenant, the
// pod's owner included, is told to delete the pod instead.
func TestUsherKillRuleEvictions(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	e, ns := setupKill(t, ctx, deleteConfig, "kill-evict")
	alice, bob, carol, admin := client(t, Alice), client(t, Bob), client(t, Carol), client(t, Admin)
	scaler, err := cluster.ClientAs(Admin, autoscaler, "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"e-carol", "e-scaler", "e-admin"} {
		if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating pod %s: %v", name, err)
		}
	}
	evict := func(c kubernetes.Interface, name string) error {
		return c.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	}

	t.Run("bob and alice may not evict", func(t *testing.T) {
		for _, tc := range []struct {
			user string
			c    kubernetes.Interface
		}{{Bob, bob}, {Alice, alice}} {
			err := evict(tc.c, "e-carol")
			wantDenied(t, tc.user+" evicting alice's pod", err,
				fmt.Sprintf(`usher: user %q may not evict Pod "%s/e-carol": with enforceDeleteACLs on`, tc.user, ns), "delete the pod instead")
		}
		wantStillThere(ctx, t, admin, ns, "e-carol")
	})

	for _, tc := range []struct {
		what, pod, user string
		c               kubernetes.Interface
		reason          string
	}{
		{"carol, a cluster admin", "e-carol", Carol, carol, `eviction by an admin of every queue: carol may kill the application`},
		{"the cluster autoscaler, a trusted controller", "e-scaler", autoscaler, scaler, "eviction by a trusted controller"},
		{"admin, in system:masters", "e-admin", Admin, admin, "eviction by a member of system:masters"},
	} {
		t.Run(tc.what+" evicts alice's pod", func(t *testing.T) {
			if err := evict(tc.c, tc.pod); err != nil {
				t.Fatalf("%s evicting pod %s: %v", tc.user, tc.pod, err)
			}
			waitGone(ctx, t, "pod "+tc.pod, 30*time.Second, func(ctx context.Context) error {
				_, err := admin.CoreV1().Pods(ns).Get(ctx, tc.pod, metav1.GetOptions{})
				return err
			})
			var rec auditRecord
			err := Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
				for _, r := range e.auditRecords() {
					if r["object"] == "Eviction" && r["name"] == tc.pod && r["user"] == tc.user && r["dryRun"] != "true" {
						rec = r
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("usher recorded no eviction of %s by %s: %v", tc.pod, tc.user, err)
			}
			wantAllowedBecause(t, rec, tc.reason)
		})
	}

	// The pod's owner deletes it instead: the kill rule decides on the pod.
	if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "e-own", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := alice.CoreV1().Pods(ns).Delete(ctx, "e-own", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatalf("alice deleting her pod: %v", err)
	}
	if _, err := admin.CoreV1().Pods(ns).Get(ctx, "e-own", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
