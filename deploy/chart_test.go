package deploy_test

// The Helm chart (deploy/chart/usher) renders, with its default values, the
// objects of deploy/ (the Namespace aside: helm creates it), and its other
// value sets keep the properties usher's availability and security rest on.
// These tests run `helm template`; the end-to-end suite (e2e/chart_test.go)
// also sends the rendered objects to a real API server as a server-side dry
// run.

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/config"
)

const chartDir = "chart/usher"

// helmBinary finds helm: $USHER_HELM, the pinned build hack/helm.sh caches,
// or helm on PATH. Without one the test is skipped, except in CI (CI=true),
// where a missing helm fails: `make chart-lint`, which `make test` runs
// first, builds it.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("USHER_HELM"); p != "" {
		return p
	}
	script, err := os.ReadFile(filepath.Join("..", "hack", "helm.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`USHER_HELM_VERSION:-(v[0-9.]+)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("hack/helm.sh names no pinned helm version (USHER_HELM_VERSION:-vX.Y.Z)")
	}
	cache := os.Getenv("USHER_E2E_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "usher-e2e")
	}
	if p := filepath.Join(cache, "helm-"+string(m[1]), "helm"); isExecutable(p) {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("helm not found (CI=true, so this is a failure): run `bash hack/helm.sh` (make chart-lint does) or set USHER_HELM")
	}
	t.Skip("skipping the chart tests: no helm in $USHER_HELM, the hack/helm.sh cache or PATH; `bash hack/helm.sh` builds the pinned one")
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// helmTemplate renders the chart as release usher in usher-system with the
// extra helm flags args (--set ...); err carries helm's stderr.
func helmTemplate(t *testing.T, helm string, args ...string) ([]manifest, error) {
	t.Helper()
	return helmTemplateAs(t, helm, "usher", "usher-system", args...)
}

// helmTemplateAs renders the chart as release in namespace.
func helmTemplateAs(t *testing.T, helm, release, namespace string, args ...string) ([]manifest, error) {
	t.Helper()
	cmd := exec.Command(helm, append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	ms, err := decodeAll("chart "+strings.Join(args, " "), out.Bytes())
	if err != nil {
		return nil, err
	}
	return append(ms, registered(t, ms)...), nil
}

// registered is what usher registers when the chart's Deployment runs
// with --manage-webhooks (nothing without): the chart renders no webhook
// configurations, usher does, from its flags and its configuration.
func registered(t *testing.T, ms []manifest) []manifest {
	t.Helper()
	var d appsv1.Deployment
	cfg, files := "", map[string][]byte{}
	for _, m := range ms {
		switch m.kind {
		case "Deployment":
			strict(t, m, &d)
		case "ConfigMap":
			var cm corev1.ConfigMap
			strict(t, m, &cm)
			if strings.HasSuffix(cm.Name, "-config") {
				cfg = filepath.Join(t.TempDir(), "configmap.yaml")
				os.WriteFile(cfg, m.raw, 0o600)
			} else if strings.HasSuffix(cm.Name, "-ca-bundle") {
				files["/etc/usher/ca-bundle/ca.crt"] = []byte(cm.Data["ca.crt"])
			}
		case "Secret":
			var s corev1.Secret
			strict(t, m, &s)
			if strings.HasSuffix(s.Name, "-tls") {
				files["/etc/usher/tls/ca.crt"] = s.Data["ca.crt"]
			}
		}
	}
	if len(d.Spec.Template.Spec.Containers) == 0 || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--manage-webhooks") {
		return nil
	}
	return registration(t, d.Spec.Template.Spec.Containers[0].Args, cfg, files)
}

func mustRender(t *testing.T, helm string, args ...string) []manifest {
	t.Helper()
	ms, err := helmTemplate(t, helm, args...)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// objectKey names an object: kind, namespace, name.
func objectKey(raw []byte) string {
	var o struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
	}
	json.Unmarshal(raw, &o)
	return o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}

// TestChartDefaultsRenderDeploy: with its default values the chart renders
// exactly the objects of deploy/, field for field, but for the labels helm
// adds (app.kubernetes.io/instance, managed-by, version, helm.sh/chart:
// deploy/'s labels must be among them) and the Namespace, which helm
// creates (--create-namespace). A change to deploy/ not made to the chart,
// or the reverse, fails here.
func TestChartDefaultsRenderDeploy(t *testing.T) {
	helm := helmBinary(t)
	want := map[string]map[string]any{}
	for _, m := range load(t) {
		if m.kind == "Namespace" {
			continue
		}
		var o map[string]any
		if err := json.Unmarshal(m.raw, &o); err != nil {
			t.Fatal(err)
		}
		want[objectKey(m.raw)] = o
	}
	got := map[string]map[string]any{}
	for _, m := range mustRender(t, helm) {
		var o map[string]any
		if err := json.Unmarshal(m.raw, &o); err != nil {
			t.Fatal(err)
		}
		k := objectKey(m.raw)
		if _, dup := got[k]; dup {
			t.Errorf("the chart renders %s twice", k)
		}
		got[k] = o
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("deploy/ has %s, the chart's defaults do not render it", k)
		}
	}
	for k, g := range got {
		w, ok := want[k]
		if !ok {
			t.Errorf("the chart's defaults render %s, deploy/ has no such object", k)
			continue
		}
		for _, d := range diffObjects("", w, g) {
			t.Errorf("%s: %s", k, d)
		}
	}
}

// diffObjects lists where got differs from want (decoded JSON). A map under
// a "labels" or "matchLabels" key may hold more labels than want's, as long
// as it holds all of want's.
func diffObjects(path string, want, got any) []string {
	if want == nil && strings.HasSuffix(path, ".metadata.labels") {
		return nil // helm's labels on an object deploy/ labels not at all
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: deploy/ has %s, the chart %s", path, compact(want), compact(got))}
		}
		superset := strings.HasSuffix(path, ".labels") || strings.HasSuffix(path, ".matchLabels") || path == ".spec.selector" && isStringMap(g)
		var out []string
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok && !superset {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, diffObjects(path+"."+k, w[k], g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: deploy/ has %s, the chart %s", path, compact(want), compact(got))}
		}
		var out []string
		for i := range w {
			out = append(out, diffObjects(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: deploy/ has %s, the chart %s", path, compact(want), compact(got))}
		}
		return nil
	}
}

func isStringMap(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

func compact(v any) string {
	if v == nil {
		return "nothing"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestChartAppVersion: the chart's appVersion is the image tag deploy/
// runs, and the default image is that tag.
func TestChartAppVersion(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := utilyaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	for _, m := range load(t) {
		if m.kind != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		strict(t, m, &d)
		img := d.Spec.Template.Spec.Containers[0].Image
		if _, tag, _ := strings.Cut(img, ":"); tag != chart.AppVersion {
			t.Errorf("deploy/deployment.yaml runs %s, the chart's appVersion is %q: bump them together", img, chart.AppVersion)
		}
	}
}

// rendered is what one value set renders, by kind.
type rendered struct {
	t        *testing.T
	name, ns string // usher's objects' base name and namespace
	objects  map[string][]manifest
}

func render(t *testing.T, helm string, args ...string) rendered {
	t.Helper()
	return renderAs(t, helm, "usher", "usher", "usher-system", args...)
}

// renderAs renders the chart as release in ns; name is the base name of
// the objects the release gets.
func renderAs(t *testing.T, helm, release, name, ns string, args ...string) rendered {
	t.Helper()
	r := rendered{t, name, ns, map[string][]manifest{}}
	ms, err := helmTemplateAs(t, helm, release, ns, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		r.objects[m.kind] = append(r.objects[m.kind], m)
	}
	return r
}

// one decodes strictly the only object of kind into into.
func (r rendered) one(kind string, into any) {
	r.t.Helper()
	if n := len(r.objects[kind]); n != 1 {
		r.t.Fatalf("%d objects of kind %s, want 1", n, kind)
	}
	strict(r.t, r.objects[kind][0], into)
}

func (r rendered) count(kind string) int { return len(r.objects[kind]) }

// configReader decodes the Role or RoleBinding that lets usher read its
// ConfigMaps into into, and says whether there is one.
func (r rendered) configReader(kind string, into any) bool {
	for _, m := range r.objects[kind] {
		if strings.Contains(string(m.raw), "-config-reader") {
			strict(r.t, m, into)
			return true
		}
	}
	return false
}

// webhooks returns every webhook of the rendered configurations, by name,
// as validating webhooks (the mutating one's fields the checks read are
// the same).
func (r rendered) webhooks() map[string]admissionregistrationv1.ValidatingWebhook {
	r.t.Helper()
	var mw admissionregistrationv1.MutatingWebhookConfiguration
	var vw admissionregistrationv1.ValidatingWebhookConfiguration
	r.one("MutatingWebhookConfiguration", &mw)
	r.one("ValidatingWebhookConfiguration", &vw)
	out := map[string]admissionregistrationv1.ValidatingWebhook{}
	for _, h := range mw.Webhooks {
		out[h.Name] = admissionregistrationv1.ValidatingWebhook{
			Name: h.Name, ClientConfig: h.ClientConfig, Rules: h.Rules, FailurePolicy: h.FailurePolicy,
			NamespaceSelector: h.NamespaceSelector, MatchConditions: h.MatchConditions, TimeoutSeconds: h.TimeoutSeconds,
		}
	}
	for _, h := range vw.Webhooks {
		out[h.Name] = h
	}
	return out
}

var workloadWebhooks = []string{"mutate.usher.io", "validate.usher.io", "validate-status.usher.io", "validate-binding.usher.io"}

// checkRendered holds for every value set: each object decodes strictly
// into its API type, the usher-namespaces condition of every workload
// webhook is the one usher generates for the rendered configuration (the
// two stay in step whatever the values), the configuration loads without
// warnings, and the webhooks point at the rendered Service.
func checkRendered(t *testing.T, r rendered) {
	t.Helper()
	types := map[string]func() any{
		"ServiceAccount": func() any { return &corev1.ServiceAccount{} }, "Secret": func() any { return &corev1.Secret{} },
		"ConfigMap": func() any { return &corev1.ConfigMap{} }, "Service": func() any { return &corev1.Service{} },
		"ResourceQuota": func() any { return &corev1.ResourceQuota{} }, "Deployment": func() any { return &appsv1.Deployment{} },
		"PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} }, "NetworkPolicy": func() any { return &networkingv1.NetworkPolicy{} },
		"ClusterRole": func() any { return &rbacv1.ClusterRole{} }, "ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
		"Role": func() any { return &rbacv1.Role{} }, "RoleBinding": func() any { return &rbacv1.RoleBinding{} },
		"MutatingWebhookConfiguration":   func() any { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		"ValidatingWebhookConfiguration": func() any { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		"ValidatingAdmissionPolicy":      func() any { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
		"ValidatingAdmissionPolicyBinding": func() any {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		},
	}
	for kind, ms := range r.objects {
		for _, m := range ms {
			if newT, ok := types[kind]; ok {
				strict(t, m, newT())
			} else if !slices.Contains([]string{"Issuer", "Certificate", "ServiceMonitor"}, kind) {
				t.Errorf("unexpected kind %s", kind)
			}
		}
	}
	var d appsv1.Deployment
	r.one("Deployment", &d)
	configArg := "--config-map=" + r.ns + "/" + r.name + "-config"
	if r.count("ConfigMap") == 0 {
		configArg = "--config-map="
	} else if !r.configReader("Role", &rbacv1.Role{}) {
		configArg = "--config=/etc/usher/config"
	}
	checkDeployment(t, &d, r.name, configArg)
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--manage-webhooks") {
		return // webhook.manage false: you register them
	}
	hooks := r.webhooks()
	for _, name := range append(slices.Clone(workloadWebhooks), "validate-config.usher.io") {
		h, ok := hooks[name]
		if name == "validate-config.usher.io" && !ok {
			continue
		}
		if !ok {
			t.Errorf("no webhook %s", name)
			continue
		}
		if s := h.ClientConfig.Service; s == nil || s.Name != r.name || s.Namespace != r.ns {
			t.Errorf("%s calls %+v, want the Service %s in %s", name, h.ClientConfig.Service, r.name, r.ns)
		}
	}
	if r.count("ConfigMap") == 1 {
		var cm corev1.ConfigMap
		r.one("ConfigMap", &cm)
		c, err := config.FromConfigMap("usher-config", cm.Data)
		if err != nil {
			t.Fatalf("the rendered ConfigMap does not load: %v", err)
		}
		if len(c.Warnings) != 0 {
			t.Errorf("the rendered ConfigMap has warnings: %v", c.Warnings)
		}
		want := settings.NamespaceCondition(c.Admission.Config())
		for _, name := range workloadWebhooks {
			mc := hooks[name].MatchConditions
			if len(mc) == 0 || mc[0].Name != settings.NamespaceConditionName || mc[0].Expression != want {
				t.Errorf("%s: matchConditions %+v, want first %s = %s (what usher generates for the rendered ConfigMap)", name, mc, settings.NamespaceConditionName, want)
			}
		}
	}
}

// TestChartValueSets renders the chart with value sets other than the
// defaults and checks what each promises.
func TestChartValueSets(t *testing.T) {
	helm := helmBinary(t)

	t.Run("defaults", func(t *testing.T) {
		r := render(t, helm)
		checkRendered(t, r)
		if r.count("Issuer") != 1 || r.count("Certificate") != 1 || r.count("Secret") != 0 {
			t.Errorf("cert-manager by default: %d Issuers, %d Certificates, %d Secrets", r.count("Issuer"), r.count("Certificate"), r.count("Secret"))
		}
		if r.count("ServiceMonitor")+r.count("NetworkPolicy") != 0 {
			t.Error("ServiceMonitor and NetworkPolicy are opt-in")
		}
	})

	t.Run("validate-config refuses warnings", func(t *testing.T) {
		for value, want := range map[string]bool{"admit": false, "refuse": true} {
			r := render(t, helm, "--set", "webhook.validateConfig.warnings="+value)
			checkRendered(t, r)
			var d appsv1.Deployment
			r.one("Deployment", &d)
			if got := slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--validate-config-warnings=refuse"); got != want {
				t.Errorf("warnings %s: --validate-config-warnings=refuse given: %v", value, got)
			}
		}
	})

	t.Run("mutating configuration after YuniKorn's", func(t *testing.T) {
		r := render(t, helm, "--set", "webhook.mutatingConfigurationName=zz-usher")
		checkRendered(t, r)
		var mw admissionregistrationv1.MutatingWebhookConfiguration
		r.one("MutatingWebhookConfiguration", &mw)
		var vw admissionregistrationv1.ValidatingWebhookConfiguration
		r.one("ValidatingWebhookConfiguration", &vw)
		if mw.Name != "zz-usher" || vw.Name == "zz-usher" {
			t.Errorf("mutating %q, validating %q: want only the mutating configuration renamed", mw.Name, vw.Name)
		}
	})

	t.Run("self-generated CA", func(t *testing.T) {
		r := render(t, helm, "--set", "certificates.mode=helm")
		checkRendered(t, r)
		if r.count("Issuer")+r.count("Certificate") != 0 {
			t.Error("mode helm renders cert-manager objects")
		}
		var s corev1.Secret
		r.one("Secret", &s)
		var d appsv1.Deployment
		r.one("Deployment", &d)
		if v := d.Spec.Template.Spec.Volumes[0]; v.Secret == nil || v.Secret.SecretName != s.Name {
			t.Errorf("the Deployment mounts %+v, the certificate is in Secret %s", v, s.Name)
		}
		leaf := parseCert(t, s.Data["tls.crt"])
		if _, err := x509ParseKey(s.Data["tls.key"]); err != nil {
			t.Errorf("tls.key: %v", err)
		}
		for name, h := range r.webhooks() {
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(h.ClientConfig.CABundle) {
				t.Errorf("%s: caBundle holds no certificate", name)
				continue
			}
			// The API server calls usher as usher.usher-system.svc.
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "usher.usher-system.svc", Roots: roots}); err != nil {
				t.Errorf("%s: the caBundle does not verify the serving certificate for usher.usher-system.svc: %v", name, err)
			}
		}
		var mw admissionregistrationv1.MutatingWebhookConfiguration
		r.one("MutatingWebhookConfiguration", &mw)
		if _, ok := mw.Annotations["cert-manager.io/inject-ca-from"]; ok {
			t.Error("mode helm keeps cert-manager's inject-ca-from annotation")
		}
	})

	t.Run("your own Secret and CA", func(t *testing.T) {
		r := render(t, helm, "--set", "certificates.mode=secret", "--set", "certificates.existingSecret=my-tls",
			"--set-string", "certificates.caBundle=PEM-OF-MY-CA")
		checkRendered(t, r)
		var d appsv1.Deployment
		r.one("Deployment", &d)
		if v := d.Spec.Template.Spec.Volumes[0]; v.Secret == nil || v.Secret.SecretName != "my-tls" {
			t.Errorf("the Deployment mounts %+v, want Secret my-tls", v)
		}
		for name, h := range r.webhooks() {
			if string(h.ClientConfig.CABundle) != "PEM-OF-MY-CA" {
				t.Errorf("%s: caBundle %q, want certificates.caBundle", name, h.ClientConfig.CABundle)
			}
		}
		if r.count("Secret")+r.count("Certificate") != 0 {
			t.Error("mode secret renders a certificate")
		}
		if _, err := helmTemplate(t, helm, "--set", "certificates.mode=secret", "--set", "certificates.existingSecret=my-tls"); err == nil {
			t.Error("mode secret without caBundle renders; want it refused")
		}
	})

	t.Run("opt-in namespaces", func(t *testing.T) {
		r := render(t, helm, "--set", "webhook.scope=optIn")
		checkRendered(t, r)
		hooks := r.webhooks()
		for _, name := range workloadWebhooks {
			s, err := metav1.LabelSelectorAsSelector(hooks[name].NamespaceSelector)
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
					t.Errorf("%s: selector %s on %v = %v, want %v", name, s, tc.labels, got, tc.want)
				}
			}
		}
		if sel := hooks["validate-config.usher.io"].NamespaceSelector.String(); strings.Contains(sel, "usher.io/enforce") {
			t.Errorf("validate-config.usher.io guards usher's own ConfigMap whatever the scope; selector %s", sel)
		}
	})

	t.Run("inline configuration, warn mode, more bypassed namespaces", func(t *testing.T) {
		r := render(t, helm, "--set", "config.mode=warn", "--set", "config.enforceQueueACLs=true", "--set", "config.delegatedAdministration=enforce",
			"--set", "config.trustedSetters.users={system:serviceaccount:flux-system:helm-controller}",
			"--set", "config.bypassNamespaces={^kube-system$,^monitoring$,^team-\\\\d+-sandbox$}",
			"--set", "config.processNamespaces={^team-}",
			"--set-string", "config.queues=partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n          - name: ml\n            submitacl: \" ml\"\n")
		checkRendered(t, r)
		var cm corev1.ConfigMap
		r.one("ConfigMap", &cm)
		c, err := config.FromConfigMap("usher-config", cm.Data)
		if err != nil {
			t.Fatal(err)
		}
		a := c.Admission.Config()
		if !a.EnforceQueueACLs || a.EnforceQueueACLsMode != "warn" || a.EnforceDeleteACLsMode != "warn" {
			t.Errorf("config.mode warn: enforceQueueACLs %v, modes %q %q", a.EnforceQueueACLs, a.EnforceQueueACLsMode, a.EnforceDeleteACLsMode)
		}
		if a.DelegatedAdministration != "enforce" || !c.Admission.TrustedSetter("system:serviceaccount:flux-system:helm-controller", nil) {
			t.Errorf("config.delegatedAdministration enforce: %q, trusted setters %+v", a.DelegatedAdministration, a.TrustedSetters)
		}
		if !strings.Contains(cm.Data["queues.yaml"], "name: ml") {
			t.Errorf("queues.yaml %q lacks the inline queue", cm.Data["queues.yaml"])
		}
		cond := r.webhooks()["mutate.usher.io"].MatchConditions[0].Expression
		for _, want := range []string{`"^monitoring$"`, `"^team-\\d+-sandbox$"`, `"^usher-system$"`, `["^team-"].exists`} {
			if !strings.Contains(cond, want) {
				t.Errorf("usher-namespaces %s lacks %s", cond, want)
			}
		}
	})

	t.Run("YuniKorn's ConfigMaps", func(t *testing.T) {
		r := render(t, helm, "--set", "config.existingConfigMaps={yunikorn/yunikorn-defaults,yunikorn/yunikorn-configs}")
		checkRendered(t, r)
		if r.count("ConfigMap") != 0 {
			t.Error("existingConfigMaps: the chart renders a ConfigMap")
		}
		var role rbacv1.Role
		r.configReader("Role", &role)
		if role.Namespace != "yunikorn" || !slices.Equal(role.Rules[0].ResourceNames, []string{"yunikorn-defaults", "yunikorn-configs"}) {
			t.Errorf("Role %s/%s names %v, want yunikorn-defaults and yunikorn-configs in yunikorn", role.Namespace, role.Name, role.Rules[0].ResourceNames)
		}
		var rb rbacv1.RoleBinding
		r.configReader("RoleBinding", &rb)
		if rb.Namespace != "yunikorn" || rb.Subjects[0].Namespace != "usher-system" {
			t.Errorf("RoleBinding %s/%s binds %+v", rb.Namespace, rb.Name, rb.Subjects)
		}
		var d appsv1.Deployment
		r.one("Deployment", &d)
		if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--config-map=yunikorn/yunikorn-defaults,yunikorn/yunikorn-configs") {
			t.Errorf("args %s", args)
		}
		h := r.webhooks()["validate-config.usher.io"]
		if sel := h.NamespaceSelector.String(); !strings.Contains(sel, "yunikorn") || strings.Contains(sel, "usher-system") {
			t.Errorf("validate-config.usher.io selector %s, want namespace yunikorn", sel)
		}
		if _, err := helmTemplate(t, helm, "--set", "config.existingConfigMaps={cm}", "--set", "config.source=file"); err == nil {
			t.Error("existingConfigMaps with source file renders; want it refused")
		}
	})

	t.Run("mounted file", func(t *testing.T) {
		r := render(t, helm, "--set", "config.source=file")
		checkRendered(t, r)
		if r.configReader("Role", &rbacv1.Role{}) {
			t.Error("source file: usher needs no read access to ConfigMaps")
		}
		var d appsv1.Deployment
		r.one("Deployment", &d)
		args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
		if !strings.Contains(args, "--config=/etc/usher/config") || strings.Contains(args, "--config-map") {
			t.Errorf("args %s", args)
		}
		if d.Spec.Template.Annotations["usher.io/config-checksum"] == "" {
			t.Error("source file: no checksum annotation, an upgrade would not roll the pods")
		}
	})

	t.Run("ServiceMonitor, NetworkPolicy, no PDB, no priority", func(t *testing.T) {
		r := render(t, helm, "--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.prometheusServiceAccount.namespace=monitoring",
			"--set", "serviceMonitor.prometheusServiceAccount.name=prometheus", "--set", "networkPolicy.enabled=true",
			"--set", "networkPolicy.egress.enabled=true", "--set", "podDisruptionBudget.enabled=false", "--set", "priorityClassName=")
		checkRendered(t, r)
		if r.count("ServiceMonitor") != 1 || r.count("PodDisruptionBudget") != 0 || r.count("ResourceQuota") != 0 {
			t.Errorf("%d ServiceMonitors, %d PDBs, %d ResourceQuotas", r.count("ServiceMonitor"), r.count("PodDisruptionBudget"), r.count("ResourceQuota"))
		}
		var np networkingv1.NetworkPolicy
		r.one("NetworkPolicy", &np)
		if len(np.Spec.Ingress) != 2 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 9443 || np.Spec.Ingress[1].Ports[0].Port.IntValue() != 8443 {
			t.Errorf("NetworkPolicy ingress %+v: want ports 9443 (webhooks) and 8443 only", np.Spec.Ingress)
		}
		if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Egress) < 2 {
			t.Errorf("NetworkPolicy egress %+v: want DNS and the API server", np.Spec.Egress)
		}
		found := false
		for _, m := range r.objects["ClusterRoleBinding"] {
			var b rbacv1.ClusterRoleBinding
			strict(t, m, &b)
			if b.RoleRef.Name == "usher-metrics-reader" && b.Subjects[0].Namespace == "monitoring" && b.Subjects[0].Name == "prometheus" {
				found = true
			}
		}
		if !found {
			t.Error("no binding of usher-metrics-reader to monitoring/prometheus")
		}
	})

	// The webhook port admits the API server only, the other port its
	// callers; a generated client CA verifies the client certificate it
	// issues for kube-apiserver, which usher does not mount.
	t.Run("webhook callers", func(t *testing.T) {
		r := render(t, helm, "--set", "webhookAuth.mode=client-cert", "--set", "webhookAuth.generate=true",
			"--set", "networkPolicy.enabled=true", "--set", "networkPolicy.egress.apiServerCIDRs={10.0.0.0/28}",
			"--set-json", `networkPolicy.ingressFrom=[{"namespaceSelector":{}}]`)
		var np networkingv1.NetworkPolicy
		r.one("NetworkPolicy", &np)
		in := np.Spec.Ingress
		if len(in) != 2 || in[0].Ports[0].Port.IntValue() != 9443 || len(in[0].From) != 1 || in[0].From[0].IPBlock == nil ||
			in[0].From[0].IPBlock.CIDR != "10.0.0.0/28" || in[1].Ports[0].Port.IntValue() != 8443 || in[1].From[0].NamespaceSelector == nil {
			t.Errorf("NetworkPolicy ingress %+v: want 9443 from 10.0.0.0/28 only, 8443 from ingressFrom", in)
		}
		var s corev1.Secret
		r.one("Secret", &s)
		var cms []corev1.ConfigMap
		for _, m := range r.objects["ConfigMap"] {
			var cm corev1.ConfigMap
			strict(t, m, &cm)
			cms = append(cms, cm)
		}
		i := slices.IndexFunc(cms, func(cm corev1.ConfigMap) bool { return cm.Name == "usher-webhook-client-ca" })
		if s.Name != "usher-webhook-client" || i < 0 {
			t.Fatalf("Secret %s, ConfigMaps %v: want usher-webhook-client and usher-webhook-client-ca", s.Name, cms)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(cms[i].Data["ca.crt"])) || !slices.Equal(s.Data["ca.crt"], []byte(cms[i].Data["ca.crt"])) {
			t.Fatalf("ConfigMap ca.crt %q, Secret ca.crt %q: want the same CA", cms[i].Data["ca.crt"], s.Data["ca.crt"])
		}
		leaf := parseCert(t, s.Data["tls.crt"])
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || leaf.Subject.CommonName != "kube-apiserver" {
			t.Errorf("the generated client certificate (CN %q) does not verify for client authentication: %v", leaf.Subject.CommonName, err)
		}
		var d appsv1.Deployment
		r.one("Deployment", &d)
		c := d.Spec.Template.Spec.Containers[0]
		args := strings.Join(c.Args, " ")
		if !strings.Contains(args, "--webhook-auth=client-cert") || !strings.Contains(args, "--webhook-client-ca=/etc/usher/webhook-client-ca/ca.crt") {
			t.Errorf("args %s", args)
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == s.Name {
				t.Errorf("usher mounts the Secret of kube-apiserver's client key")
			}
		}
		if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.ConfigMap != nil && v.ConfigMap.Name == "usher-webhook-client-ca"
		}) {
			t.Errorf("usher does not mount ConfigMap usher-webhook-client-ca: %+v", d.Spec.Template.Spec.Volumes)
		}
	})

	// GitOps: nothing registered by usher, nothing written; read only.
	t.Run("webhooks applied by you", func(t *testing.T) {
		r := render(t, helm, "--set", "webhook.manage=false")
		checkRendered(t, r)
		var d appsv1.Deployment
		r.one("Deployment", &d)
		if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); strings.Contains(args, "webhook-owner") || strings.Contains(args, "--manage-webhooks") {
			t.Errorf("args %s", args)
		}
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
			if r.count(kind) != 0 {
				t.Errorf("webhook.manage false renders a %s", kind)
			}
		}
		for _, m := range r.objects["ClusterRole"] {
			var role rbacv1.ClusterRole
			strict(t, m, &role)
			for _, rule := range role.Rules {
				if slices.Contains(rule.Resources, "mutatingwebhookconfigurations") && !slices.Equal(rule.Verbs, []string{"get", "list", "watch"}) {
					t.Errorf("ClusterRole %s: %v on webhook configurations, want reading only", role.Name, rule.Verbs)
				}
			}
		}
	})

	t.Run("another release name", func(t *testing.T) {
		r := renderAs(t, helm, "batch", "batch-usher", "batch-system")
		checkRendered(t, r)
		for kind, ms := range r.objects {
			for _, m := range ms {
				var o metav1.ObjectMeta
				var head struct {
					Metadata *metav1.ObjectMeta
				}
				head.Metadata = &o
				json.Unmarshal(m.raw, &head)
				if !strings.HasPrefix(o.Name, "batch-usher") || (o.Namespace != "" && o.Namespace != "batch-system") {
					t.Errorf("release batch in batch-system renders %s %s/%s", kind, o.Namespace, o.Name)
				}
			}
		}
		for name, h := range r.webhooks() {
			if sel := h.NamespaceSelector.String(); !strings.Contains(sel, "batch-system") {
				t.Errorf("%s: namespaceSelector %s does not name batch-system", name, sel)
			}
		}
	})
}

// TestChartRefusesBadValues: values.schema.json and the templates' checks
// make helm refuse a value of the wrong type, an unknown key, and settings
// that would leave usher unavailable.
func TestChartRefusesBadValues(t *testing.T) {
	helm := helmBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set-string", "replicas=two"}, "replicas"},
		{[]string{"--set", "replica=3"}, "replica"},
		{[]string{"--set", "webhook.failurePolicy=Sometimes"}, "failurePolicy"},
		{[]string{"--set", "webhook.scope=some"}, "scope"},
		{[]string{"--set", "webhook.validateConfig.warnings=warn"}, "warnings"},
		{[]string{"--set-string", "webhook.manage=yes"}, "manage"},
		{[]string{"--set", "webhook.mutatingConfigurationName=Zz_Usher"}, "mutatingConfigurationName"},
		{[]string{"--set", "image.tag=latest"}, "tag"},
		{[]string{"--set", "config.mode=audit"}, "mode"},
		{[]string{"--set", "config.delegatedAdministration=on"}, "delegatedAdministration"},
		{[]string{"--set", "config.delegatedAdministration=warn", "--set", "webhook.validateConfig.enabled=false"}, "needs webhook.validateConfig.enabled"},
		{[]string{"--set", "certificates.mode=vault"}, "mode"},
		{[]string{"--set", "accessAuth=token"}, "accessAuth"},
		{[]string{"--set", "webhookAuth.mode=mtls"}, "mode"},
		{[]string{"--set", "webhookAuth.mode=client-cert"}, "webhookAuth.mode client-cert needs webhookAuth.clientCA"},
		{[]string{"--set", "webhookAuth.mode=none", "--set", "webhookAuth.generate=true"}, "webhookAuth.mode none"},
		{[]string{"--set-string", "webhookAuth.clientCA=not a PEM"}, "clientCA"},
		{[]string{"--set-string", "config.accessControl.bypassAuth=no"}, "bypassAuth"},
		{[]string{"--set", "config.bypassNamespaces={a,b,c}", "--set", "config.bypassNamespaces[0]=x\\,y"}, "bypassNamespaces"},
		{[]string{"--set", "podDisruptionBudget.minAvailable=2"}, "minAvailable"},
		{[]string{"--set", "replicas=5"}, "resourceQuota.pods"},
		{[]string{"--set-string", "config.extraData.admissionController\\.filtering\\.bypassNamespaces=x"}, "bypassNamespaces"},
	} {
		_, err := helmTemplate(t, helm, tc.args...)
		if err == nil {
			t.Errorf("helm template %v renders; want it refused", tc.args)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: %v; want the error to name %s", tc.args, err, tc.want)
		}
	}
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("no PEM in %q", data)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func x509ParseKey(data []byte) (any, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM")
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	return x509.ParsePKCS8PrivateKey(b.Bytes)
}

// TestChartValuesDocumented: every value of values.yaml has a row in the
// values table of docs/install.md (by its full path, or by its last part
// in a row that names its parent).
func TestChartValuesDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := utilyaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### Chart values\n")
	if !ok {
		t.Fatal("docs/install.md has no section \"Chart values\"")
	}
	table, _, _ = strings.Cut(table, "\n### ")
	var rows []string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "| `") {
			first, _, _ := strings.Cut(strings.TrimPrefix(l, "| "), " | ")
			rows = append(rows, first)
		}
	}
	// Maps documented as one value.
	whole := map[string]bool{"resources": true, "webhook.optInLabel": true, "monitoring.dashboard.labels": true}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := k
			if prefix != "" {
				path = prefix + "." + k
			}
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !whole[path] {
				walk(path, sub)
				continue
			}
			found := false
			for _, r := range rows {
				if strings.Contains(r, "`"+path+"`") || prefix != "" && strings.Contains(r, "`"+k+"`") && strings.Contains(r, "`"+prefix+".") {
					found = true
				}
			}
			if !found {
				t.Errorf("value %s has no row in the values table of docs/install.md", path)
			}
		}
	}
	walk("", values)
}
