package admission

import (
	"cmp"
	"slices"
	"strings"

	arv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/admission/settings"
)

// Install says where usher runs and how its webhooks are registered
// (from the flags of usher serve and usher webhook, which state the defaults).
type Install struct {
	// Name names the ValidatingWebhookConfiguration, and the
	// MutatingWebhookConfiguration unless MutatingName is set.
	Name, MutatingName string
	// Namespace and Service name usher's Service, called on Port; URL,
	// when set, is called instead (usher outside the cluster).
	Namespace, Service, URL string
	Port                    int32
	CABundle                []byte // the webhooks' caBundle, read from CABundleFile
	CABundleFile            string
	// FailurePolicy is that of the workload webhooks; ConfigFailurePolicy
	// that of validate-config.usher.io, which guards ConfigMaps
	// (NAMESPACE/NAME; none: no such webhook).
	FailurePolicy, ConfigFailurePolicy arv1.FailurePolicyType
	ConfigMaps                         []string
	TimeoutSeconds                     int32
	// ExcludedNamespaces are left alone besides Namespace and kube-system;
	// with OptIn, only namespaces carrying its labels are served.
	ExcludedNamespaces []string
	OptIn              map[string]string
	MatchConditions    []arv1.MatchCondition // follow usher-namespaces on every workload webhook
}

// ManagedBy is the label value of the objects Registration renders.
const ManagedBy = "usher"

// Registration renders the webhook configurations of /mutate, /validate
// (workloads, c's custom resources, status and Bindings; DELETE and
// evictions with the kill rule; Kueue's LocalQueues with the queue check) and /validate-config: the one source of
// deploy/webhooks.yaml, usher webhook and usher serve --manage-webhooks.
func Registration(c settings.Config, in Install) (*arv1.MutatingWebhookConfiguration, *arv1.ValidatingWebhookConfiguration) {
	meta := func(kind, name string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: kind}, metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"app.kubernetes.io/name": "usher", "app.kubernetes.io/managed-by": ManagedBy}}
	}
	client := func(path string) arv1.WebhookClientConfig {
		if in.URL != "" {
			u := in.URL + path
			return arv1.WebhookClientConfig{URL: &u, CABundle: in.CABundle}
		}
		return arv1.WebhookClientConfig{CABundle: in.CABundle,
			Service: &arv1.ServiceReference{Namespace: in.Namespace, Name: in.Service, Path: &path, Port: &in.Port}}
	}
	sel := &metav1.LabelSelector{MatchLabels: in.OptIn, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name",
		Operator: metav1.LabelSelectorOpNotIn, Values: append([]string{in.Namespace, "kube-system"}, in.ExcludedNamespaces...)}}}
	conds := func(extra ...arv1.MatchCondition) []arv1.MatchCondition {
		cs := append([]arv1.MatchCondition{{Name: settings.NamespaceConditionName, Expression: settings.NamespaceCondition(c)}}, in.MatchConditions...)
		return append(cs, extra...)
	}
	rules := func(suffix string, ops ...arv1.OperationType) []arv1.RuleWithOperations {
		scope := arv1.NamespacedScope
		out := settings.WorkloadRules(suffix, ops...)
		for _, r := range c.CustomResources {
			out = append(out, arv1.RuleWithOperations{Operations: ops, Rule: arv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{r.Version},
				Resources: []string{r.Resource + suffix}, Scope: &scope}})
		}
		return out
	}
	one := func(res []string, ops ...arv1.OperationType) []arv1.RuleWithOperations {
		scope := arv1.NamespacedScope
		return []arv1.RuleWithOperations{{Operations: ops, Rule: arv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: res, Scope: &scope}}}
	}
	dryRun, none, ifNeeded := arv1.SideEffectClassNoneOnDryRun, arv1.SideEffectClassNone, arv1.IfNeededReinvocationPolicy
	hook := func(name, path string, r []arv1.RuleWithOperations, mc []arv1.MatchCondition) arv1.ValidatingWebhook {
		return arv1.ValidatingWebhook{Name: name, ClientConfig: client(path), Rules: r, FailurePolicy: &in.FailurePolicy, SideEffects: &dryRun,
			TimeoutSeconds: &in.TimeoutSeconds, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: sel, MatchConditions: mc}
	}
	m := &arv1.MutatingWebhookConfiguration{Webhooks: []arv1.MutatingWebhook{{Name: "mutate.usher.io", ClientConfig: client("/mutate"),
		Rules: rules("", arv1.Create), FailurePolicy: &in.FailurePolicy, SideEffects: &dryRun, TimeoutSeconds: &in.TimeoutSeconds,
		AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: sel, MatchConditions: conds(), ReinvocationPolicy: &ifNeeded}}}
	m.TypeMeta, m.ObjectMeta = meta("MutatingWebhookConfiguration", cmp.Or(in.MutatingName, in.Name))
	validate := rules("", arv1.Create, arv1.Update)
	if c.Defaulted().EnforceDeleteACLs {
		validate = append(rules("", arv1.Create, arv1.Update, arv1.Delete), one([]string{"pods/eviction"}, arv1.Create)...)
	}
	if c.Defaulted().EnforceQueueACLs {
		// A LocalQueue's ClusterQueue is the queue of every Job naming it.
		lq := one([]string{"localqueues"}, arv1.Create, arv1.Update)
		lq[0].APIGroups, lq[0].APIVersions = []string{"kueue.x-k8s.io"}, []string{"v1beta1", "v1beta2"}
		validate = append(validate, lq...)
	}
	v := &arv1.ValidatingWebhookConfiguration{Webhooks: []arv1.ValidatingWebhook{
		hook("validate.usher.io", "/validate", validate, conds()),
		// Status updates can change labels, annotations and owners.
		hook("validate-status.usher.io", "/validate", rules("/status", arv1.Update), conds(arv1.MatchCondition{Name: "metadata-changed",
			Expression: "(has(object.metadata.annotations) ? object.metadata.annotations : {}) != (has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}) || " +
				"(has(object.metadata.labels) ? object.metadata.labels : {}) != (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}) || " +
				"(has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) != (has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : [])"})),
		// The API server copies a Binding's labels and annotations onto the pod.
		hook("validate-binding.usher.io", "/validate", one([]string{"pods/binding", "bindings"}, arv1.Create), conds(arv1.MatchCondition{Name: "sets-metadata",
			Expression: "has(object.metadata.annotations) || (has(object.metadata.labels) && object.metadata.labels.exists(k, !k.startsWith('topology.kubernetes.io/')))"})),
	}}
	v.TypeMeta, v.ObjectMeta = meta("ValidatingWebhookConfiguration", in.Name)
	fail, cluster := arv1.Fail, arv1.ClusterScope
	trusted := arv1.MatchCondition{Name: "usher-untrusted-setters", Expression: settings.DelegationCondition(c)}
	if c.Defaulted().DelegatedAdministration != settings.DelegationOff {
		keys := "['" + strings.Join(steeringAnnotations, "', '") + "']"
		v.Webhooks = append(v.Webhooks, hook("validate-namespace.usher.io", "/validate", []arv1.RuleWithOperations{{Operations: []arv1.OperationType{arv1.Create, arv1.Update},
			Rule: arv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}, Scope: &cluster}}},
			[]arv1.MatchCondition{trusted, {Name: "steering-changed", Expression: keys + ".exists(k, (has(object.metadata.annotations) && k in object.metadata.annotations ? " +
				"object.metadata.annotations[k] : '-') != (oldObject != null && has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations ? oldObject.metadata.annotations[k] : '-'))"}}))
		// Not opted in is no way out: the opt-in label may go in the same write.
		ns := &v.Webhooks[len(v.Webhooks)-1]
		ns.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: sel.MatchExpressions}
		if c.Defaulted().DelegatedAdministration == settings.DelegationEnforce { // fails closed as validate-config.usher.io
			ns.FailurePolicy = &fail
		}
	}
	if len(in.ConfigMaps) > 0 {
		var nss, names []string
		for _, ref := range in.ConfigMaps {
			ns, _, _ := strings.Cut(ref, "/")
			nss, names = append(nss, ns), append(names, "'"+ref+"'")
		}
		expr := "(request.namespace + '/' + object.metadata.name) in [" + strings.Join(names, ", ") + "]"
		if _, name, _ := strings.Cut(in.ConfigMaps[0], "/"); len(in.ConfigMaps) == 1 {
			expr = "object.metadata.name == '" + name + "'" // the namespaceSelector names its namespace
		}
		h := hook("validate-config.usher.io", "/validate-config", one([]string{"configmaps"}, arv1.Create, arv1.Update),
			[]arv1.MatchCondition{{Name: "usher-config", Expression: expr}})
		h.FailurePolicy, h.SideEffects = &in.ConfigFailurePolicy, &none
		if c.Defaulted().DelegatedAdministration == settings.DelegationEnforce {
			h.FailurePolicy, h.MatchConditions = &fail, append(h.MatchConditions, trusted)
			// A DELETE (no object) makes YuniKorn fall back to its defaults.
			h.Rules[0].Operations, h.MatchConditions[0].Expression = append(h.Rules[0].Operations, arv1.Delete), strings.ReplaceAll(expr, "object.metadata.name", "request.name")
		}
		h.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: slices.Compact(slices.Sorted(slices.Values(nss)))}}}
		v.Webhooks = append(v.Webhooks, h)
	}
	return m, v
}
