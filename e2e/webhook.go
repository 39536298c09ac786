//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WorkloadRules are the kinds usher admits (as YuniKorn's admission controller does): Pods,
// ReplicationControllers, Deployments, ReplicaSets, DaemonSets,
// StatefulSets, Jobs and CronJobs, on CREATE and UPDATE.
var WorkloadRules = []admissionregistrationv1.RuleWithOperations{
	{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"v1"},
			Resources: []string{"pods", "replicationcontrollers"},
		},
	},
	{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
			Resources: []string{"deployments", "replicasets", "daemonsets", "statefulsets"},
		},
	},
	{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"batch"}, APIVersions: []string{"v1"},
			Resources: []string{"jobs", "cronjobs"},
		},
	},
}

// Webhook describes one admission webhook served on loopback. The zero
// values of the optional fields give what usher is meant to be registered
// with: failurePolicy Fail (fail closed), the WorkloadRules, every
// namespace, sideEffects None, admissionReviewVersions v1, a 10s timeout.
type Webhook struct {
	// Name names the configuration object and, with ".usher.e2e" appended
	// when it has no dot, the webhook in it (webhook names must be
	// qualified). Required.
	Name string
	// URL is where the API server sends AdmissionReviews, for example
	// https://127.0.0.1:PORT/mutate. Required; must be https.
	URL string
	// CABundle is the PEM certificate that verifies the server at URL,
	// for example ServingCert.CABundle. Required.
	CABundle []byte
	// FailurePolicy defaults to Fail.
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// Rules default to WorkloadRules.
	Rules []admissionregistrationv1.RuleWithOperations
	// NamespaceSelector, when set, limits the webhook to the namespaces it
	// matches (for example the label given to NewNamespace); nil means all.
	NamespaceSelector *metav1.LabelSelector
	// TimeoutSeconds defaults to 10.
	TimeoutSeconds int32
	// MatchConditions, when set, are the webhook's matchConditions (CEL);
	// the API server calls it only when all are true.
	MatchConditions []admissionregistrationv1.MatchCondition
}

func (w Webhook) validate() error {
	switch {
	case w.Name == "":
		return errors.New("e2e: webhook has no Name")
	case !strings.HasPrefix(w.URL, "https://"):
		return fmt.Errorf("e2e: webhook %s: URL %q is not https://", w.Name, w.URL)
	case len(w.CABundle) == 0:
		return fmt.Errorf("e2e: webhook %s: no CABundle", w.Name)
	}
	return nil
}

func (w Webhook) webhookName() string {
	if strings.Contains(w.Name, ".") {
		return w.Name
	}
	return w.Name + ".usher.e2e"
}

func (w Webhook) fields() (admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations, *admissionregistrationv1.FailurePolicyType, *admissionregistrationv1.SideEffectClass, *int32, *metav1.LabelSelector) {
	url := w.URL
	cc := admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.CABundle}
	rules := w.Rules
	if rules == nil {
		rules = WorkloadRules
	}
	fp := w.FailurePolicy
	if fp == "" {
		fp = admissionregistrationv1.Fail
	}
	se := admissionregistrationv1.SideEffectClassNone
	timeout := w.TimeoutSeconds
	if timeout == 0 {
		timeout = 10
	}
	sel := w.NamespaceSelector
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	return cc, rules, &fp, &se, &timeout, sel
}

// RegisterMutatingWebhook creates (or replaces) the
// MutatingWebhookConfiguration w.Name with one webhook, and returns a
// function that deletes it. The API server takes a moment to start calling
// a new webhook: wait for an effect with Eventually before relying on it.
func RegisterMutatingWebhook(ctx context.Context, client kubernetes.Interface, w Webhook) (unregister func(context.Context) error, err error) {
	if err := w.validate(); err != nil {
		return nil, err
	}
	cc, rules, fp, se, timeout, sel := w.fields()
	never := admissionregistrationv1.NeverReinvocationPolicy
	equivalent := admissionregistrationv1.Equivalent
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    w.webhookName(),
			ClientConfig:            cc,
			Rules:                   rules,
			FailurePolicy:           fp,
			MatchPolicy:             &equivalent,
			NamespaceSelector:       sel,
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             se,
			TimeoutSeconds:          timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &never,
			MatchConditions:         w.MatchConditions,
		}},
	}
	api := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if err := api.Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("e2e: replacing mutating webhook %s: %w", w.Name, err)
	}
	if _, err := api.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("e2e: registering mutating webhook %s: %w", w.Name, err)
	}
	return func(ctx context.Context) error {
		if err := api.Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("e2e: deleting mutating webhook %s: %w", w.Name, err)
		}
		return nil
	}, nil
}

// RegisterValidatingWebhook is RegisterMutatingWebhook for a
// ValidatingWebhookConfiguration.
func RegisterValidatingWebhook(ctx context.Context, client kubernetes.Interface, w Webhook) (unregister func(context.Context) error, err error) {
	if err := w.validate(); err != nil {
		return nil, err
	}
	cc, rules, fp, se, timeout, sel := w.fields()
	equivalent := admissionregistrationv1.Equivalent
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    w.webhookName(),
			ClientConfig:            cc,
			Rules:                   rules,
			FailurePolicy:           fp,
			MatchPolicy:             &equivalent,
			NamespaceSelector:       sel,
			ObjectSelector:          &metav1.LabelSelector{},
			SideEffects:             se,
			TimeoutSeconds:          timeout,
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         w.MatchConditions,
		}},
	}
	api := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if err := api.Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("e2e: replacing validating webhook %s: %w", w.Name, err)
	}
	if _, err := api.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("e2e: registering validating webhook %s: %w", w.Name, err)
	}
	return func(ctx context.Context) error {
		if err := api.Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("e2e: deleting validating webhook %s: %w", w.Name, err)
		}
		return nil
	}, nil
}
