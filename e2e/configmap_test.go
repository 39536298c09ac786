//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// shippedConfigRole is the Role deploy/rbac.yaml grants usher to read its
// ConfigMap and record Events.
func shippedConfigRole(t *testing.T) rbacv1.Role {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("deploy/rbac.yaml: %v", err)
		}
		var r rbacv1.Role
		if json.Unmarshal(raw, &r) == nil && r.Kind == "Role" {
			return r
		}
	}
	t.Fatal("deploy/rbac.yaml has no Role")
	return rbacv1.Role{}
}

// configMapManifest is usher-config in ns holding queues as queues.yaml.
func configMapManifest(ns, queues string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: usher-config\n  namespace: %s\ndata:\n  queues.yaml: |\n", ns)
	for _, l := range strings.Split(strings.TrimSuffix(queues, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return []byte(b.String())
}

// Section "configuration from the Kubernetes API": two usher processes
// (two replicas) read usher-config through the API with the shipped
// Role (nothing more), kubectl apply of a broken configuration is refused
// by the shipped validate-config webhook with usher lint's positions, a
// valid change reaches both replicas and decides within seconds, the
// warnings reach kubectl, and a broken change that gets past the webhook
// is refused by each replica with an Event saying why.
func TestUsherConfigMapWatch(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	bin, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	admin := client(t, Admin)
	label := fmt.Sprintf("c%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1))
	dir := t.TempDir()
	base := &usherEnv{t: t, dir: dir, label: label, admin: admin}
	ns := base.namespace(ctx, "cm")
	kubectl := func(stdin []byte, args ...string) (string, string, error) {
		return cluster.RunKubectl(ctx, Admin, stdin, args...)
	}
	if out, stderr, err := kubectl(configMapManifest(ns, baseConfig), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, stderr)
	}

	// usher's service account: the shipped Role in ns, and
	// system:auth-delegator (usherServiceAccount) for its callers.
	kc := usherServiceAccount(t, ctx, base, ns, dir)
	role := shippedConfigRole(t)
	role.Namespace, role.ResourceVersion = ns, ""
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "usher", Namespace: ns}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's authorizer learns of the binding from its own
	// watch: wait until the service account may read the ConfigMap.
	sa, err := cluster.ClientAs(Admin, "system:serviceaccount:"+ns+":usher", "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := sa.CoreV1().ConfigMaps(ns).Get(ctx, "usher-config", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("usher's service account never got to read usher-config: %v", err)
	}

	// Two replicas.
	var envs []*usherEnv
	for i := 1; i <= 2; i++ {
		d := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		u, err := cluster.NewUsherProcess(bin, d, "")
		if err != nil {
			t.Fatal(err)
		}
		u.Args = []string{"--config-map", ns + "/usher-config", "--kubeconfig", kc}
		u.Env = []string{fmt.Sprintf("POD_NAME=usher-replica-%d", i)}
		if err := u.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			u.Close()
			if t.Failed() {
				t.Logf("usher replica %d log (last 40 lines of %s):\n%s", i, u.LogPath, u.LogTail(40))
			}
		})
		envs = append(envs, &usherEnv{t: t, u: u, dir: d, label: label, admin: admin})
	}
	// Workloads are reviewed by both: a request passes only when both
	// replicas admit it.
	envs[0].register(ctx, ns)
	envs[1].registerValidating(ctx, "usher-validate-2", WorkloadRules, nil)

	asAlice := map[string]string{UserInfoAnnotation: UserInfoJSON(Alice, aliceGroups...)}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	bob := client(t, Bob)
	forgeBob := func() error {
		_, err := bob.CoreV1().Pods(ns).Create(ctx, Pod(ns, "for-alice", asAlice), dry)
		return err
	}
	wantDenied(t, "bob submitting for alice (externalUsers ^ext$)", forgeBob(), `user "bob" may not set annotation`)

	// The ConfigMap's webhook as deploy/webhooks.yaml registers it (its
	// rules, matchConditions and failurePolicy), on replica 1.
	shipped := shippedWebhook(t, "validate-config.usher.io")
	unConfig, err := RegisterValidatingWebhook(ctx, admin, Webhook{
		Name: "usher-config-" + label, URL: envs[0].u.URL() + "/validate-config", CABundle: envs[0].u.Cert.CABundle,
		FailurePolicy: *shipped.FailurePolicy, Rules: shipped.Rules, MatchConditions: shipped.MatchConditions,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{usherNSLabel: label}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		unConfig(ctx)
	})

	const trustBob = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: %q
admissionController:
  accessControl:
    externalUsers: "^bob$"
`
	broken := fmt.Sprintf(trustBob, "u1  g1")
	wantPos := regexp.MustCompile(regexp.QuoteMeta("configmap/"+ns+"/usher-config/queues.yaml:") + `5:\d+: submitacl "u1  g1": more than one space`)
	current := func() *corev1.ConfigMap {
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "usher-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	before := current()

	t.Run("kubectl apply of a broken configuration is refused with positions", func(t *testing.T) {
		var stderr string
		err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			var err error
			_, stderr, err = kubectl(configMapManifest(ns, broken), "apply", "-f", "-")
			return err != nil && wantPos.MatchString(stderr), nil
		})
		if err != nil {
			t.Fatalf("kubectl apply of a broken configuration: want it refused at %s, kubectl said: %s", wantPos, stderr)
		}
		t.Logf("kubectl apply (broken):\n%s", stderr)
		if got := current(); got.ResourceVersion != before.ResourceVersion {
			t.Errorf("the refused ConfigMap was stored (resourceVersion %s → %s)", before.ResourceVersion, got.ResourceVersion)
		}
	})

	t.Run("a valid change reaches both replicas and decides within seconds", func(t *testing.T) {
		// A partition without a name: valid, with a lint warning kubectl
		// prints.
		valid := strings.Replace(fmt.Sprintf(trustBob, "*"), "  - name: default\n    queues:", "  - queues:", 1)
		start := time.Now()
		_, stderr, err := kubectl(configMapManifest(ns, valid), "apply", "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply (valid): %v: %s", err, stderr)
		}
		want := "Warning: configmap/" + ns + "/usher-config/queues.yaml:2:5: warning: partition without a name"
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl did not show the lint warning %q: %q", want, stderr)
		}
		rv := current().ResourceVersion
		gen := "configmap/" + ns + "/usher-config@" + rv
		for i, e := range envs {
			err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
				body, _, err := e.u.Get(ctx, "/readyz")
				return err == nil && strings.Contains(body, "generation: "+gen), nil
			})
			if err != nil {
				body, _, _ := e.u.Get(ctx, "/readyz")
				t.Fatalf("replica %d never served %s: /readyz %q", i+1, gen, body)
			}
		}
		var last error
		if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			last = forgeBob()
			return last == nil, nil
		}); err != nil {
			t.Fatalf("bob submitting for alice after externalUsers became ^bob$: %v", last)
		}
		t.Logf("from kubectl apply to both replicas deciding with the change: %v", time.Since(start).Round(time.Millisecond))
		// Each replica says on the ConfigMap which generation it serves.
		for i := 1; i <= 2; i++ {
			wantConfigEvent(ctx, t, ns, "ConfigLoaded", fmt.Sprintf("usher-replica-%d", i), gen)
		}
	})

	t.Run("a broken change past the webhook is refused by every replica, with an Event", func(t *testing.T) {
		if err := unConfig(ctx); err != nil {
			t.Fatal(err)
		}
		served := current().ResourceVersion
		if out, stderr, err := kubectl(configMapManifest(ns, broken), "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply without the webhook: %v\n%s%s", err, out, stderr)
		}
		rv := current().ResourceVersion
		for i, e := range envs {
			ev := wantConfigEvent(ctx, t, ns, "ConfigRefused", fmt.Sprintf("usher-replica-%d", i+1), "@"+rv)
			if !wantPos.MatchString(ev.Message) || !strings.Contains(ev.Message, "keeps serving configmap/"+ns+"/usher-config@"+served) {
				t.Errorf("replica %d's Event %q: want the refused change's position and the generation kept", i+1, ev.Message)
			}
			body, _, _ := e.u.Get(ctx, "/readyz")
			if !strings.Contains(body, "configuration reload failed") || !strings.Contains(body, "@"+rv+" refused") ||
				!strings.Contains(body, "generation: configmap/"+ns+"/usher-config@"+served) || strings.Contains(body, "more than one space") {
				t.Errorf("replica %d /readyz: %q", i+1, body)
			}
		}
		if err := forgeBob(); err != nil {
			t.Errorf("the last good configuration must keep deciding: %v", err)
		}
	})
}

// wantConfigEvent waits for an Event of reason on usher-config in ns, recorded
// by instance, whose message contains want, and returns it.
func wantConfigEvent(ctx context.Context, t *testing.T, ns, reason, instance, want string) corev1.Event {
	t.Helper()
	admin := client(t, Admin)
	sel := fields.Set{"involvedObject.name": "usher-config", "reason": reason}.String()
	var seen []string
	var found corev1.Event
	err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		l, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, ev := range l.Items {
			seen = append(seen, ev.ReportingInstance+": "+ev.Message)
			if ev.ReportingInstance == instance && strings.Contains(ev.Message, want) {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s Event from %s containing %q; Events: %q", reason, instance, want, seen)
	}
	t.Logf("Event %s %s: %s", found.Type, found.Reason, found.Message)
	return found
}

// YuniKorn's two ConfigMaps read in place: service.policyGroup in
// yunikorn-defaults names the key, yunikorn-configs' value of that key wins
// over yunikorn-defaults', and a change of either is in service within
// seconds.
func TestUsherYuniKornConfigMaps(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	bin, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	admin := client(t, Admin)
	kc, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	label := fmt.Sprintf("y%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1))
	dir := t.TempDir()
	e := &usherEnv{t: t, dir: dir, label: label, admin: admin}
	ns := e.namespace(ctx, "yk")
	queues := func(external string) string {
		return fmt.Sprintf("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\nadmissionController:\n  accessControl:\n    externalUsers: %q\n", external)
	}
	put := func(name string, data map[string]string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
		if old, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			cm.ResourceVersion = old.ResourceVersion
			_, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The defaults trust ext in batch.yaml; queues.yaml (ignored: the
	// policy group is batch) would trust everyone.
	put("yunikorn-defaults", map[string]string{"service.policyGroup": "batch", "batch.yaml": queues("^ext$"), "queues.yaml": queues(".*")})
	put("yunikorn-configs", map[string]string{"log.level": "INFO"})

	u, err := cluster.NewUsherProcess(bin, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// Given in the other order: yunikorn-defaults is merged first anyway.
	u.Args = []string{"--config-map", ns + "/yunikorn-configs," + ns + "/yunikorn-defaults", "--kubeconfig", kc, "--access-auth", "none"}
	if err := u.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		u.Close()
		if t.Failed() {
			t.Logf("usher log (last 40 lines of %s):\n%s", u.LogPath, u.LogTail(40))
		}
	})
	e.u = u
	e.register(ctx, ns)

	asAlice := map[string]string{UserInfoAnnotation: UserInfoJSON(Alice, aliceGroups...)}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	forge := func(user string) error {
		_, err := client(t, user).CoreV1().Pods(ns).Create(ctx, Pod(ns, "for-alice", asAlice), dry)
		return err
	}
	if err := forge(Ext); err != nil {
		t.Errorf("ext, trusted by yunikorn-defaults' batch.yaml: %v", err)
	}
	wantDenied(t, "bob (queues.yaml is not the policy group)", forge(Bob), `user "bob" may not set annotation`)

	// yunikorn-configs' batch.yaml wins.
	put("yunikorn-configs", map[string]string{"batch.yaml": queues("^bob$")})
	var last error
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		last = forge(Bob)
		return last == nil, nil
	}); err != nil {
		t.Fatalf("bob after yunikorn-configs trusted him: %v", last)
	}
	wantDenied(t, "ext after yunikorn-configs' batch.yaml replaced the defaults'", forge(Ext), `user "ext" may not set annotation`)
	body, _, _ := u.Get(ctx, "/readyz")
	if !strings.Contains(body, "configmap/"+ns+"/yunikorn-defaults@") || !strings.Contains(body, ",configmap/"+ns+"/yunikorn-configs@") {
		t.Errorf("/readyz must name both ConfigMaps, defaults first: %q", body)
	}
	t.Logf("/readyz: %s", strings.TrimSpace(body))
}
