//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// delegatedQueues: alice administers root.teama, carol root.prod, bob the
// partition (its adminacl).
const delegatedQueues = `partitions:
  - name: default
    adminacl: bob
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: teama
            adminacl: alice
          - name: prod
            adminacl: carol
            properties: {application.sort.policy: fifo}
`

// warnings collects the API server's warnings to one client.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warnings) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.Join(w.got, "\n")
	w.got = nil
	return s
}

// TestDelegatedAdministration runs usher on its ConfigMap with
// delegatedAdministration enforce, registered by usher serve
// --manage-webhooks, on the real API server: a tenant may move a namespace
// only under a queue it administers (patch and server-side apply); a queue
// admin may add a child queue by updating the ConfigMap, may not change
// another queue (the denial says why), the partition admin may not take
// its own admin right, system:masters passes; warn mode admits with a
// warning. With usher down, the registration fails closed for tenants but
// lets system:masters through without calling usher; registered to fail
// open, usher only warns and logs why.
func TestDelegatedAdministration(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 5*time.Minute)
	bin, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	admin := client(t, Admin)
	label := fmt.Sprintf("d%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1))
	name := "usher-" + label
	home, err := cluster.NewNamespace(ctx, "deleg-home", nil)
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := cluster.NewNamespace(ctx, "deleg", map[string]string{usherNSLabel: label})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		api := admin.AdmissionregistrationV1()
		_ = api.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		_ = api.ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		for _, ns := range []string{home, tenant} {
			_ = admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "usher-config", Namespace: home}, Data: map[string]string{
		"queues.yaml": delegatedQueues, "admissionController.delegatedAdministration": "enforce"}}
	if _, err := admin.CoreV1().ConfigMaps(home).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The tenants may write usher's ConfigMap and the tenant namespace:
	// only usher stands in their way.
	users := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: Alice}, {APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: Bob},
		{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: Carol}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"usher-config"}, Verbs: []string{"get", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{tenant}, Verbs: []string{"get", "update", "patch"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: users}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := client(t, Carol).CoreV1().ConfigMaps(home).Get(ctx, "usher-config", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the tenants never got to read usher-config: %v", err)
	}

	kc, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	u, err := cluster.NewUsherProcess(bin, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--config-map", home + "/usher-config", "--kubeconfig", kc, "--access-auth=none", "--name", name}
	u.Args = base
	if err := u.Start(ctx); err != nil { // to learn its URL
		t.Fatal(err)
	}
	t.Cleanup(func() {
		u.Close()
		if t.Failed() {
			t.Logf("usher log (last 60 lines of %s):\n%s", u.LogPath, u.LogTail(60))
		}
	})
	u.Stop()
	u.Args = append(base, "--manage-webhooks", "--namespace", home, "--url", u.URL(), "--ca-bundle-file", cluster.CAFile,
		"--opt-in-label", usherNSLabel+"="+label, "--guard-config-map", home+"/usher-config")
	if err := u.Start(ctx); err != nil {
		t.Fatal(err)
	}

	warned := &warnings{}
	as := func(user string) kubernetes.Interface {
		rc, err := cluster.RESTConfig(user)
		if err != nil {
			t.Fatal(err)
		}
		rc.WarningHandler = warned
		c, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// update writes usher-config as user, the queues edited by replacing
	// old with new, and keys set.
	update := func(user string, dry bool, old, new string, keys ...string) error {
		c := as(user)
		cm, err := c.CoreV1().ConfigMaps(home).Get(ctx, "usher-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["queues.yaml"] = strings.Replace(cm.Data["queues.yaml"], old, new, 1)
		for i := 0; i+1 < len(keys); i += 2 {
			cm.Data[keys[i]] = keys[i+1]
		}
		opts := metav1.UpdateOptions{}
		if dry {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err = c.CoreV1().ConfigMaps(home).Update(ctx, cm, opts)
		return err
	}
	const prodChange = "fifo"
	deniedProd := "changes queue default/root.prod: needs admin on default/root"

	t.Run("namespace steering needs admin on the parent queue", func(t *testing.T) {
		patch := []byte(`{"metadata":{"annotations":{"yunikorn.apache.org/parentqueue":"root.prod"}}}`)
		var last error
		if err := Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) { // until usher has registered its webhooks
			_, last = as(Alice).CoreV1().Namespaces().Patch(ctx, tenant, types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return last != nil && strings.Contains(last.Error(), "may not set annotation yunikorn.apache.org/parentqueue"), nil
		}); err != nil {
			t.Fatalf("alice's move under root.prod was never refused (last: %v)", last)
		}
		_, err := as(Alice).CoreV1().Namespaces().Patch(ctx, tenant, types.MergePatchType, patch, metav1.PatchOptions{})
		wantDenied(t, "alice moving her namespace under root.prod", err, "alice may not administer root.prod")
		apply := []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"annotations":{"yunikorn.apache.org/parentqueue":"root.prod"}}}`, tenant))
		force := true
		_, err = as(Alice).CoreV1().Namespaces().Patch(ctx, tenant, types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "alice", Force: &force})
		wantDenied(t, "alice's server-side apply", err, "alice may not administer root.prod")
		// The opt-in label, dropped in the same write, does not take the Namespace out of the guard.
		drop := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null},"annotations":{"yunikorn.apache.org/parentqueue":"root.prod"}}}`, usherNSLabel))
		_, err = as(Alice).CoreV1().Namespaces().Patch(ctx, tenant, types.MergePatchType, drop, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, "alice dropping the opt-in label as she moves her namespace", err, "alice may not administer root.prod")
		if _, err := as(Carol).CoreV1().Namespaces().Patch(ctx, tenant, types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "carol", Force: &force}); err != nil {
			t.Fatalf("carol, root.prod's admin, may move it there: %v", err)
		}
	})

	t.Run("queue changes need admin on the parent", func(t *testing.T) {
		var last error
		if err := Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
			last = update(Alice, true, prodChange, "fair")
			return last != nil && strings.Contains(last.Error(), "delegatedAdministration"), nil
		}); err != nil {
			t.Fatalf("alice's change of root.prod was never refused (last: %v)", last)
		}
		wantDenied(t, "alice changing root.prod", last, `user "alice" may not make these changes`, deniedProd)
		err := as(Alice).CoreV1().ConfigMaps(home).Delete(ctx, "usher-config", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, "alice deleting the ConfigMap", err, `user "alice" may not delete the ConfigMap`)
		if err := update(Alice, false, "adminacl: alice", "adminacl: alice\n            queues: [{name: x}]"); err != nil {
			t.Fatalf("alice adding root.teama.x: %v", err)
		}
		wantDenied(t, "bob taking his own partition admin right", update(Bob, true, "adminacl: bob", "adminacl: carol"),
			"removes your own admin right on default/root")
		if err := update(Admin, false, prodChange, "fair"); err != nil {
			t.Fatalf("system:masters changing root.prod: %v", err)
		}
		if err := Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) { // the log is written behind
			log, _ := os.ReadFile(u.LogPath)
			return strings.Contains(string(log), `msg="configuration change under delegated administration" configmap=configmap/`+home+
				`/usher-config user=alice changes="[added queue default/root.teama.x]"`), nil
		}); err != nil {
			t.Errorf("usher's log lacks the change summary of alice's write")
		}
	})

	t.Run("warn admits with the reasons as a warning", func(t *testing.T) {
		if err := update(Admin, false, "", "", "admissionController.delegatedAdministration", "warn"); err != nil {
			t.Fatal(err)
		}
		var last error
		var w string
		if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			last = update(Alice, true, "fair", "fifo")
			w = warned.take()
			return last == nil && strings.Contains(w, deniedProd), nil
		}); err != nil {
			t.Fatalf("warn mode never admitted alice's change with a warning (last: %v, warnings %q)", last, w)
		}
		if err := update(Admin, false, "", "", "admissionController.delegatedAdministration", "enforce"); err != nil {
			t.Fatal(err)
		}
		if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			return update(Alice, true, "fair", "fifo") != nil, nil
		}); err != nil {
			t.Fatal("enforce never came back")
		}
	})

	t.Run("fails closed, but never for system:masters", func(t *testing.T) {
		if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) { // enforce is registered again
			v, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			return err == nil && slices.ContainsFunc(v.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
				return w.Name == "validate-config.usher.io" && *w.FailurePolicy == admissionregistrationv1.Fail
			}), nil
		}); err != nil {
			t.Fatal("validate-config.usher.io never registered with failurePolicy Fail")
		}
		u.Stop()
		var last error
		if err := Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) { // the API server's copy follows
			last = update(Alice, true, "adminacl: alice\n", "adminacl: alice\n            submitacl: alice\n")
			return last != nil && strings.Contains(last.Error(), "failed calling webhook"), nil
		}); err != nil {
			t.Fatalf("alice while usher is down: %v, want the webhook's failure", last)
		}
		if err := update(Admin, false, "fair", "fifo"); err != nil {
			t.Fatalf("system:masters while usher is down: %v", err)
		}
	})

	t.Run("registered to fail open, usher only warns", func(t *testing.T) {
		vwc, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range vwc.Webhooks {
			if vwc.Webhooks[i].Name == "validate-config.usher.io" {
				ignore := vwc.Webhooks[i].FailurePolicy
				*ignore = "Ignore"
			}
		}
		if _, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		u.Args = base // not managed: the registration stays as it is
		if err := u.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			return strings.Contains(u.LogTail(40), "does not register validate-config.usher.io with failurePolicy Fail"), nil
		}); err != nil {
			t.Errorf("usher did not say why it only warns")
		}
		warned.take()
		if err := update(Alice, true, "fifo", "fair"); err != nil {
			t.Fatalf("failing open, usher must admit with a warning: %v", err)
		}
		if w := warned.take(); !strings.Contains(w, deniedProd) {
			t.Errorf("warnings %q lack %q", w, deniedProd)
		}
	})
}
