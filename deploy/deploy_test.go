// Package deploy holds the Kubernetes manifests; this test decodes every
// document strictly into its Kubernetes API type (an unknown or misspelt
// field is an error) and checks the properties usher's availability and
// security rest on. The end-to-end suite also applies them to a real API
// server with a server-side dry run.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/cmd/usher/cli"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/server"
)

type manifest struct {
	file string
	kind string
	raw  []byte
}

func load(t *testing.T) []manifest {
	t.Helper()
	files, _ := filepath.Glob("*.yaml")
	var out []manifest
	for _, f := range files {
		if f == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := decodeAll(f, data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ms...)
	}
	return out
}

// decodeAll splits a YAML stream into its objects.
func decodeAll(file string, data []byte) ([]manifest, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []manifest
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var head struct{ Kind string }
		json.Unmarshal(raw, &head)
		out = append(out, manifest{file, head.Kind, raw})
	}
}

// webhookFlags are the flags usher serve and usher webhook share.
var webhookFlags = []string{"name", "mutating-name", "namespace", "service", "service-port", "url", "ca-bundle-file", "failure-policy",
	"config-failure-policy", "timeout-seconds", "exclude-namespaces", "opt-in-label", "match-condition", "guard-config-map"}

// registration is what usher serve --manage-webhooks registers when run
// with serveArgs (a Deployment's) on the configuration file cfg ("": the
// embedded default): the output of usher webhook with the same flags, each
// file a flag names read from files (by its path in the pod; a CA bundle
// not there is left out).
func registration(t *testing.T, serveArgs []string, cfg string, files map[string][]byte) []manifest {
	t.Helper()
	args := []string{"webhook"}
	if cfg != "" {
		args = append(args, "--config", cfg)
	}
	for _, a := range serveArgs {
		name, val, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !slices.Contains(webhookFlags, name) {
			continue
		}
		if data, ok := files[val]; ok {
			p := filepath.Join(t.TempDir(), filepath.Base(val))
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			a = "--" + name + "=" + p
		} else if name == "ca-bundle-file" {
			continue
		}
		args = append(args, a)
	}
	var out, errOut bytes.Buffer
	if code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errOut, LookupEnv: func(string) (string, bool) { return "", false }}, args); code != 0 {
		t.Fatalf("usher %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	ms, err := decodeAll("usher "+strings.Join(args, " "), out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func strict(t *testing.T, m manifest, into any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(m.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s (%s): %v", m.file, m.kind, err)
	}
}

func TestManifests(t *testing.T) {
	seen := map[string]bool{}
	roles := map[string]rbacv1.ClusterRole{}
	var bindings []rbacv1.ClusterRoleBinding
	var deployment *appsv1.Deployment
	var pdb *policyv1.PodDisruptionBudget
	var quotas []corev1.ResourceQuota
	var nsCondition string
	conditions := map[string][]admissionregistrationv1.MatchCondition{}
	for _, m := range load(t) {
		seen[m.kind] = true
		switch m.kind {
		case "Namespace":
			strict(t, m, &corev1.Namespace{})
		case "ServiceAccount":
			var sa corev1.ServiceAccount
			strict(t, m, &sa)
			if sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
				t.Error("usher sends TokenReviews and SubjectAccessReviews: automountServiceAccountToken must be true")
			}
		case "ClusterRole":
			var r rbacv1.ClusterRole
			strict(t, m, &r)
			roles[r.Name] = r
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			strict(t, m, &b)
			bindings = append(bindings, b)
		case "Role":
			var r rbacv1.Role
			strict(t, m, &r)
			if r.Name == "usher-webhook-lease" {
				checkLeaseRole(t, r)
			} else {
				checkConfigRole(t, r)
			}
		case "ValidatingAdmissionPolicy":
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			strict(t, m, &p)
			checkWriterPolicy(t, p)
		case "ValidatingAdmissionPolicyBinding":
			var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
			strict(t, m, &b)
			if b.Spec.PolicyName != "usher-webhook-writer" || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
				t.Errorf("ValidatingAdmissionPolicyBinding %s: %+v, want usher-webhook-writer denying", b.Name, b.Spec)
			}
		case "RoleBinding":
			var b rbacv1.RoleBinding
			strict(t, m, &b)
			if b.Namespace != "usher-system" || b.RoleRef.Kind != "Role" || b.RoleRef.Name != strings.TrimPrefix(b.Name, "usher:") ||
				len(b.Subjects) != 1 || b.Subjects[0].Name != "usher" || b.Subjects[0].Namespace != "usher-system" {
				t.Errorf("RoleBinding %s: want usher's service account bound to the Role of its name", b.Name)
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			strict(t, m, &cm)
			c, err := config.FromConfigMap(m.file, cm.Data)
			if err != nil {
				t.Fatalf("the shipped ConfigMap does not load: %v", err)
			}
			if len(c.Warnings) != 0 {
				t.Errorf("the shipped ConfigMap has warnings: %v", c.Warnings)
			}
			nsCondition = settings.NamespaceCondition(c.Admission.Config())
		case "Service":
			strict(t, m, &corev1.Service{})
		case "Deployment":
			var d appsv1.Deployment
			strict(t, m, &d)
			checkDeployment(t, &d, "usher", "--config-map=usher-system/usher-config")
			deployment = &d
		case "PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			strict(t, m, &p)
			if p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() < 1 {
				t.Error("the PDB must keep a replica")
			}
			pdb = &p
		case "ResourceQuota":
			var q corev1.ResourceQuota
			strict(t, m, &q)
			quotas = append(quotas, q)
		case "MutatingWebhookConfiguration":
			var w admissionregistrationv1.MutatingWebhookConfiguration
			strict(t, m, &w)
			for _, h := range w.Webhooks {
				checkWebhook(t, h.Name, h.FailurePolicy, h.SideEffects, h.TimeoutSeconds, h.NamespaceSelector.String(), h.Rules, "/mutate", h.ClientConfig, "", admissionregistrationv1.Create)
				conditions[h.Name] = h.MatchConditions
			}
		case "ValidatingWebhookConfiguration":
			var w admissionregistrationv1.ValidatingWebhookConfiguration
			strict(t, m, &w)
			names := map[string]bool{}
			for _, h := range w.Webhooks {
				names[h.Name] = true
				conditions[h.Name] = h.MatchConditions
				switch h.Name {
				case "validate.usher.io":
					checkWebhook(t, h.Name, h.FailurePolicy, h.SideEffects, h.TimeoutSeconds, h.NamespaceSelector.String(), h.Rules, "/validate", h.ClientConfig, "", admissionregistrationv1.Create, admissionregistrationv1.Update)
				case "validate-status.usher.io":
					// The status subresources can change labels, annotations
					// and ownerReferences: user.info, the modify ACL, queue
					// markers and owners must not change through them.
					checkWebhook(t, h.Name, h.FailurePolicy, h.SideEffects, h.TimeoutSeconds, h.NamespaceSelector.String(), h.Rules, "/validate", h.ClientConfig, "/status", admissionregistrationv1.Update)
					checkStatusMatchConditions(t, h.Name, h.MatchConditions)
				case "validate-binding.usher.io":
					// A Binding's annotations and labels land on the pod.
					checkBindingWebhook(t, h)
				case "validate-config.usher.io":
					checkConfigWebhook(t, h)
				default:
					t.Errorf("unexpected validating webhook %q", h.Name)
				}
			}
			if !names["validate.usher.io"] || !names["validate-status.usher.io"] || !names["validate-binding.usher.io"] || !names["validate-config.usher.io"] {
				t.Errorf("validating webhooks %v, want validate.usher.io, validate-status.usher.io, validate-binding.usher.io and validate-config.usher.io", names)
			}
		case "Issuer", "Certificate":
			var obj struct {
				APIVersion string         `json:"apiVersion"`
				Spec       map[string]any `json:"spec"`
			}
			json.Unmarshal(m.raw, &obj)
			if obj.APIVersion != "cert-manager.io/v1" {
				t.Errorf("%s: apiVersion %q", m.kind, obj.APIVersion)
			}
			if m.kind == "Certificate" && obj.Spec["secretName"] != "usher-tls" {
				t.Errorf("the certificate must land in the secret the Deployment mounts")
			}
		default:
			t.Errorf("%s: unexpected kind %q", m.file, m.kind)
		}
	}
	checkRBAC(t, roles, bindings)
	checkNamespaceConditions(t, nsCondition, conditions)
	checkRegistered(t, deployment)
	if deployment != nil && pdb != nil {
		checkSmallCluster(t, deployment, pdb, quotas)
	}
	for _, k := range []string{"Deployment", "PodDisruptionBudget", "Service", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ServiceAccount", "Certificate", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !seen[k] {
			t.Errorf("no %s in deploy/", k)
		}
	}
}

// checkRegistered: webhooks.yaml is what usher registers with the
// Deployment's flags and configmap.yaml, object for object.
func checkRegistered(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if d == nil {
		return
	}
	data, err := os.ReadFile("webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := decodeAll("webhooks.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	got := registration(t, d.Spec.Template.Spec.Containers[0].Args, "configmap.yaml", nil)
	if len(got) != len(shipped) {
		t.Fatalf("usher registers %d objects, webhooks.yaml has %d", len(got), len(shipped))
	}
	for i := range got {
		var w, g map[string]any
		json.Unmarshal(shipped[i].raw, &w)
		json.Unmarshal(got[i].raw, &g)
		if !reflect.DeepEqual(w, g) {
			t.Errorf("webhooks.yaml's %s is not what usher registers (%s): regenerate it with the command in its header\nwant %s\ngot  %s", shipped[i].kind, got[i].file, shipped[i].raw, got[i].raw)
		}
	}
}

// checkDeployment checks usher's Deployment: run as service account name,
// reading its configuration as configArg says.
func checkDeployment(t *testing.T, d *appsv1.Deployment, name, configArg string) {
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Error("the webhook fails closed: run at least two replicas")
	}
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("runAsNonRoot must be set")
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("read-only root filesystem and no privilege escalation")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("probes on /readyz and /healthz")
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"serve", configArg, "--tls-cert=", "--tls-key=", "--addr=:8443", "--access-auth=kubernetes"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "none") {
		t.Errorf("args %q switch access authentication off", args)
	}
	if img := c.Image; !imageTag.MatchString(img) {
		t.Errorf("image %q: want a version tag (vX.Y.Z), not latest or none", img)
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken || pod.ServiceAccountName != name {
		t.Errorf("the pod must run as service account %s with its token mounted", name)
	}
}

// imageTag is a versioned image reference: a release tag, never latest.
var imageTag = regexp.MustCompile(`^[a-z0-9.-]+(/[a-z0-9._-]+)+:v[0-9]+\.[0-9]+\.[0-9]+$`)

// checkSmallCluster: the Deployment rolls out on a one-node cluster and
// through the PodDisruptionBudget. No required anti-affinity (on one node
// the second replica would never schedule); a rollout that needs no room
// for an extra pod (maxSurge 0) yet keeps a replica answering
// (maxUnavailable below the replicas); a PDB that lets a drain evict one
// replica at a time; and a system-* priority class only with the
// ResourceQuota scoped to it that some managed clusters require.
func checkSmallCluster(t *testing.T, d *appsv1.Deployment, pdb *policyv1.PodDisruptionBudget, quotas []corev1.ResourceQuota) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if a := pod.Affinity; a != nil {
		if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
			t.Error("required pod anti-affinity: the second replica never schedules on a one-node cluster; prefer it")
		}
		if a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			t.Error("required node affinity: a small cluster may have no such node")
		}
	}
	for _, c := range pod.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			t.Errorf("topology spread on %s is %s: on one node or zone it blocks the second replica", c.TopologyKey, c.WhenUnsatisfiable)
		}
	}
	replicas := int(*d.Spec.Replicas)
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxSurge == nil || ru.MaxUnavailable == nil {
		t.Fatal("the strategy must be a RollingUpdate with maxSurge and maxUnavailable set")
	}
	surge, _ := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, replicas, true)
	unavailable, _ := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, replicas, false)
	if surge != 0 {
		t.Errorf("maxSurge %s: a full one-node cluster has no room for a surge pod; use maxSurge 0", ru.MaxSurge.String())
	}
	if unavailable < 1 || replicas-unavailable < 1 {
		t.Errorf("maxUnavailable %s of %d replicas: the rollout must be able to start and keep a replica answering", ru.MaxUnavailable.String(), replicas)
	}
	if pdb.Spec.Selector == nil || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != d.Spec.Template.Labels["app.kubernetes.io/name"] {
		t.Error("the PDB does not select usher's pods")
	}
	if min := pdb.Spec.MinAvailable.IntValue(); min >= replicas {
		t.Errorf("PDB minAvailable %d of %d replicas: no drain can ever evict one", min, replicas)
	}
	if pc := pod.PriorityClassName; strings.HasPrefix(pc, "system-") {
		found := false
		for _, q := range quotas {
			if q.Namespace != d.Namespace || q.Spec.ScopeSelector == nil {
				continue
			}
			for _, e := range q.Spec.ScopeSelector.MatchExpressions {
				if e.ScopeName == corev1.ResourceQuotaScopePriorityClass && e.Operator == corev1.ScopeSelectorOpIn && slices.Contains(e.Values, pc) {
					if n, ok := q.Spec.Hard[corev1.ResourcePods]; ok && int(n.Value()) >= replicas+surge {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("priorityClassName %s without a ResourceQuota in %s scoped to it (room for %d pods): some managed clusters refuse the pods", pc, d.Namespace, replicas+surge)
		}
	}
}

// checkRBAC: usher may create tokenreviews and subjectaccessreviews (through
// system:auth-delegator) and nothing else; the roles callers are bound to
// grant exactly the permissions usher checks.
func checkRBAC(t *testing.T, roles map[string]rbacv1.ClusterRole, bindings []rbacv1.ClusterRoleBinding) {
	delegated, recorder, reader, writer := false, false, false, false
	for _, b := range bindings {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == "usher" && s.Namespace == "usher-system" {
				switch {
				case b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "system:auth-delegator":
					delegated = true
				case b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "usher-event-recorder":
					recorder = true
				case b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "usher-owner-reader":
					reader = true
				case b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "usher-webhook-writer":
					writer = true
				default:
					t.Errorf("%s binds usher to %s %s: usher needs system:auth-delegator, usher-event-recorder, usher-owner-reader and usher-webhook-writer only", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
				}
			}
		}
	}
	if !delegated {
		t.Error("no ClusterRoleBinding of usher's service account to system:auth-delegator")
	}
	if !recorder {
		t.Error("no ClusterRoleBinding of usher's service account to usher-event-recorder (denial Events)")
	}
	if !reader {
		t.Error("no ClusterRoleBinding of usher's service account to usher-owner-reader (adoption)")
	}
	if !writer {
		t.Error("no ClusterRoleBinding of usher's service account to usher-webhook-writer (--manage-webhooks)")
	}
	get := []string{"get"}
	want := map[string][]rbacv1.PolicyRule{
		"usher-access-reviewer": {{APIGroups: []string{server.AccessReviewGroup}, Resources: []string{server.AccessReviewResource}, Verbs: []string{server.AccessReviewVerb}}},
		"usher-metrics-reader":  {{NonResourceURLs: []string{"/metrics"}, Verbs: get}},
		// Denial Events: create and patch Events, nothing else.
		"usher-event-recorder": {{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}},
		// Adoption: get of the workload kinds; placement: Namespaces and LocalQueues.
		"usher-owner-reader": {{APIGroups: []string{""}, Resources: []string{"replicationcontrollers"}, Verbs: get},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets", "daemonsets", "statefulsets"}, Verbs: get},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: get},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"localqueues"}, Verbs: []string{"get", "list", "watch"}}},
		// --manage-webhooks: read the webhook configurations, write only
		// usher's (create cannot be named: the policy holds it), read the
		// owner's uid; never delete.
		"usher-webhook-writer": {{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: webhookKinds, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: webhookKinds, Verbs: []string{"create"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: webhookKinds, ResourceNames: []string{"usher"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"usher-webhook-writer"}, Verbs: get}},
	}
	for name, rules := range want {
		r, ok := roles[name]
		if !ok {
			t.Errorf("no ClusterRole %s", name)
			continue
		}
		if !reflect.DeepEqual(r.Rules, rules) {
			t.Errorf("ClusterRole %s: rules %+v, want exactly %+v", name, r.Rules, rules)
		}
	}
}

var webhookKinds = []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}

// checkLeaseRole: the Role of the Lease the replicas elect the registering
// one with; nothing else.
func checkLeaseRole(t *testing.T, r rbacv1.Role) {
	t.Helper()
	lease := []string{"leases"}
	want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: lease, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: lease, ResourceNames: []string{"usher-webhooks"}, Verbs: []string{"get", "update"}}}
	if r.Namespace != "usher-system" || !reflect.DeepEqual(r.Rules, want) {
		t.Errorf("Role %s/%s: rules %+v, want exactly %+v", r.Namespace, r.Name, r.Rules, want)
	}
}

// checkWriterPolicy: the policy that holds usher's service account to its
// own webhook configurations matches that account's creates and updates
// of them, and names usher's configurations and Service.
func checkWriterPolicy(t *testing.T, p admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	rr := p.Spec.MatchConstraints.ResourceRules
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail || len(rr) != 1 || !slices.Equal(rr[0].Resources, webhookKinds) ||
		len(p.Spec.MatchConditions) != 1 || !strings.Contains(p.Spec.MatchConditions[0].Expression, "'system:serviceaccount:usher-system:usher'") ||
		len(p.Spec.Validations) != 2 || !strings.Contains(p.Spec.Validations[0].Expression, "['usher']") ||
		!strings.Contains(p.Spec.Validations[1].Expression, "service.namespace == 'usher-system' && w.clientConfig.service.name == 'usher'") {
		t.Errorf("ValidatingAdmissionPolicy %s: %+v", p.Name, p.Spec)
	}
}

// checkWebhook checks one webhook: fails closed, no side effects, a short
// timeout, usher's namespace excluded, the path, and rules with exactly
// ops covering every kind usher admits (with suffix appended to each
// resource: "" for the objects, "/status" for their status).
func checkWebhook(t *testing.T, name string, fp *admissionregistrationv1.FailurePolicyType, se *admissionregistrationv1.SideEffectClass,
	timeout *int32, nsSel string, rules []admissionregistrationv1.RuleWithOperations, path string, cc admissionregistrationv1.WebhookClientConfig,
	suffix string, ops ...admissionregistrationv1.OperationType) {
	if fp == nil || *fp != admissionregistrationv1.Fail {
		t.Errorf("%s: failurePolicy must be Fail", name)
	}
	if se == nil || *se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		t.Errorf("%s: sideEffects must be NoneOnDryRun (denials record Events, never on a dry run)", name)
	}
	if timeout == nil || *timeout > 10 {
		t.Errorf("%s: set a short timeout", name)
	}
	if !strings.Contains(nsSel, "usher-system") {
		t.Errorf("%s: usher's own namespace must be excluded", name)
	}
	if cc.Service == nil || *cc.Service.Path != path {
		t.Errorf("%s: path must be %s", name, path)
	}
	want := map[string]bool{}
	for _, res := range workloadResources {
		want[res+suffix] = true
	}
	for _, r := range rules {
		if !slices.Equal(r.Operations, ops) {
			t.Errorf("%s: operations %v, want %v", name, r.Operations, ops)
		}
		for _, res := range r.Resources {
			delete(want, res)
		}
	}
	if len(want) != 0 {
		t.Errorf("%s: kinds not covered: %v", name, want)
	}
}

// workloadResources are the resources of the kinds usher admits.
var workloadResources = []string{"pods", "replicationcontrollers", "deployments", "replicasets", "daemonsets", "statefulsets", "jobs", "cronjobs"}

// checkNamespaceConditions: every webhook carries the usher-namespaces
// matchCondition generated from the shipped ConfigMap's bypassNamespaces
// and processNamespaces, so that the API server never calls usher for a
// request the settings bypass, and it bypasses kube-system and usher's own
// namespace.
func checkNamespaceConditions(t *testing.T, want string, byWebhook map[string][]admissionregistrationv1.MatchCondition) {
	t.Helper()
	if want == "" {
		t.Fatal("no ConfigMap in deploy/")
	}
	for _, ns := range []string{"kube-system", "usher-system"} {
		if !strings.Contains(want, `"^`+ns+`$"`) {
			t.Errorf("the shipped ConfigMap's bypassNamespaces do not name %s: %s", ns, want)
		}
	}
	if len(byWebhook) < 5 {
		t.Errorf("webhooks %d, want the five of deploy/webhooks.yaml", len(byWebhook))
	}
	for name, mcs := range byWebhook {
		if name == "validate-config.usher.io" {
			// usher's own ConfigMap lives in usher-system, which the
			// condition excludes; checkConfigWebhook checks its scope.
			continue
		}
		var got []string
		for _, mc := range mcs {
			if mc.Name == settings.NamespaceConditionName {
				got = append(got, mc.Expression)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: matchCondition %s is %q, want exactly one, generated from configmap.yaml:\n    expression: '%s'", name, settings.NamespaceConditionName, got, want)
		}
	}
}

// matchCondition returns the matchCondition called name.
func matchCondition(mcs []admissionregistrationv1.MatchCondition, name string) (admissionregistrationv1.MatchCondition, bool) {
	for _, mc := range mcs {
		if mc.Name == name {
			return mc, true
		}
	}
	return admissionregistrationv1.MatchCondition{}, false
}

// checkStatusMatchConditions: the status webhook is asked only when the
// metadata usher guards changes, and the condition compares each of
// annotations, labels and ownerReferences.
func checkStatusMatchConditions(t *testing.T, name string, mcs []admissionregistrationv1.MatchCondition) {
	t.Helper()
	mc, ok := matchCondition(mcs, "metadata-changed")
	if !ok || len(mcs) != 2 {
		t.Errorf("%s: matchConditions %+v, want metadata-changed and %s", name, mcs, settings.NamespaceConditionName)
		return
	}
	for _, f := range []string{"annotations", "labels", "ownerReferences"} {
		for _, side := range []string{"object", "oldObject"} {
			if e := side + ".metadata." + f; !strings.Contains(mc.Expression, e) {
				t.Errorf("%s: matchCondition %q does not compare %s", name, mc.Expression, e)
			}
		}
	}
}

// TestDocumentedDeleteWebhook: the validating webhook docs/delete.md tells
// operators to register with enforceDeleteACLs decodes strictly, adds
// DELETE on every kind usher admits and CREATE on pods/eviction, and
// keeps the status webhook.
func TestDocumentedDeleteWebhook(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "delete.md"))
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, part := range strings.Split(string(data), "```yaml\n")[1:] {
		if b, _, _ := strings.Cut(part, "```"); strings.Contains(b, "kind: ValidatingWebhookConfiguration") {
			block = b
			break
		}
	}
	if block == "" {
		t.Fatal("docs/delete.md shows no ValidatingWebhookConfiguration")
	}
	raw, err := utilyaml.ToJSON([]byte(block))
	if err != nil {
		t.Fatal(err)
	}
	var w admissionregistrationv1.ValidatingWebhookConfiguration
	strict(t, manifest{"docs/delete.md", "ValidatingWebhookConfiguration", raw}, &w)
	names := map[string]bool{}
	for _, h := range w.Webhooks {
		names[h.Name] = true
		if h.Name != "validate.usher.io" {
			continue
		}
		want := map[string]bool{"pods/eviction": true}
		for _, res := range workloadResources {
			want[res] = true
		}
		for _, r := range h.Rules {
			for _, res := range r.Resources {
				wantOps := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
				if res == "pods/eviction" {
					wantOps = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
				}
				if !slices.Equal(r.Operations, wantOps) {
					t.Errorf("docs/delete.md: %s has operations %v, want %v", res, r.Operations, wantOps)
				}
				delete(want, res)
			}
		}
		if len(want) != 0 {
			t.Errorf("docs/delete.md: validate.usher.io does not cover %v", want)
		}
	}
	if !names["validate.usher.io"] || !names["validate-status.usher.io"] {
		t.Errorf("docs/delete.md: webhooks %v, want validate.usher.io and validate-status.usher.io", names)
	}
}

func checkBindingWebhook(t *testing.T, h admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Fail || h.ClientConfig.Service == nil ||
		*h.ClientConfig.Service.Path != "/validate" || !strings.Contains(h.NamespaceSelector.String(), "usher-system") {
		t.Errorf("%s: must fail closed, call /validate and exclude usher-system", h.Name)
	}
	want := map[string]bool{"pods/binding": true, "bindings": true}
	for _, r := range h.Rules {
		if !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
			t.Errorf("%s: operations %v, want CREATE", h.Name, r.Operations)
		}
		for _, res := range r.Resources {
			delete(want, res)
		}
	}
	if len(want) != 0 {
		t.Errorf("%s: not covered: %v", h.Name, want)
	}
	if mc, ok := matchCondition(h.MatchConditions, "sets-metadata"); !ok || len(h.MatchConditions) != 2 || !strings.Contains(mc.Expression, "object.metadata.annotations") ||
		!strings.Contains(mc.Expression, "object.metadata.labels") {
		t.Errorf("%s: matchConditions %+v", h.Name, h.MatchConditions)
	}
}

// checkConfigRole: usher reads and watches its own ConfigMap, named, and
// creates Events; nothing else.
func checkConfigRole(t *testing.T, r rbacv1.Role) {
	t.Helper()
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"usher-config"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}
	if r.Name != "usher-config-reader" || r.Namespace != "usher-system" || !reflect.DeepEqual(r.Rules, want) {
		t.Errorf("Role %s/%s: rules %+v, want exactly %+v", r.Namespace, r.Name, r.Rules, want)
	}
}

// checkConfigWebhook: the ConfigMap's webhook sees only usher-config in
// usher-system, on CREATE and UPDATE, at /validate-config, and fails open
// so that a fix is accepted while usher is down.
func checkConfigWebhook(t *testing.T, h admissionregistrationv1.ValidatingWebhook) {
	t.Helper()
	if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("%s: failurePolicy must be Ignore (a fix must pass while usher is down)", h.Name)
	}
	if h.SideEffects == nil || *h.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("%s: sideEffects must be None", h.Name)
	}
	if h.ClientConfig.Service == nil || h.ClientConfig.Service.Path == nil || *h.ClientConfig.Service.Path != "/validate-config" {
		t.Errorf("%s: path must be /validate-config", h.Name)
	}
	if sel := h.NamespaceSelector.String(); !strings.Contains(sel, "usher-system") || !strings.Contains(sel, "Operator:In") {
		t.Errorf("%s: namespaceSelector %s: want usher-system only", h.Name, sel)
	}
	if len(h.MatchConditions) != 1 || h.MatchConditions[0].Expression != "object.metadata.name == 'usher-config'" {
		t.Errorf("%s: matchConditions %+v: want the name usher-config", h.Name, h.MatchConditions)
	}
	if len(h.Rules) != 1 || !reflect.DeepEqual(h.Rules[0].Resources, []string{"configmaps"}) ||
		!reflect.DeepEqual(h.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
		t.Errorf("%s: rules %+v: want CREATE and UPDATE of configmaps", h.Name, h.Rules)
	}
}

// TestDocumentedBlastRadius: docs/security.md shows the usher-namespaces
// condition the shipped ConfigMap generates, and an opt-in
// namespaceSelector that requires the usher.io/enforce label and still
// excludes kube-system and usher-system.
func TestDocumentedBlastRadius(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	cm, err := os.ReadFile("configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj corev1.ConfigMap
	if err := utilyaml.Unmarshal(cm, &obj); err != nil {
		t.Fatal(err)
	}
	c, err := config.FromConfigMap("configmap.yaml", obj.Data)
	if err != nil {
		t.Fatal(err)
	}
	want := settings.NamespaceCondition(c.Admission.Config())
	var sel *metav1.LabelSelector
	conds := 0
	for _, part := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		block = dedent(block)
		switch {
		case strings.HasPrefix(block, "matchConditions:"):
			var v struct {
				MatchConditions []admissionregistrationv1.MatchCondition `json:"matchConditions"`
			}
			if err := utilyaml.UnmarshalStrict([]byte(block), &v); err != nil {
				t.Fatalf("docs/security.md: %v", err)
			}
			if len(v.MatchConditions) != 1 || v.MatchConditions[0].Name != settings.NamespaceConditionName || v.MatchConditions[0].Expression != want {
				t.Errorf("docs/security.md shows %+v, the shipped ConfigMap generates %q", v.MatchConditions, want)
			}
			conds++
		case strings.HasPrefix(block, "namespaceSelector:"):
			var v struct {
				NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
			}
			if err := utilyaml.UnmarshalStrict([]byte(block), &v); err != nil {
				t.Fatalf("docs/security.md: %v", err)
			}
			sel = &v.NamespaceSelector
		}
	}
	if conds == 0 || sel == nil {
		t.Fatalf("docs/security.md shows %d usher-namespaces conditions and selector %v", conds, sel)
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"kubernetes.io/metadata.name": "team-a", "usher.io/enforce": "true"}, true},
		{map[string]string{"kubernetes.io/metadata.name": "team-b"}, false},
		{map[string]string{"kubernetes.io/metadata.name": "kube-system", "usher.io/enforce": "true"}, false},
		{map[string]string{"kubernetes.io/metadata.name": "usher-system", "usher.io/enforce": "true"}, false},
	} {
		if got := s.Matches(labels.Set(tc.labels)); got != tc.want {
			t.Errorf("opt-in selector %s on %v = %v, want %v", s, tc.labels, got, tc.want)
		}
	}
}

// dedent removes the indentation of the first line from every line.
func dedent(s string) string {
	trimmed := strings.TrimLeft(s, " ")
	indent := len(s) - len(trimmed)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}
