//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// helmPath builds (once, cached) or finds the pinned helm of hack/helm.sh.
// A cold build takes about ten minutes on two busy cores; the tests that
// call it run in parallel and share one build (hack/helm.sh holds a lock).
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
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
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
	// YuniKorn's ConfigMaps, read in place: the Role goes to their namespace.
	yunikorn, err := cluster.NewNamespace(ctx, "chart-yunikorn", nil)
	if err != nil {
		t.Fatal(err)
	}
	sets := []struct {
		name string
		args []string
	}{
		{"defaults but the cert-manager objects", nil},
		{"self-generated CA", noCRDs},
		{"inline configuration in warn mode", append(noCRDs, "--set", "config.mode=warn", "--set", "config.enforceQueueACLs=true",
			"--set", "config.bypassNamespaces={^kube-system$,^monitoring$}", "--set-string",
			"config.queues=partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n          - name: ml\n            submitacl: \" ml\"\n")},
		{"mounted file, Grafana dashboard", append(noCRDs, "--set", "config.source=file", "--set", "monitoring.dashboard.enabled=true")},
		{"opt-in namespaces", append(noCRDs, "--set", "webhook.scope=optIn", "--set", "webhook.matchConditions[0].name=not-kubelet",
			"--set", "webhook.matchConditions[0].expression=!request.userInfo.username.startsWith('system:node:')")},
		{"NetworkPolicy and PodDisruptionBudget", append(noCRDs, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.egress.enabled=true",
			"--set", "podDisruptionBudget.enabled=true", "--set", "replicas=3", "--set", "podDisruptionBudget.minAvailable=2")},
		{"YuniKorn's ConfigMaps", append(noCRDs, "--set", "config.existingConfigMaps={"+yunikorn+"/yunikorn-defaults,"+yunikorn+"/yunikorn-configs}")},
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

	// The dry run checks what helm cannot: a CEL condition that does not
	// compile renders, and the API server refuses it.
	t.Run("a broken matchCondition is refused", func(t *testing.T) {
		ns, err := cluster.NewNamespace(ctx, "chart", nil)
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"template", "usher", chart, "--namespace", ns, "--show-only", "templates/webhooks.yaml",
			"--set", "webhook.matchConditions[0].name=broken", "--set", "webhook.matchConditions[0].expression=request.userInfo.username.startsWith("}, noCRDs...)
		rendered, err := exec.CommandContext(ctx, helm, args...).Output()
		if err != nil {
			t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
		}
		_, errOut, err := cluster.RunKubectl(ctx, Admin, rendered, "apply", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(errOut, "compilation failed") {
			t.Fatalf("the API server accepted a matchCondition that does not compile: %v\n%s", err, errOut)
		}
		t.Logf("kubectl apply --dry-run=server:\n%s", errOut)
	})
}

// TestChartSelfGeneratedCA: with certificates.mode helm, an upgrade keeps
// the certificate helm generated at install (read back from the cluster
// with lookup, as `helm upgrade` and `helm template --dry-run=server` do),
// and a renewal trusts the previous CA beside the new one in the caBundle,
// so that the replicas still serving the old certificate until the kubelet
// syncs the Secret keep answering.
func TestChartSelfGeneratedCA(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := helmPath(ctx, t, root)
	chart := filepath.Join(root, "deploy", "chart", "usher")
	kubeconfig, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cluster.NewNamespace(ctx, "chart-ca", nil)
	if err != nil {
		t.Fatal(err)
	}
	render := func(args ...string) (*corev1.Secret, []byte) {
		t.Helper()
		args = append([]string{"template", "usher", chart, "--namespace", ns, "--kubeconfig", kubeconfig, "--dry-run=server",
			"--set", "certificates.mode=helm", "--show-only", "templates/webhooks.yaml"}, args...)
		out, err := exec.CommandContext(ctx, helm, args...).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
			}
			t.Fatal(err)
		}
		var secret *corev1.Secret
		var bundle []byte
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			var head struct{ Kind string }
			json.Unmarshal(raw, &head)
			switch head.Kind {
			case "Secret":
				secret = &corev1.Secret{}
				json.Unmarshal(raw, secret)
			case "ValidatingWebhookConfiguration":
				var w admissionregistrationv1.ValidatingWebhookConfiguration
				json.Unmarshal(raw, &w)
				bundle = w.Webhooks[0].ClientConfig.CABundle
			}
		}
		if secret == nil || len(bundle) == 0 {
			t.Fatalf("helm %s: no Secret or no caBundle", strings.Join(args, " "))
		}
		if !bytes.Equal(secret.Data["ca.crt"], bundle) {
			t.Error("the caBundle is not the Secret's ca.crt")
		}
		return secret, bundle
	}
	verifies := func(crt, bundle []byte) error {
		b, _ := pem.Decode(crt)
		if b == nil {
			return errors.New("no PEM certificate")
		}
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(bundle)
		_, err = leaf.Verify(x509.VerifyOptions{DNSName: "usher." + ns + ".svc", Roots: roots})
		return err
	}

	installed, bundle := render()
	if err := verifies(installed.Data["tls.crt"], bundle); err != nil {
		t.Fatalf("install: %v", err)
	}
	// What helm install would have created.
	installed.Namespace = ns
	manifest, _ := json.Marshal(installed)
	if out, errOut, err := cluster.RunKubectl(ctx, Admin, manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the Secret: %v\n%s%s", err, out, errOut)
	}

	upgraded, upBundle := render()
	if !bytes.Equal(upgraded.Data["tls.crt"], installed.Data["tls.crt"]) || !bytes.Equal(upgraded.Data["tls.key"], installed.Data["tls.key"]) ||
		!bytes.Equal(upBundle, bundle) {
		t.Error("an upgrade re-issued a certificate that is far from expiry")
	}

	// renewDays beyond the validity: the certificate is due.
	renewed, newBundle := render("--set", "certificates.helm.renewDays=4000")
	if bytes.Equal(renewed.Data["tls.crt"], installed.Data["tls.crt"]) {
		t.Fatal("a certificate due for renewal was kept")
	}
	if err := verifies(renewed.Data["tls.crt"], newBundle); err != nil {
		t.Errorf("renewed certificate against the new caBundle: %v", err)
	}
	if err := verifies(installed.Data["tls.crt"], newBundle); err != nil {
		t.Errorf("the certificate replicas serve until the kubelet syncs the Secret, against the new caBundle: %v", err)
	}
	if n := bytes.Count(newBundle, []byte("BEGIN CERTIFICATE")); n != 2 {
		t.Errorf("the renewed caBundle holds %d certificates, want the new CA and the previous one", n)
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
