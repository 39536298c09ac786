//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helmPath builds (once, cached) or finds the pinned helm of hack/helm.sh.
func helmPath(ctx context.Context, t *testing.T, root string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "helm.sh"))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/helm.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

// TestChart lints the Helm chart (deploy/chart/usher) strictly and sends
// what it renders, with its defaults and with other value sets, to the API
// server as admin in a server-side dry run: every object must pass the API
// server's validation and admission (schemas, CEL matchConditions compiled
// by the API server, selectors, quotas), not only helm's templates. The
// cluster has no cert-manager or Prometheus operator CRDs, so those objects
// are switched off here (deploy/chart_test.go checks they render when on).
// Each value set renders into a namespace of its own; the cluster-scoped
// objects (webhook configurations, ClusterRoles) only pass the dry run and
// are never created.
func TestChart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := helmPath(ctx, t, root)
	chart := filepath.Join(root, "deploy", "chart", "usher")

	lint := exec.CommandContext(ctx, helm, "lint", "--strict", chart)
	if out, err := lint.CombinedOutput(); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	} else {
		t.Logf("helm lint --strict %s:\n%s", chart, out)
	}

	// The cert-manager objects and the ServiceMonitor are the kinds this
	// cluster lacks; every set but the first renders without them.
	noCRDs := []string{"--set", "certificates.mode=helm"}
	sets := []struct {
		name string
		args []string
	}{
		{"defaults but the cert-manager objects", nil},
		{"self-generated CA", noCRDs},
		{"inline configuration in warn mode", append(noCRDs, "--set", "config.mode=warn", "--set", "config.enforceQueueACLs=true",
			"--set", "config.bypassNamespaces={^kube-system$,^monitoring$}", "--set-string",
			"config.queues=partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n          - name: ml\n            submitacl: \" ml\"\n")},
		{"mounted file", append(noCRDs, "--set", "config.source=file")},
		{"opt-in namespaces", append(noCRDs, "--set", "webhook.scope=optIn", "--set", "webhook.matchConditions[0].name=not-kubelet",
			"--set", "webhook.matchConditions[0].expression=!request.userInfo.username.startsWith('system:node:')")},
		{"NetworkPolicy and PodDisruptionBudget", append(noCRDs, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.egress.enabled=true",
			"--set", "podDisruptionBudget.enabled=true", "--set", "replicas=3", "--set", "podDisruptionBudget.minAvailable=2")},
		{"your own Secret", []string{"--set", "certificates.mode=secret", "--set", "certificates.existingSecret=my-tls",
			"--set-file", "certificates.caBundle=" + cluster.CAFile}},
	}
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			ns, err := cluster.NewNamespace(ctx, "chart", nil)
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"template", "usher", chart, "--namespace", ns}, s.args...)
			tmpl := exec.CommandContext(ctx, helm, args...)
			var rendered, stderr bytes.Buffer
			tmpl.Stdout, tmpl.Stderr = &rendered, &stderr
			if err := tmpl.Run(); err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			docs := withoutKinds(rendered.String(), "cert-manager.io/v1")
			if s.args != nil && docs != rendered.String() {
				t.Fatalf("helm %s renders cert-manager objects", strings.Join(args, " "))
			}
			if strings.Contains(docs, "cert-manager.io/v1") || strings.Contains(rendered.String(), "monitoring.coreos.com") {
				t.Fatalf("helm %s renders kinds this cluster has no CRDs for", strings.Join(args, " "))
			}
			out, errOut, err := cluster.RunKubectl(ctx, Admin, []byte(docs), "apply", "--dry-run=server", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server of helm %s: %v\n%s%s", strings.Join(args[1:], " "), err, out, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, l := range lines {
				if !strings.HasSuffix(l, "(server dry run)") {
					t.Errorf("kubectl: %q", l)
				}
			}
			if len(lines) < 10 {
				t.Errorf("only %d objects passed the dry run:\n%s", len(lines), out)
			}
			t.Logf("%s:\n%s", s.name, out)
		})
	}
}

// withoutKinds drops from a multi-document YAML stream the documents of
// apiVersion (the cert-manager objects of the default values).
func withoutKinds(stream, apiVersion string) string {
	var keep []string
	for _, doc := range strings.Split(stream, "\n---\n") {
		if !strings.Contains(doc, "\napiVersion: "+apiVersion+"\n") {
			keep = append(keep, doc)
		}
	}
	return strings.Join(keep, "\n---\n")
}
