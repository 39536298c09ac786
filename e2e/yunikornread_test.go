//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// YuniKorn's ConfigMap stays readable by YuniKorn, through a real API
// server: the shipped validate-config webhook, registered for YuniKorn's
// ConfigMaps as docs/configuration-sources.md says, refuses at kubectl
// apply a queues.yaml holding usher's keys (YuniKorn's strict decoder
// would refuse it whole), admits the same settings in the usher.yaml key,
// which usher serves, and admits a service.policyGroup naming a missing
// key with a warning, after which usher serves YuniKorn's default
// configuration and says so on /readyz; with enforceQueueACLs on, such a
// ConfigMap is refused.
func TestYuniKornConfigMapStaysReadable(t *testing.T) {
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
	label := fmt.Sprintf("r%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1))
	dir := t.TempDir()
	e := &usherEnv{t: t, dir: dir, label: label, admin: admin}
	ns := e.namespace(ctx, "ykr")
	manifest := func(data string) []byte {
		return []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yunikorn-configs\n  namespace: %s\ndata:\n%s", ns, data))
	}
	kubectl := func(data string) (string, error) {
		_, stderr, err := cluster.RunKubectl(ctx, Admin, manifest(data), "apply", "-f", "-")
		return stderr, err
	}
	queues := "  queues.yaml: |\n    partitions:\n      - name: default\n        queues:\n          - name: root\n            submitacl: \"*\"\n"
	if stderr, err := kubectl(queues); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, stderr)
	}

	u, err := cluster.NewUsherProcess(bin, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	u.Args = []string{"--config-map", ns + "/yunikorn-configs", "--kubeconfig", kc, "--access-auth", "none"}
	if err := u.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		u.Stop()
		if t.Failed() {
			t.Logf("usher log (last 40 lines of %s):\n%s", u.LogPath, u.LogTail(40))
		}
	})
	shipped := shippedWebhook(t, "validate-config.usher.io")
	unregister, err := RegisterValidatingWebhook(ctx, admin, Webhook{
		Name: "yunikorn-config-" + label, URL: u.URL() + "/validate-config", CABundle: u.Cert.CABundle,
		FailurePolicy: *shipped.FailurePolicy, Rules: shipped.Rules,
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "yunikorn-configmaps",
			Expression: "object.metadata.name in ['yunikorn-defaults', 'yunikorn-configs']"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{usherNSLabel: label}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		unregister(ctx)
	})
	readyz := func(want string) {
		t.Helper()
		var body string
		if err := Eventually(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
			body, _, _ = u.Get(ctx, "/readyz")
			return strings.Contains(body, want), nil
		}); err != nil {
			t.Fatalf("/readyz never said %q: %q", want, body)
		}
	}

	// usher's key in queues.yaml: refused at its position.
	want := "configmap/" + ns + "/yunikorn-configs/queues.yaml:3:5: YuniKorn's scheduler does not know the key \"groups\" here and refuses the whole file"
	var stderr string
	if err := Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		stderr, err = kubectl(strings.Replace(queues, "        queues:", "        groups: merge\n        queues:", 1))
		return err != nil && strings.Contains(stderr, want), nil
	}); err != nil {
		t.Fatalf("kubectl apply of usher's key in queues.yaml: want %q, kubectl said: %s", want, stderr)
	}
	t.Logf("kubectl apply (usher's key in queues.yaml):\n%s", stderr)

	// The same setting in usher.yaml: admitted and served.
	withUsher := queues + "  usher.yaml: |\n    partitions: [{name: default, groups: merge}]\n"
	if stderr, err := kubectl(withUsher); err != nil {
		t.Fatalf("kubectl apply with usher.yaml: %v: %s", err, stderr)
	}
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "yunikorn-configs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	readyz("generation: configmap/" + ns + "/yunikorn-configs@" + cm.ResourceVersion)

	// A policy group whose key is missing: admitted with a warning;
	// usher serves YuniKorn's default configuration.
	missing := "  service.policyGroup: batch\n" + withUsher
	stderr, err = kubectl(missing)
	if err != nil || !strings.Contains(stderr, `service.policyGroup is "batch", but the ConfigMap has no batch.yaml key`) {
		t.Fatalf("kubectl apply of a missing policy group: %v: %s", err, stderr)
	}
	readyz(`default: service.policyGroup names "batch", whose key the ConfigMap lacks: serving YuniKorn's default configuration`)

	// With queue ACLs enforced, refused.
	if stderr, err := kubectl("  admissionController.enforceQueueACLs: \"true\"\n" + missing); err == nil ||
		!strings.Contains(stderr, "usher refuses it while enforceQueueACLs or enforceDeleteACLs is on") {
		t.Fatalf("kubectl apply of a missing policy group with enforceQueueACLs: %v: %s", err, stderr)
	}
}
