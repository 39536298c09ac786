//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The control plane serves admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy (GA in Kubernetes 1.36) with no feature gate or
// runtime config: a policy bound to one namespace annotates alice's
// ConfigMaps there with her user name, no webhook in the path.
func TestMutatingAdmissionPolicyServed(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 2*time.Minute)
	admin, alice := client(t, Admin), client(t, Alice)
	label := fmt.Sprintf("p%d", time.Now().UnixNano()%1e9)
	ns, err := cluster.NewNamespace(ctx, "policy", map[string]string{"usher-e2e/policy": label})
	if err != nil {
		t.Fatal(err)
	}
	name, key := "usher-e2e-"+label, "usher-e2e/created-by"
	reg := admin.AdmissionregistrationV1()
	_, err = reg.MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"usher-e2e/policy": label}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}},
			},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {%q: request.userInfo.username}}}`, key),
				},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = reg.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, del := range []func() error{
			func() error { return reg.MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}) },
			func() error { return reg.MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}) },
			func() error { return admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) },
		} {
			if err := del(); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})

	// The API server compiles a new policy asynchronously: dry runs until
	// it acts.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		got, err := alice.CoreV1().ConfigMaps(ns).Create(ctx, cm, dry)
		return err == nil && got.Annotations[key] == Alice, err
	})
	if err != nil {
		t.Fatalf("the policy never annotated a ConfigMap in %s: %v", ns, err)
	}
	got, err := alice.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[key] != Alice {
		t.Errorf("stored ConfigMap has annotations %v, want %s=%q", got.Annotations, key, Alice)
	}
}
