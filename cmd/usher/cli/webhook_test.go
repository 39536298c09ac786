package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	arv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// webhookObjects runs usher webhook and decodes the two objects it prints.
func webhookObjects(t *testing.T, args ...string) (arv1.MutatingWebhookConfiguration, arv1.ValidatingWebhookConfiguration) {
	t.Helper()
	out, errOut, code := run(t, append([]string{"webhook"}, args...)...)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2:\n%s", len(docs), out)
	}
	var m arv1.MutatingWebhookConfiguration
	var v arv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &m); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &v); err != nil {
		t.Fatal(err)
	}
	return m, v
}

// TestWebhookFollowsConfiguration: what usher webhook prints follows the
// configuration: its namespace settings become the usher-namespaces
// condition, and enforceDeleteACLs registers DELETE and evictions on
// validate.usher.io (docs/delete.md), which stay out without it.
func TestWebhookFollowsConfiguration(t *testing.T) {
	dir := t.TempDir()
	queues := "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n"
	plain := writeFile(t, dir, "plain.yaml", queues+"admissionController:\n  bypassNamespaces: [\"^kube-system$\", \"^infra-\"]\n")
	kill := writeFile(t, dir, "kill.yaml", queues+"admissionController:\n  enforceDeleteACLs: true\n")
	m, v := webhookObjects(t, "--config", plain, "--namespace", "batch-system", "--service", "batch-usher", "--mutating-name", "zz-usher")
	if m.Name != "zz-usher" || v.Name != "usher" || m.Labels["app.kubernetes.io/managed-by"] != "usher" {
		t.Errorf("names %q %q, labels %v", m.Name, v.Name, m.Labels)
	}
	if got := m.Webhooks[0].MatchConditions[0].Expression; got != `!["^kube-system$", "^infra-"].exists(p, request.namespace.matches(p))` {
		t.Errorf("usher-namespaces %s", got)
	}
	if s := v.Webhooks[0].ClientConfig.Service; s.Namespace != "batch-system" || s.Name != "batch-usher" || *s.Port != 9443 {
		t.Errorf("service %+v", s)
	}
	if sel := m.Webhooks[0].NamespaceSelector.String(); !strings.Contains(sel, "batch-system kube-system") {
		t.Errorf("namespaceSelector %s: want usher's namespace and kube-system excluded", sel)
	}
	hasDelete := func(v arv1.ValidatingWebhookConfiguration) (del, evict bool) {
		for _, r := range v.Webhooks[0].Rules {
			del = del || strings.Contains(strings.Join(r.Resources, " "), "pods") && len(r.Operations) == 3 && r.Operations[2] == arv1.Delete
			evict = evict || len(r.Resources) == 1 && r.Resources[0] == "pods/eviction"
		}
		return
	}
	if del, evict := hasDelete(v); del || evict {
		t.Error("DELETE registered without enforceDeleteACLs")
	}
	_, v = webhookObjects(t, "--config", kill)
	if del, evict := hasDelete(v); !del || !evict {
		t.Errorf("enforceDeleteACLs: DELETE %v, pods/eviction %v, want both: %+v", del, evict, v.Webhooks[0].Rules)
	}
	if len(v.Webhooks) != 3 {
		t.Errorf("%d validating webhooks without --guard-config-map, want 3 (no validate-config.usher.io)", len(v.Webhooks))
	}
}

// TestWebhookFlags: a URL replaces the Service, a CA bundle file is the
// caBundle, and each bad flag is named.
func TestWebhookFlags(t *testing.T) {
	dir := t.TempDir()
	ca := writeFile(t, dir, "ca.crt", "PEM\n")
	m, _ := webhookObjects(t, "--url", "https://10.0.0.5:9443", "--ca-bundle-file", ca, "--opt-in-label", "usher.io/enforce=true",
		"--match-condition", "not-nodes=!request.userInfo.username.startsWith('system:node:')", "--failure-policy", "Ignore")
	h := m.Webhooks[0]
	if h.ClientConfig.URL == nil || *h.ClientConfig.URL != "https://10.0.0.5:9443/mutate" || h.ClientConfig.Service != nil || string(h.ClientConfig.CABundle) != "PEM\n" {
		t.Errorf("clientConfig %+v", h.ClientConfig)
	}
	if h.NamespaceSelector.MatchLabels["usher.io/enforce"] != "true" || len(h.MatchConditions) != 2 || *h.FailurePolicy != arv1.Ignore {
		t.Errorf("webhook %+v", h)
	}
	for _, tc := range [][]string{{"--failure-policy", "Sometimes"}, {"--timeout-seconds", "31"}, {"--opt-in-label", "novalue"},
		{"--match-condition", "noexpr"}, {"--guard-config-map", "nonamespace"}, {"--ca-bundle-file", dir + "/missing"}} {
		_, errOut, code := run(t, append([]string{"webhook"}, tc...)...)
		if code != 2 || !strings.Contains(errOut, tc[0]) {
			t.Errorf("usher webhook %v: code %d, %q; want 2 naming %s", tc, code, errOut, tc[0])
		}
	}
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWebhookCustomResources: usher webhook registers the configured
// custom resources on every hook that guards a workload: CREATE on
// mutate, CREATE and UPDATE on validate, their status on validate-status.
func TestWebhookCustomResources(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "ops.yaml", "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n"+
		"admissionController:\n  customResources:\n    - {group: ray.io, version: v1, kind: RayJob, resource: rayjobs}\n")
	m, v := webhookObjects(t, "--config", cfg)
	find := func(rules []arv1.RuleWithOperations, resource string) []arv1.OperationType {
		for _, r := range rules {
			if r.APIGroups[0] == "ray.io" && r.APIVersions[0] == "v1" && r.Resources[0] == resource {
				return r.Operations
			}
		}
		return nil
	}
	if ops := find(m.Webhooks[0].Rules, "rayjobs"); len(ops) != 1 || ops[0] != arv1.Create {
		t.Errorf("mutate: rayjobs %v, want CREATE", ops)
	}
	if ops := find(v.Webhooks[0].Rules, "rayjobs"); len(ops) != 2 {
		t.Errorf("validate: rayjobs %v, want CREATE and UPDATE", ops)
	}
	if ops := find(v.Webhooks[1].Rules, "rayjobs/status"); len(ops) != 1 || ops[0] != arv1.Update {
		t.Errorf("validate-status: rayjobs/status %v, want UPDATE", ops)
	}
}

// TestWebhookDelegated: with delegatedAdministration enforce,
// validate-config.usher.io fails closed whatever --config-failure-policy
// says, but its usher-untrusted-setters condition keeps system:masters
// and the trusted setters from ever calling usher; warn and enforce
// register validate-namespace.usher.io for the steering annotations.
func TestWebhookDelegated(t *testing.T) {
	dir := t.TempDir()
	queues := "partitions:\n  - name: default\n    queues:\n      - name: root\n"
	hooks := func(mode string) map[string]arv1.ValidatingWebhook {
		f := writeFile(t, dir, mode+".yaml", queues+"admissionController:\n  delegatedAdministration: "+mode+"\n  trustedSetters: {users: [flux], groups: [gitops]}\n")
		_, v := webhookObjects(t, "--config", f, "--guard-config-map", "usher-system/usher-config", "--failure-policy", "Ignore")
		out := map[string]arv1.ValidatingWebhook{}
		for _, w := range v.Webhooks {
			out[w.Name] = w
		}
		return out
	}
	trusted := `!((has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ["system:masters", "gitops"])) || request.userInfo.username in ["flux"])`
	for mode, want := range map[string]struct {
		policy     arv1.FailurePolicyType
		conditions int
		namespaces bool
	}{"off": {arv1.Ignore, 1, false}, "warn": {arv1.Ignore, 1, true}, "enforce": {arv1.Fail, 2, true}} {
		hs := hooks(mode)
		c := hs["validate-config.usher.io"]
		if *c.FailurePolicy != want.policy || len(c.MatchConditions) != want.conditions {
			t.Errorf("%s: validate-config.usher.io failurePolicy %s, conditions %+v", mode, *c.FailurePolicy, c.MatchConditions)
		}
		if mode == "enforce" && c.MatchConditions[1].Expression != trusted {
			t.Errorf("enforce: condition %s, want %s", c.MatchConditions[1].Expression, trusted)
		}
		ns, ok := hs["validate-namespace.usher.io"]
		if ok != want.namespaces || ok && (ns.Rules[0].Resources[0] != "namespaces" || ns.MatchConditions[0].Expression != trusted) {
			t.Errorf("%s: validate-namespace.usher.io %v %+v", mode, ok, ns)
		}
		// Enforced, both fail closed whatever --failure-policy says, and a DELETE of the ConfigMap is decided.
		if mode == "enforce" && (*ns.FailurePolicy != arv1.Fail || !slices.Contains(c.Rules[0].Operations, arv1.Delete)) {
			t.Errorf("enforce: validate-namespace.usher.io failurePolicy %s, validate-config.usher.io operations %v", *ns.FailurePolicy, c.Rules[0].Operations)
		}
	}
}
