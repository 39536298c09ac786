//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// placedConfig places with the provided rule, then a tag rule on the
// namespace under root.tenants: alice may submit to root.tenants (and so
// to the queue the tag rule creates for her namespace), not to root.ops.
const placedConfig = `partitions:
  - name: default
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: root.tenants
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: ops
            submitacl: bob
          - name: tenants
            parent: true
            submitacl: alice
admissionController:
  enforceQueueACLs: true
`

// TestPlacedElsewhereWarning: alice labels a pod queue=root.ops, where
// she may not submit; YuniKorn's placement falls through to the tag rule
// and puts it in root.tenants.<namespace>. The pod is admitted, kubectl
// prints usher's warning naming root.ops and the queue chosen, and usher's
// audit record carries both (queue, queueAsked). A pod labelled for the
// queue it gets draws no warning.
func TestPlacedElsewhereWarning(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	e, ns := setup(t, ctx, placedConfig, "placed")
	chosen := "root.tenants." + ns
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
	out, stderr, err := cluster.RunKubectl(ctx, Alice, pod("elsewhere", "root.ops"), "-n", ns, "create", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl create: %v\n%s%s", err, out, stderr)
	}
	t.Logf("kubectl: %s%s", out, stderr)
	for _, want := range []string{`Warning: usher: label queue="root.ops" on the pod asks for queue "root.ops"`, fmt.Sprintf("in queue %q", chosen),
		"alice may not submit to root.ops"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl stderr %q, want a warning containing %q", stderr, want)
		}
	}
	var rec auditRecord
	err = Eventually(ctx, 15*time.Second, func(context.Context) (bool, error) {
		for _, r := range e.auditRecords() {
			if r["operation"] == "CREATE" && r["namespace"] == ns && r["name"] == "elsewhere" && r["dryRun"] != "true" {
				rec = r
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil || rec["allowed"] != "true" || rec["queue"] != chosen || rec["queueAsked"] != "root.ops" {
		t.Errorf("usher's record %v (%v): want allowed, queue %s, queueAsked root.ops", rec, err, chosen)
	}

	out, stderr, err = cluster.RunKubectl(ctx, Alice, pod("asked", chosen), "-n", ns, "create", "-f", "-")
	if err != nil || strings.Contains(stderr, "Warning:") {
		t.Errorf("pod labelled %s: err %v, stderr %q, want created without a warning\n%s", chosen, err, stderr, out)
	}
}
