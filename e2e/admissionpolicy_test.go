//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The control plane serves admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy (GA in Kubernetes 1.36) and
// ValidatingAdmissionPolicy, and enforces them with no webhook in the
// path: a mutating policy bound to a namespace labels alice's pods there,
// and a validating policy refuses a pod it names.
func TestAdmissionPoliciesServed(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 2*time.Minute)
	admin, alice := client(t, Admin), client(t, Alice)
	label := fmt.Sprintf("p%d", time.Now().UnixNano()%1e9)
	ns, err := cluster.NewNamespace(ctx, "policy", map[string]string{"usher-e2e/policy": label})
	if err != nil {
		t.Fatal(err)
	}
	name := "usher-e2e-" + label
	match := &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"usher-e2e/policy": label}},
	}
	pods := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		},
	}}}
	reg := admin.AdmissionregistrationV1()
	for _, step := range []func() error{
		func() error {
			_, err := reg.MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
					MatchConstraints:   pods,
					ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
					Mutations: []admissionregistrationv1.Mutation{{
						PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
						ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
							Expression: `Object{metadata: Object.metadata{labels: {"usher-e2e/stamped": request.userInfo.username}}}`,
						},
					}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := reg.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, MatchResources: match},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := reg.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
					MatchConstraints: pods,
					Validations: []admissionregistrationv1.Validation{{
						Expression: `!object.metadata.name.startsWith("refused-")`,
						Message:    "usher-e2e: refused by the validating policy",
					}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
					PolicyName: name, MatchResources: match,
					ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				},
			}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{
			reg.MutatingAdmissionPolicyBindings().Delete, reg.MutatingAdmissionPolicies().Delete,
			reg.ValidatingAdmissionPolicyBindings().Delete, reg.ValidatingAdmissionPolicies().Delete,
		} {
			if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
		if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})

	// The API server compiles new policies asynchronously: dry runs until
	// both act.
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "probe", nil), dry)
		if err != nil {
			return false, err
		}
		_, last = alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "refused-probe", nil), dry)
		return p.Labels["usher-e2e/stamped"] == Alice && last != nil, nil
	})
	if err != nil {
		t.Fatalf("the policies never took effect in %s (last refused-probe: %v): %v", ns, last, err)
	}
	p, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Labels["usher-e2e/stamped"]; got != Alice {
		t.Errorf("stored pod has label usher-e2e/stamped=%q, want %q", got, Alice)
	}
	_, err = alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "refused-web", nil), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "refused by the validating policy") {
		t.Errorf("pod refused-web: got %v, want the validating policy's refusal", err)
	}
}
