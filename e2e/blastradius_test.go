//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/admission/settings"
)

// blastConfig bypasses the namespaces starting with blast-off- (and
// kube-system): usher allows their objects unchanged, and the
// usher-namespaces matchCondition generated from it keeps the API server
// from calling usher there at all.
const blastConfig = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
admissionController:
  bypassNamespaces: ["^kube-system$", "^blast-off-"]
`

// reviewsTotal sums usher_admission_reviews_total over its labels: every
// AdmissionReview usher answered.
func reviewsTotal(ctx context.Context, t *testing.T, u *UsherProcess) float64 {
	t.Helper()
	body, code, err := u.Get(ctx, "/metrics")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "usher_admission_reviews_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// TestBypassedNamespaceNeverReachesUsher: usher's webhooks registered, as
// deploy/webhooks.yaml registers them, with the usher-namespaces
// matchCondition generated from usher's own bypassNamespaces. Both
// namespaces match the namespaceSelector; only the condition tells them
// apart. Workloads created in the bypassed namespace leave usher's review
// counter flat (the API server never sent them), those in the processed
// namespace raise it; and with usher stopped, the bypassed namespace
// still admits while the processed one fails closed.
func TestBypassedNamespaceNeverReachesUsher(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	e := startUsherWith(t, ctx, blastConfig, "--access-auth=none")
	on := e.namespace(ctx, "blast-on")
	off := e.namespace(ctx, "blast-off")

	bypass := settings.Config{BypassNamespaces: settings.Patterns{"^kube-system$", "^blast-off-"}}
	mcs := []admissionregistrationv1.MatchCondition{{Name: settings.NamespaceConditionName, Expression: settings.NamespaceCondition(bypass)}}
	t.Logf("matchCondition %s: %s", settings.NamespaceConditionName, mcs[0].Expression)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{usherNSLabel: e.label}}
	unV, err := RegisterValidatingWebhook(ctx, e.admin, Webhook{
		Name: "blast-validate-" + e.label, URL: e.u.URL() + "/validate", CABundle: e.u.Cert.CABundle,
		Rules: WorkloadRules, NamespaceSelector: sel, MatchConditions: mcs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unregister(t, unV) })
	unM, err := RegisterMutatingWebhook(ctx, e.admin, Webhook{
		Name: "blast-mutate-" + e.label, URL: e.u.URL() + "/mutate", CABundle: e.u.Cert.CABundle,
		Rules: createOnly(WorkloadRules), NamespaceSelector: sel, MatchConditions: mcs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unregister(t, unM) })

	alice := client(t, Alice)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// Wait until the mutating webhook stamps alice's pods in the
	// processed namespace.
	var last error
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := alice.CoreV1().Pods(on).Create(ctx, Pod(on, "probe", nil), dry)
		last = err
		if err != nil {
			return false, nil
		}
		info, ok, _ := UserInfo(p.Annotations)
		return ok && info.User == Alice, nil
	}); err != nil {
		t.Fatalf("usher's webhooks never took effect in %s (last: %v): %v", on, last, err)
	}

	// A forged user.info in the bypassed namespace: usher would refuse
	// it, but is never asked.
	forged := map[string]string{UserInfoAnnotation: `{"user":"mallory","groups":["admins"]}`}
	before := reviewsTotal(ctx, t, e.u)
	for i := range 3 {
		p, err := alice.CoreV1().Pods(off).Create(ctx, Pod(off, fmt.Sprintf("off-%d", i), forged), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("pod in the bypassed namespace %s: %v", off, err)
		}
		if p.Annotations[UserInfoAnnotation] != forged[UserInfoAnnotation] {
			t.Errorf("pod in the bypassed namespace was changed: %v", p.Annotations)
		}
	}
	if _, err := alice.AppsV1().Deployments(off).Create(ctx, Deployment(off, "off", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("deployment in the bypassed namespace: %v", err)
	}
	if after := reviewsTotal(ctx, t, e.u); after != before {
		t.Errorf("usher_admission_reviews_total went from %v to %v on requests in the bypassed namespace %s: the API server called usher", before, after, off)
	}

	// The processed namespace: usher is called (the counter moves) and the
	// forged annotation is refused.
	_, err = alice.CoreV1().Pods(on).Create(ctx, Pod(on, "forged", forged), metav1.CreateOptions{})
	wantDenied(t, "forged user.info in the processed namespace", err)
	if _, err := alice.CoreV1().Pods(on).Create(ctx, Pod(on, "on-0", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod in the processed namespace: %v", err)
	}
	if after := reviewsTotal(ctx, t, e.u); after < before+3 {
		t.Errorf("usher_admission_reviews_total %v after 2 creates in %s (mutate and validate each), was %v: the counter does not count", after, on, before)
	}

	// usher's outage: the bypassed namespace keeps admitting, the
	// processed one fails closed.
	e.u.Stop()
	if _, err := alice.CoreV1().Pods(off).Create(ctx, Pod(off, "during-outage", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("usher stopped: a pod in the bypassed namespace was refused: %v", err)
	}
	if _, err := alice.CoreV1().Pods(on).Create(ctx, Pod(on, "during-outage", nil), metav1.CreateOptions{}); err == nil {
		t.Errorf("usher stopped: a pod in the processed namespace was admitted; the webhook must fail closed")
	} else {
		t.Logf("usher stopped, processed namespace: %v", err)
	}
}

func unregister(t *testing.T, un func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := un(ctx); err != nil {
		t.Error(err)
	}
}
