//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/usherhq/usher/internal/pki"
)

// installed is a usher installed the way deploy/ installs it, in a
// namespace of the test (ns, standing for usher-system) under the name
// name (standing for usher): the Deployment (no kubelet runs its pods),
// the Service with one ready endpoint, the ServiceAccount with the RBAC of
// deploy/rbac.yaml, the ConfigMap, and the webhook configurations of
// deploy/webhooks.yaml, rendered into dir/deploy/webhooks.yaml, calling
// the usher process of e. The webhooks also select only the namespaces
// labelled for e, so that other tests never meet them.
type installed struct {
	*usherEnv
	ns, name, governed, dir string
}

// deployDocs reads deploy/FILE with usher-system replaced by ns.
func deployDocs(t *testing.T, file, ns string) []json.RawMessage {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", file))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte("usher-system"), []byte(ns))
	var out []json.RawMessage
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("deploy/%s: %v", file, err)
		}
		out = append(out, raw)
	}
}

func decodeAs[T any](t *testing.T, raw json.RawMessage) *T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// install starts usher and installs it as deploy/ does (see installed).
func install(t *testing.T, ctx context.Context) *installed {
	t.Helper()
	e := startUsher(t, ctx, baseConfig)
	in := &installed{usherEnv: e, ns: e.namespace(ctx, "usher-home"), name: "usher-" + e.label, governed: e.namespace(ctx, "governed"), dir: t.TempDir()}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	dep := decodeAs[appsv1.Deployment](t, deployDocs(t, "deployment.yaml", in.ns)[0])
	dep.Name, dep.Spec.Replicas = in.name, ptr(int32(0))
	args := dep.Spec.Template.Spec.Containers[0].Args
	for i, a := range args {
		if a == "--webhook-auth=report" {
			args[i] = "--webhook-auth=client-cert" // as the usher of the harness runs
		}
	}
	must(e.admin.AppsV1().Deployments(in.ns).Create(ctx, dep, metav1.CreateOptions{}))

	svc := decodeAs[corev1.Service](t, deployDocs(t, "service.yaml", in.ns)[0])
	svc.Name, svc.Spec.Selector = in.name, nil
	must(e.admin.CoreV1().Services(in.ns).Create(ctx, svc, metav1.CreateOptions{}))
	in.createEndpoints(ctx)

	for _, raw := range deployDocs(t, "configmap.yaml", in.ns) {
		must(e.admin.CoreV1().ConfigMaps(in.ns).Create(ctx, decodeAs[corev1.ConfigMap](t, raw), metav1.CreateOptions{}))
	}

	// deploy/rbac.yaml: its Role as it is, its ClusterRoles (and
	// system:auth-delegator) under names of this test, bound to usher's
	// service account.
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "usher", Namespace: in.ns}
	must(e.admin.CoreV1().ServiceAccounts(in.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "usher"}}, metav1.CreateOptions{}))
	role := shippedConfigRole(t)
	role.Namespace, role.ResourceVersion = in.ns, ""
	must(e.admin.RbacV1().Roles(in.ns).Create(ctx, &role, metav1.CreateOptions{}))
	must(e.admin.RbacV1().RoleBindings(in.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, Subjects: []rbacv1.Subject{sa}}, metav1.CreateOptions{}))
	roles := map[string][]rbacv1.PolicyRule{"system:auth-delegator": nil}
	for name, r := range shippedClusterRoles(t) {
		roles[name] = r.Rules
	}
	for name, rules := range roles {
		ref := name
		if rules != nil {
			ref = name + "-" + e.label
			must(e.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ref}, Rules: rules}, metav1.CreateOptions{}))
		}
		crb := "usher-e2e-" + strings.ReplaceAll(name, ":", "-") + "-" + e.label
		must(e.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crb},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ref}, Subjects: []rbacv1.Subject{sa}}, metav1.CreateOptions{}))
		t.Cleanup(func() {
			e.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb, metav1.DeleteOptions{})
			if rules != nil {
				e.admin.RbacV1().ClusterRoles().Delete(context.Background(), ref, metav1.DeleteOptions{})
			}
		})
	}

	// deploy/webhooks.yaml, calling this usher. validate-config is left
	// out: this usher serves a file, not the ConfigMap.
	var items []any
	for _, raw := range deployDocs(t, "webhooks.yaml", in.ns) {
		var head metav1.TypeMeta
		json.Unmarshal(raw, &head)
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			w := decodeAs[admissionregistrationv1.MutatingWebhookConfiguration](t, raw)
			w.Name = in.name
			for i := range w.Webhooks {
				in.callUsher(&w.Webhooks[i].ClientConfig, w.Webhooks[i].NamespaceSelector)
			}
			items = append(items, w)
		case "ValidatingWebhookConfiguration":
			w := decodeAs[admissionregistrationv1.ValidatingWebhookConfiguration](t, raw)
			w.Name = in.name
			var keep []admissionregistrationv1.ValidatingWebhook
			for _, h := range w.Webhooks {
				if h.Name != "validate-config.usher.io" {
					in.callUsher(&h.ClientConfig, h.NamespaceSelector)
					keep = append(keep, h)
				}
			}
			w.Webhooks = keep
			items = append(items, w)
		}
	}
	list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(in.dir, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in.dir, "deploy", "webhooks.yaml"), list, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, kind := range []string{"mutatingwebhookconfiguration", "validatingwebhookconfiguration"} {
			cluster.RunKubectl(context.Background(), Admin, nil, "delete", "--ignore-not-found", kind, in.name)
		}
	})
	in.kubectl(ctx, "apply", "-f", filepath.Join(in.dir, "deploy", "webhooks.yaml"))
	in.waitStamped(ctx, "install")
	return in
}

// callUsher points a webhook of deploy/webhooks.yaml at this usher, and
// limits it to the namespaces labelled for it.
func (in *installed) callUsher(cc *admissionregistrationv1.WebhookClientConfig, sel *metav1.LabelSelector) {
	url := in.u.URL() + *cc.Service.Path
	*cc = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: in.u.Cert.CABundle}
	sel.MatchLabels = map[string]string{usherNSLabel: in.label}
}

// createEndpoints gives the Service one ready endpoint (an address of
// TEST-NET-1: the API server reaches usher by URL here).
func (in *installed) createEndpoints(ctx context.Context) {
	in.t.Helper()
	_, err := in.admin.DiscoveryV1().EndpointSlices(in.ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: in.name, Labels: map[string]string{discoveryv1.LabelServiceName: in.name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("webhook"), Port: ptr(int32(9443))}},
	}, metav1.CreateOptions{})
	if err != nil {
		in.t.Fatal(err)
	}
}

func (in *installed) kubectl(ctx context.Context, args ...string) string {
	in.t.Helper()
	out, errOut, err := cluster.RunKubectl(ctx, Admin, nil, args...)
	if err != nil {
		in.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// waitStamped waits until alice's pod in the governed namespace comes back
// stamped by usher.
func (in *installed) waitStamped(ctx context.Context, when string) {
	in.t.Helper()
	alice := client(in.t, Alice)
	var last error
	err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		var p *corev1.Pod
		p, last = alice.CoreV1().Pods(in.governed).Create(ctx, Pod(in.governed, "probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if last != nil {
			return false, nil
		}
		info, ok, _ := UserInfo(p.Annotations)
		return ok && info.User == Alice, nil
	})
	if err != nil {
		in.t.Fatalf("%s: usher never stamped alice's pod in %s (last: %v): %v", when, in.governed, last, err)
	}
}

// runbookBlocks returns the sh blocks of docs/troubleshooting.md's
// "Break glass" section, in order.
func runbookBlocks(t *testing.T) []string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Break glass")
	if !ok {
		t.Fatal(`docs/troubleshooting.md has no "## Break glass" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)\n```sh\n(.*?)```\n").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) != 4 || strings.TrimSpace(blocks[0]) != "NS=usher-system NAME=usher" {
		t.Fatalf("the Break glass section has %d sh blocks, want the names, then fail open, remove and restore:\n%q", len(blocks), blocks)
	}
	return blocks[1:]
}

// runBlock runs a block of the runbook with bash, as written, with the
// cluster's kubectl as admin, NS and NAME naming this installation, in
// in.dir (where deploy/webhooks.yaml is the rendered one).
func (in *installed) runBlock(ctx context.Context, block string) {
	in.t.Helper()
	admin, err := cluster.Kubeconfig(Admin)
	if err != nil {
		in.t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = in.dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+admin, "NS="+in.ns, "NAME="+in.name,
		"PATH="+filepath.Dir(cluster.Kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		in.t.Fatalf("runbook block:\n%s\nfailed: %v\n%s", block, err, out)
	}
	in.t.Logf("$ %s%s", strings.ReplaceAll(strings.TrimSpace(block), "\n", "\n$ "), "\n"+string(out))
}

// TestBreakGlassRunbook: with usher's webhooks registered as
// deploy/webhooks.yaml registers them and usher killed, pods in a governed
// namespace are refused while kube-system and usher's own namespace still
// admit; the blocks of docs/troubleshooting.md's "Break glass", run as
// written, let pods in again (step 1 with a forged identity, the cost it
// states), and the restore brings the webhooks back, failing closed until
// usher answers again.
func TestBreakGlassRunbook(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 6*time.Minute)
	blocks := runbookBlocks(t)
	in := install(t, ctx)
	alice := client(t, Alice)
	// kube-system carries this test's label, so that only the webhooks'
	// exclusion keeps it from usher.
	label := func(v any) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{usherNSLabel: v}}})
		if _, err := in.admin.CoreV1().Namespaces().Patch(context.Background(), "kube-system", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	label(in.label)
	t.Cleanup(func() { label(nil) })

	in.u.Stop()
	governed := func(name string, annotations map[string]string) (*corev1.Pod, error) {
		return alice.CoreV1().Pods(in.governed).Create(ctx, Pod(in.governed, name, annotations), metav1.CreateOptions{})
	}
	if _, err := governed("while-down", nil); err == nil || !strings.Contains(err.Error(), `failed calling webhook "mutate.usher.io"`) {
		t.Fatalf("usher killed: alice's pod in the governed namespace: err = %v, want the API server's failure to call mutate.usher.io", err)
	}
	if _, err := in.admin.CoreV1().Pods(in.ns).Create(ctx, Pod(in.ns, "while-down", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("usher killed: a pod in usher's own namespace %s was refused: %v", in.ns, err)
	}
	if _, err := in.admin.CoreV1().Pods("kube-system").Create(ctx, Pod("kube-system", "usher-e2e-"+in.label, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("usher killed: a pod in kube-system was refused: %v", err)
	}

	forged := map[string]string{UserInfoAnnotation: `{"user":"mallory","groups":["admins"]}`}
	admitted := func(step, name string, annotations map[string]string) {
		t.Helper()
		var p *corev1.Pod
		var last error
		if err := Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
			p, last = governed(name, annotations)
			return last == nil || apierrors.IsAlreadyExists(last), nil
		}); err != nil {
			t.Fatalf("after %s, alice's pod in the governed namespace is still refused: %v", step, last)
		}
		if p != nil && p.Annotations[UserInfoAnnotation] != annotations[UserInfoAnnotation] {
			t.Errorf("after %s, usher changed the pod: %v", step, p.Annotations)
		}
	}

	in.runBlock(ctx, blocks[0])
	admitted("fail open", "forged", forged) // the cost it states: a forged identity is accepted
	m, err := in.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, in.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := in.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, in.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]admissionregistrationv1.FailurePolicyType{}
	for _, h := range m.Webhooks {
		policies[h.Name] = *h.FailurePolicy
	}
	for _, h := range v.Webhooks {
		policies[h.Name] = *h.FailurePolicy
	}
	for name, fp := range policies {
		if fp != admissionregistrationv1.Ignore {
			t.Errorf("after failing open: webhook %s has failurePolicy %s, want Ignore", name, fp)
		}
	}

	in.runBlock(ctx, blocks[1])
	admitted("removing the webhooks", "after-remove", nil)
	for _, err := range []error{
		func() error {
			_, err := in.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, in.name, metav1.GetOptions{})
			return err
		}(),
		func() error {
			_, err := in.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, in.name, metav1.GetOptions{})
			return err
		}(),
	} {
		if !apierrors.IsNotFound(err) {
			t.Errorf("after removing the webhooks: get: %v, want NotFound", err)
		}
	}

	// Restore while usher is still away: the webhooks are back and fail
	// closed again; the Deployment, scaled up, gets its pods (usher's own
	// namespace is never sent to usher).
	in.runBlock(ctx, blocks[2])
	var last error
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, last = governed("after-restore", nil)
		return last != nil && strings.Contains(last.Error(), `failed calling webhook "mutate.usher.io"`), nil
	}); err != nil {
		t.Fatalf("after the restore, with usher away, alice's pod was not refused: %v", last)
	}
	if d, err := in.admin.AppsV1().Deployments(in.ns).Get(ctx, in.name, metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 2 {
		t.Errorf("after the restore: the Deployment: %v, want 2 replicas", err)
	}
	if err := in.u.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in.waitStamped(ctx, "restore")
}

// doctorRun runs usher doctor -o json against the installation.
func (in *installed) doctorRun(ctx context.Context, extra ...string) (map[string]doctorCheck, int) {
	in.t.Helper()
	admin, err := cluster.Kubeconfig(Admin)
	if err != nil {
		in.t.Fatal(err)
	}
	args := append([]string{"doctor", "--kubeconfig", admin, "--namespace", in.ns, "--release", in.name, "--probe-namespace", in.governed}, extra...)
	cmd := exec.CommandContext(ctx, in.u.Bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		in.t.Fatal(err)
	}
	in.t.Logf("usher %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	if !strings.Contains(strings.Join(extra, " "), "json") {
		return nil, code
	}
	var list []doctorCheck
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		in.t.Fatalf("usher doctor -o json: %v\n%s", err, stdout.String())
	}
	out := map[string]doctorCheck{}
	for _, c := range list {
		out[c.Name] = c
	}
	return out, code
}

type doctorCheck struct{ Name, Status, Detail, Fix string }

// wantChecks checks the status of every check: those in want have that
// status (and, for a fail, a detail and a fix containing the strings
// given), the others are ok.
func wantChecks(t *testing.T, what string, got map[string]doctorCheck, want map[string][]string) {
	t.Helper()
	for _, name := range []string{"webhook-callers", "webhook-configurations", "ca-bundles", "certificate-expiry", "service", "configuration", "rbac", "api-server-reaches-webhook", "unstamped-parents"} {
		c, ok := got[name]
		w := want[name]
		status := "ok"
		if len(w) > 0 {
			status, w = w[0], w[1:]
		}
		if !ok || c.Status != status {
			t.Errorf("%s: check %s: %+v, want %s", what, name, c, status)
			continue
		}
		for _, s := range w {
			if !strings.Contains(c.Detail+"\n"+c.Fix, s) {
				t.Errorf("%s: check %s: %q (fix %q) does not say %q", what, name, c.Detail, c.Fix, s)
			}
		}
	}
}

// TestDoctor: usher doctor against usher installed as deploy/ installs it
// finds every check ok but the certificate's expiry (the harness's
// certificate lives a day); then, broken one way at a time, the check
// concerned fails with its fix, and the others stay ok.
func TestDoctor(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 5*time.Minute)
	in := install(t, ctx)
	expiry := []string{"warn", "days", "renew"}

	got, code := in.doctorRun(ctx, "-o", "json")
	wantChecks(t, "installed", got, map[string][]string{"certificate-expiry": expiry})
	if code != 0 {
		t.Errorf("installed: exit %d, want 0 (warnings only)", code)
	}
	if _, code := in.doctorRun(ctx, "--strict"); code != 2 {
		t.Errorf("installed, --strict: exit %d, want 2 (a warning)", code)
	}

	t.Run("a wrong caBundle", func(t *testing.T) {
		other, err := pki.Issue(pki.Spec{CommonName: "not-usher's", IsCA: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := in.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, in.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range w.Webhooks {
			w.Webhooks[i].ClientConfig.CABundle = pki.CertPEM(other)
		}
		if _, err := in.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got map[string]doctorCheck
		Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			got, code = in.doctorRun(ctx, "-o", "json")
			return got["api-server-reaches-webhook"].Status == "fail", nil
		})
		wantChecks(t, "wrong caBundle", got, map[string][]string{"certificate-expiry": expiry,
			"ca-bundles":                 {"fail", "validate.usher.io", "unknown authority", "caBundle"},
			"api-server-reaches-webhook": {"fail", `failed calling webhook "validate.usher.io"`, "Break glass"}})
		if code != 1 {
			t.Errorf("wrong caBundle: exit %d, want 1", code)
		}
		in.kubectl(ctx, "apply", "-f", filepath.Join(in.dir, "deploy", "webhooks.yaml"))
	})

	t.Run("no endpoints", func(t *testing.T) {
		if err := in.admin.DiscoveryV1().EndpointSlices(in.ns).Delete(ctx, in.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, code := in.doctorRun(ctx, "-o", "json")
		wantChecks(t, "no endpoints", got, map[string][]string{"certificate-expiry": expiry,
			"service": {"fail", "0 of 0 endpoints ready", "get pods -l app.kubernetes.io/name=usher"}})
		if code != 1 {
			t.Errorf("no endpoints: exit %d, want 1", code)
		}
		in.doctorRun(ctx) // the text, for the log
		in.createEndpoints(ctx)
	})

	t.Run("a ConfigMap with an error", func(t *testing.T) {
		cm, err := in.admin.CoreV1().ConfigMaps(in.ns).Get(ctx, "usher-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		good := cm.Data["admissionController.accessControl.bypassAuth"]
		cm.Data["admissionController.accessControl.bypassAuth"] = "maybe"
		if cm, err = in.admin.CoreV1().ConfigMaps(in.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, code := in.doctorRun(ctx, "-o", "json")
		wantChecks(t, "broken ConfigMap", got, map[string][]string{"certificate-expiry": expiry,
			"configuration":     {"fail", "configmap/" + in.ns + "/usher-config", "bypassAuth", "usher lint"},
			"unstamped-parents": {"warn", "not checked"}})
		if code != 1 {
			t.Errorf("broken ConfigMap: exit %d, want 1", code)
		}
		cm.Data["admissionController.accessControl.bypassAuth"] = good
		if _, err := in.admin.CoreV1().ConfigMaps(in.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	got, _ = in.doctorRun(ctx, "-o", "json")
	wantChecks(t, "mended", got, map[string][]string{"certificate-expiry": expiry})
}
