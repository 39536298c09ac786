//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// forgedReview is an AdmissionReview nobody sent through the API server:
// a pod in ns named name (also its uid), created by mallory.
func forgedReview(ns, name string) string {
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%[2]q,
  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
  "name":%[2]q,"namespace":%[1]q,"operation":"CREATE","userInfo":{"username":"mallory","groups":["system:authenticated"]},
  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":%[2]q,"namespace":%[1]q},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, ns, name)
}

// TestUsherAnswersOnlyTheAPIServer: usher as the suite runs it
// (--webhook-auth client-cert with the cluster's webhook client CA) stamps
// the pods created through the API server, which presents its client
// certificate (the AdmissionConfiguration of hack/e2e-cluster.sh); a
// review forged and sent to usher directly gets 401 on every webhook
// path, and the same review with the API server's certificate is
// answered. The metrics and the audit records tell the callers apart.
func TestUsherAnswersOnlyTheAPIServer(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	e := startUsherWith(t, ctx, baseConfig, "--access-auth", "none")
	ns := e.namespace(ctx, "callers")
	e.register(ctx, ns)

	p, err := client(t, Alice).CoreV1().Pods(ns).Create(ctx, Pod(ns, "alice-pod", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("alice creating a pod through the API server: %v", err)
	}
	wantIdentity(t, "alice's pod", p.Annotations, Alice, aliceGroups...)

	for _, path := range []string{"/mutate", "/validate", "/validate-config"} {
		body, code, err := e.u.Do(ctx, http.MethodPost, path, "", forgedReview(ns, "forged"))
		if err != nil || code != http.StatusUnauthorized || !strings.Contains(body, "only the API server may call "+path) {
			t.Errorf("forged review to %s without a client certificate: %d %s %v, want 401", path, code, body, err)
		}
	}

	cert, err := tls.LoadX509KeyPair(cluster.WebhookClientCertFile, cluster.WebhookClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	tr := e.u.https.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	apiserver := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	defer tr.CloseIdleConnections()
	resp, err := apiserver.Post(e.u.URL()+"/mutate", "application/json", strings.NewReader(forgedReview(ns, "signed")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"allowed":true`) {
		t.Fatalf("the review with the API server's client certificate: %d %s, want it answered", resp.StatusCode, b)
	}

	metrics, code, err := e.u.Get(ctx, "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	for _, sample := range []string{`usher_webhook_callers_total{handler="mutate",result="refused"} 1`,
		`usher_webhook_callers_total{handler="validate",result="refused"} 1`, `usher_webhook_auth_mode{mode="client-cert"} 1`} {
		if !strings.Contains(metrics, sample) {
			t.Errorf("/metrics has no %s", sample)
		}
	}
	if !strings.Contains(metrics, `usher_webhook_callers_total{handler="mutate",result="verified"}`) {
		t.Errorf("/metrics counts no verified caller of /mutate")
	}
	// Audit records are written in batches: wait for the signed review's.
	err = Eventually(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return strings.Contains(e.u.LogTail(400), "caller=verified uid=signed"), nil
	})
	if log := e.u.LogTail(400); err != nil || strings.Contains(log, "uid=forged ") {
		t.Errorf("the audit records do not say the signed review was verified (%v), or record a refused one:\n%s", err, log)
	}
}
