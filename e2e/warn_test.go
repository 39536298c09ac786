//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// warnConfig checks queues in warn mode: alice may submit to root.mine
// only; root.restricted is bob's. There is no root.default, so YuniKorn's
// placement cannot fall back to it: a pod alice labels root.restricted is
// rejected by placement, which warn mode turns into a warning.
const warnConfig = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: mine
            submitacl: "alice"
          - name: restricted
            submitacl: "bob"
admissionController:
  enforceQueueACLs: true
  enforceQueueACLsMode: warn
`

// TestWarnModeKubectlWarning: with enforceQueueACLsMode warn, alice's pod
// for a queue she may not use is created, stamped with her identity, and
// kubectl prints usher's refusal as a warning; a pod for her own queue
// draws no warning. A forged user.info is still refused.
func TestWarnModeKubectlWarning(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	_, ns := setup(t, ctx, warnConfig, "warn")
	const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: NAME
  labels:
    queue: QUEUE
spec:
  containers:
    - name: main
      image: IMAGE
`
	pod := func(name, queue string) []byte {
		return []byte(strings.NewReplacer("NAME", name, "QUEUE", queue, "IMAGE", Image).Replace(manifest))
	}
	out, stderr, err := cluster.RunKubectl(ctx, Alice, pod("warned", "root.restricted"), "-n", ns, "create", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl create in warn mode: %v\n%s%s", err, out, stderr)
	}
	t.Logf("kubectl: %s%s", out, stderr)
	for _, want := range []string{`Warning: usher: `, `"root.restricted"`, Alice} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl stderr %q, want a warning containing %q", stderr, want)
		}
	}
	p, err := client(t, Admin).CoreV1().Pods(ns).Get(ctx, "warned", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIdentity(t, "the warned pod", p.Annotations, Alice)

	_, stderr, err = cluster.RunKubectl(ctx, Alice, pod("fine", "root.mine"), "-n", ns, "create", "-f", "-")
	if err != nil || strings.Contains(stderr, "Warning:") {
		t.Errorf("pod for alice's own queue: err %v, stderr %q, want created without a warning", err, stderr)
	}

	forged := Pod(ns, "forged", map[string]string{UserInfoAnnotation: `{"user":"bob","groups":["system:authenticated"]}`})
	_, err = client(t, Alice).CoreV1().Pods(ns).Create(ctx, forged, metav1.CreateOptions{})
	wantDenied(t, "a forged user.info in warn mode", err)
}
