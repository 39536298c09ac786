//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"
)

// managed is one usher whose webhooks usher serve --manage-webhooks
// registers, by URL on loopback, as usher-LABEL, only for the namespaces
// labelled usherNSLabel=LABEL (so that parallel tests never see them),
// with its Lease in a namespace of its own.
type managed struct {
	*usherEnv
	name, home string
	flags      []string // the flags usher serve and usher webhook share
}

func newManaged(t *testing.T, ctx context.Context, config string) *managed {
	t.Helper()
	e := startUsherWith(t, ctx, config, "--access-auth=none")
	m := &managed{usherEnv: e, name: "usher-" + e.label}
	home, err := cluster.NewNamespace(ctx, "usher-home", nil)
	if err != nil {
		t.Fatal(err)
	}
	m.home = home
	m.flags = []string{"--name", m.name, "--namespace", home, "--url", e.u.URL(), "--ca-bundle-file", cluster.CAFile,
		"--opt-in-label", usherNSLabel + "=" + e.label}
	// Last (cleanups run in reverse): usher is stopped by then.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		api := e.admin.AdmissionregistrationV1()
		_ = api.MutatingWebhookConfigurations().Delete(ctx, m.name, metav1.DeleteOptions{})
		_ = api.ValidatingWebhookConfigurations().Delete(ctx, m.name, metav1.DeleteOptions{})
	})
	return m
}

// restart runs usher serve again with --manage-webhooks (and more flags).
func (m *managed) restart(ctx context.Context, more ...string) error {
	m.u.Stop()
	kc, err := cluster.Kubeconfig(Admin)
	if err != nil {
		return err
	}
	m.u.Args = append(append([]string{"--access-auth=none", "--kubeconfig", kc, "--manage-webhooks"}, m.flags...), more...)
	return m.u.Start(ctx)
}

// stamped says whether alice's dry-run pod in ns comes back with her
// identity recorded.
func stamped(ctx context.Context, t *testing.T, ns string) bool {
	p, err := client(t, Alice).CoreV1().Pods(ns).Create(ctx, Pod(ns, "probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false
	}
	info, ok, _ := UserInfo(p.Annotations)
	return ok && info.User == Alice
}

// TestManagedWebhooksOnlyOnceReady: usher registers nothing before it
// serves a good configuration: started on one it refuses, it exits, no
// webhook configuration exists and pods are created unstamped. Started on
// a good one, it registers them and pods are stamped; deleted, they are
// back within seconds (a watch); a new configuration is registered within
// seconds (the usher-namespaces condition follows bypassNamespaces).
func TestManagedWebhooksOnlyOnceReady(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	m := newManaged(t, ctx, baseConfig)
	ns := m.namespace(ctx, "managed")
	api := m.admin.AdmissionregistrationV1()

	if err := os.WriteFile(m.u.ConfigPath, []byte("partitions: [}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.restart(ctx); err == nil {
		t.Fatal("usher started on a configuration it refuses")
	} else {
		t.Logf("usher on a refused configuration: %v", strings.SplitN(err.Error(), "\n", 2)[0])
	}
	for _, get := range []func() error{
		func() error {
			_, err := api.MutatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := api.ValidatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Fatalf("usher not ready: a webhook configuration %s exists (%v)", m.name, err)
		}
	}
	if p, err := client(t, Alice).CoreV1().Pods(ns).Create(ctx, Pod(ns, "before-ready", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("usher not ready: pod creation refused: %v", err)
	} else if _, ok := p.Annotations[UserInfoAnnotation]; ok {
		t.Errorf("usher not ready, yet the pod was stamped: %v", p.Annotations)
	}

	if err := os.WriteFile(m.u.ConfigPath, []byte(baseConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) { return stamped(ctx, t, ns), nil }); err != nil {
		t.Fatalf("usher ready, but pods are never stamped: %v", err)
	}
	mw, err := api.MutatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
	if err != nil || mw.Labels["app.kubernetes.io/managed-by"] != "usher" {
		t.Fatalf("registered mutating configuration %v: %v", mw.Labels, err)
	}

	// Someone deletes it: back within seconds.
	if err := api.MutatingWebhookConfigurations().Delete(ctx, m.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := api.MutatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("deleted mutating configuration never registered again: %v", err)
	}

	// A new configuration: registered within seconds.
	changed := baseConfig + "  bypassNamespaces: [\"^kube-system$\", \"^managed-off-\"]\n"
	if err := os.WriteFile(m.u.ConfigPath, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		vw, err := api.ValidatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
		return err == nil && strings.Contains(vw.Webhooks[0].MatchConditions[0].Expression, "^managed-off-"), nil
	}); err != nil {
		t.Fatalf("the reloaded bypassNamespaces never reached the registration: %v", err)
	}
}

// TestManagedWebhooksAdoptWithoutGap: an install made by the previous
// chart (webhook configurations helm created, usher serving them) is
// upgraded: the chart renders the live configurations once more with
// helm.sh/resource-policy keep (helm template --dry-run=server reads them),
// usher restarts with --manage-webhooks and adopts them by name. A watch
// on the mutating configuration sees no moment without a webhook for pods
// from before the upgrade to after the adoption. Deleting the owner
// ClusterRole (helm uninstall) then deletes them (the garbage collector).
func TestManagedWebhooksAdoptWithoutGap(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 25*time.Minute)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := helmPath(ctx, t, root)
	m := newManaged(t, ctx, baseConfig)
	ns := m.namespace(ctx, "adopt")
	api := m.admin.AdmissionregistrationV1()

	// Today's install: what the chart registered, created by helm.
	out, err := exec.CommandContext(ctx, m.u.Bin, append([]string{"webhook", "--config", m.u.ConfigPath}, m.flags...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "\n---\n")
	var legacyM admissionregistrationv1.MutatingWebhookConfiguration
	var legacyV admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &legacyM); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &legacyV); err != nil {
		t.Fatal(err)
	}
	helmLabels := map[string]string{"app.kubernetes.io/name": "usher", "app.kubernetes.io/managed-by": "Helm"}
	legacyM.Labels, legacyV.Labels = helmLabels, helmLabels
	helmOpts := metav1.CreateOptions{FieldManager: "helm"}
	if _, err := api.MutatingWebhookConfigurations().Create(ctx, &legacyM, helmOpts); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingWebhookConfigurations().Create(ctx, &legacyV, helmOpts); err != nil {
		t.Fatal(err)
	}
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) { return stamped(ctx, t, ns), nil }); err != nil {
		t.Fatalf("today's install never stamped pods: %v", err)
	}

	// Watch from here on: every state of the mutating configuration. A
	// watch the API server ends (its timeout, a restart of the stream) is
	// resumed from the last resourceVersion seen, so no state is missed.
	cur, err := api.MutatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := fields.OneTermEqualSelector("metadata.name", m.name).String()
	w, err := watchtools.NewRetryWatcherWithContext(ctx, cur.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return api.MutatingWebhookConfigurations().Watch(ctx, o)
		}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var gaps []string
	events, adopted := 0, make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			mw, ok := ev.Object.(*admissionregistrationv1.MutatingWebhookConfiguration)
			mu.Lock()
			events++
			switch {
			case ev.Type == watch.Deleted:
				gaps = append(gaps, "deleted")
			case !ok:
				gaps = append(gaps, fmt.Sprintf("watch event %s %+v", ev.Type, ev.Object))
			case !slices.ContainsFunc(mw.Webhooks, func(h admissionregistrationv1.MutatingWebhook) bool {
				return slices.ContainsFunc(h.Rules, func(r admissionregistrationv1.RuleWithOperations) bool { return slices.Contains(r.Resources, "pods") })
			}):
				gaps = append(gaps, fmt.Sprintf("resourceVersion %s has no webhook for pods", mw.ResourceVersion))
			case mw.Labels["app.kubernetes.io/managed-by"] == "usher":
				select {
				case <-adopted:
				default:
					close(adopted)
				}
			}
			mu.Unlock()
		}
	}()

	// helm upgrade: the chart renders the live configurations to keep.
	kc, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"template", m.name, filepath.Join(root, "deploy", "chart", "usher"), "--namespace", m.home, "--kubeconfig", kc,
		"--dry-run=server", "--show-only", "templates/webhooks.yaml"}
	var rendered, stderr bytes.Buffer
	tmpl := exec.CommandContext(ctx, helm, args...)
	tmpl.Stdout, tmpl.Stderr = &rendered, &stderr
	if err := tmpl.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if n := strings.Count(rendered.String(), "helm.sh/resource-policy: keep"); n != 2 {
		t.Fatalf("the upgrade renders %d configurations to keep, want 2:\n%s", n, rendered.String())
	}
	if out, errOut, err := cluster.RunKubectl(ctx, Admin, rendered.Bytes(), "apply", "--server-side", "--field-manager=helm", "--force-conflicts", "-f", "-"); err != nil {
		t.Fatalf("applying the upgrade's configurations: %v\n%s%s", err, out, errOut)
	}

	// The new usher, owning what it registers through a ClusterRole.
	owner, err := m.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: m.name + "-webhook-writer"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.admin.RbacV1().ClusterRoles().Delete(context.Background(), owner.Name, metav1.DeleteOptions{})
	})
	if err := m.restart(ctx, "--webhook-owner", owner.Name); err != nil {
		t.Fatal(err)
	}
	select {
	case <-adopted:
	case <-time.After(60 * time.Second):
		t.Fatal("usher never adopted the mutating configuration")
	}
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) { return stamped(ctx, t, ns), nil }); err != nil {
		t.Fatalf("after the adoption pods are never stamped: %v", err)
	}
	mw, err := api.MutatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mw.Annotations["helm.sh/resource-policy"] != "keep" || len(mw.OwnerReferences) != 1 || mw.OwnerReferences[0].UID != owner.UID {
		t.Errorf("adopted configuration: annotations %v, owners %+v", mw.Annotations, mw.OwnerReferences)
	}
	w.Stop()
	<-watched
	mu.Lock()
	t.Logf("watched %d states of %s through the upgrade", events, m.name)
	for _, g := range gaps {
		t.Errorf("a moment without a mutating webhook for pods: %s", g)
	}
	mu.Unlock()

	// helm uninstall deletes the owner: the garbage collector deletes
	// the configurations (usher stopped first, as the Deployment is).
	m.u.Stop()
	if err := m.admin.RbacV1().ClusterRoles().Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, errM := api.MutatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
		_, errV := api.ValidatingWebhookConfigurations().Get(ctx, m.name, metav1.GetOptions{})
		return apierrors.IsNotFound(errM) && apierrors.IsNotFound(errV), nil
	}); err != nil {
		t.Fatalf("the owner deleted, the webhook configurations stay: %v", err)
	}
}

// TestChartWebhookWriter: the chart's RBAC and ValidatingAdmissionPolicy,
// applied for real, let usher's service account write its own webhook
// configurations and nothing else: one named otherwise, or whose webhook
// calls a URL or another Service, is refused by the policy (RBAC cannot
// name what may be created); deleting its own, or changing another's, is
// refused by RBAC. All as server-side dry runs, impersonating the account.
func TestChartWebhookWriter(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 25*time.Minute)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := helmPath(ctx, t, root)
	bin, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cluster.NewNamespace(ctx, "chart-writer", nil)
	if err != nil {
		t.Fatal(err)
	}
	release := "usher-w" + ns[len(ns)-5:] // the objects' base name, cluster-wide
	out, err := exec.CommandContext(ctx, helm, "template", release, filepath.Join(root, "deploy", "chart", "usher"), "--namespace", ns,
		"--set", "certificates.mode=helm", "--show-only", "templates/rbac.yaml").Output()
	if err != nil {
		t.Fatal(err)
	}
	if o, errOut, err := cluster.RunKubectl(ctx, Admin, out, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the chart's RBAC: %v\n%s%s", err, o, errOut)
	}
	t.Cleanup(func() {
		_, _, _ = cluster.RunKubectl(context.Background(), Admin, out, "delete", "--ignore-not-found", "-f", "-")
	})
	sa, err := cluster.ClientAs(Admin, "system:serviceaccount:"+ns+":"+release, "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	api := sa.AdmissionregistrationV1().MutatingWebhookConfigurations()
	render := func(args ...string) *admissionregistrationv1.MutatingWebhookConfiguration {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, append([]string{"webhook", "--namespace", ns, "--service", release, "--name", release}, args...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := yaml.UnmarshalStrict([]byte(strings.Split(string(out), "\n---\n")[0]), &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := api.Create(ctx, render(), dry); err != nil {
		t.Fatalf("usher creating its own webhook configuration: %v", err)
	}
	for what, m := range map[string]*admissionregistrationv1.MutatingWebhookConfiguration{
		"another name":    render("--name", "evil-"+release),
		"a URL":           render("--url", "https://evil.example:443"),
		"another Service": render("--service", "evil"),
	} {
		var last error
		if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			_, last = api.Create(ctx, m, dry)
			return last != nil && strings.Contains(last.Error(), release+"-webhook-writer"), nil
		}); err != nil {
			t.Errorf("usher's service account creating a webhook configuration with %s: %v, want the policy's refusal", what, last)
		} else {
			t.Logf("%s: %v", what, last)
		}
	}
	if err := api.Delete(ctx, release, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("usher's service account deleting its own webhook configuration: %v, want Forbidden", err)
	}
	other := render("--name", "other-"+release)
	if _, err := client(t, Admin).AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, other, dry); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Update(ctx, other, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("usher's service account updating another's webhook configuration: %v, want Forbidden", err)
	}
}

// TestManagedNativeFloor: with --manage-native-floor usher applies the
// floor usher native prints beside its webhooks, bound to the namespaces
// they select; with usher stopped and its webhook configurations gone,
// the API server alone still stamps alice's pods and refuses bob's forged
// stamp.
func TestManagedNativeFloor(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	m := newManaged(t, ctx, baseConfig)
	ns := m.namespace(ctx, "managed-floor")
	floor := m.name + "-floor"
	api := m.admin.AdmissionregistrationV1()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = api.MutatingAdmissionPolicyBindings().Delete(ctx, floor, metav1.DeleteOptions{})
		_ = api.MutatingAdmissionPolicies().Delete(ctx, floor, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicyBindings().Delete(ctx, floor, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(ctx, floor, metav1.DeleteOptions{})
	})
	if err := m.restart(ctx, "--manage-native-floor"); err != nil {
		t.Fatal(err)
	}
	var mb *admissionregistrationv1.MutatingAdmissionPolicyBinding
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := api.ValidatingAdmissionPolicyBindings().Get(ctx, floor, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		mb, err = api.MutatingAdmissionPolicyBindings().Get(ctx, floor, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the floor %s was never applied: %v", floor, err)
	}
	if sel := mb.Spec.MatchResources.NamespaceSelector; sel == nil || sel.MatchLabels[usherNSLabel] != m.label {
		t.Fatalf("the floor's binding selects %v, want the webhooks' namespaces (%s=%s)", sel, usherNSLabel, m.label)
	}

	// usher gone, and its webhooks with it: the floor alone answers.
	m.u.Stop()
	_ = api.MutatingWebhookConfigurations().Delete(ctx, m.name, metav1.DeleteOptions{})
	_ = api.ValidatingWebhookConfigurations().Delete(ctx, m.name, metav1.DeleteOptions{})
	want := stampOf(Alice, aliceGroups...)
	bob := client(t, Bob)
	var last, forged error
	// The API server takes up the mutating and the validating policy each
	// on its own informer: wait until both answer.
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		var p *corev1.Pod
		p, last = client(t, Alice).CoreV1().Pods(ns).Create(ctx, Pod(ns, "floor-only", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		_, forged = bob.CoreV1().Pods(ns).Create(ctx, Pod(ns, "forged", map[string]string{UserInfoAnnotation: want}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil && p.Annotations[UserInfoAnnotation] == want && forged != nil && strings.Contains(forged.Error(), "usher floor"), nil
	}); err != nil {
		t.Fatalf("with usher down, the floor does not both stamp alice's pod %s (last: %v) and refuse bob's forged one (last: %v): %v", want, last, forged, err)
	}
	_, err := bob.CoreV1().Pods(ns).Create(ctx, Pod(ns, "forged", map[string]string{UserInfoAnnotation: want}), metav1.CreateOptions{})
	wantFloorDenied(t, "bob's pod stamped as alice with usher down", err)
}
