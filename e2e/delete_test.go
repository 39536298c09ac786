//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// modifyACLAnnotation is where usher reads a workload's modify ACL (the
// default of admissionController.modifyACLAnnotation).
const modifyACLAnnotation = "usher.io/modify-acl"

// deleteConfig turns on the kill rule. carol is a cluster admin through
// the partition adminacl (her group spark-submitters), bob is an admin of
// root.ops only; root.default is the partition's default queue. Nobody is
// a trusted external user or group here, so every tenant's DELETE goes
// through the rule.
const deleteConfig = `partitions:
  - name: default
    adminacl: " spark-submitters"
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
          - name: ops
            adminacl: bob
admissionController:
  enforceDeleteACLs: true
`

// registerDelete registers this usher's validating webhook again, now on
// CREATE, UPDATE and DELETE, as docs/delete.md says to do with
// enforceDeleteACLs (the configuration keeps its name, so register's
// cleanup still removes it). It waits in ns until the DELETE rule
// demonstrably acts: bob's dry-run delete of a pod of alice's is refused.
func (e *usherEnv) registerDelete(ctx context.Context, ns string) {
	t := e.t
	t.Helper()
	e.registerValidating(ctx, "usher-validate", WithOperations(WorkloadRules, admissionregistrationv1.Delete), nil)
	// The probe is created for real (a dry-run delete needs an object);
	// the validating webhook was away for a moment, so wait until the pod
	// comes back stamped by both webhooks.
	alice, bob := client(t, Alice), client(t, Bob)
	const probe = "usher-delete-probe"
	var last error
	err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, last = alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, probe, nil), metav1.CreateOptions{})
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		t.Fatalf("creating the probe pod %s/%s as alice: %v (last: %v)", ns, probe, err, last)
	}
	dry := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		last = bob.CoreV1().Pods(ns).Delete(ctx, probe, dry)
		return last != nil && strings.Contains(last.Error(), `user "bob" may not delete Pod`), nil
	})
	if err != nil {
		t.Fatalf("usher's DELETE rule never took effect in %s (last dry-run delete: %v): %v", ns, last, err)
	}
	if err := alice.CoreV1().Pods(ns).Delete(ctx, probe, metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatalf("alice deleting her probe pod: %v", err)
	}
}

// setupDelete is setup with the validating webhook also on DELETE.
func setupDelete(t *testing.T, ctx context.Context, config, prefix string) (*usherEnv, string) {
	t.Helper()
	e, ns := setup(t, ctx, config, prefix)
	e.registerDelete(ctx, ns)
	return e, ns
}

// auditRecord is one admission audit record from usher's log, field by
// field (webhook, operation, object (the kind), namespace, name, user,
// identity, queue, allowed, code, reason, dryRun, …).
type auditRecord map[string]string

func (r auditRecord) String() string {
	return fmt.Sprintf("%s %s %s %s/%s by %s: allowed=%s (%s)", r["webhook"], r["operation"], r["object"], r["namespace"], r["name"], r["user"], r["allowed"], r["reason"])
}

// auditRecords reads usher's admission audit records (--log-format text)
// from its log.
func (e *usherEnv) auditRecords() []auditRecord {
	e.t.Helper()
	data, err := os.ReadFile(e.u.LogPath)
	if err != nil {
		e.t.Fatalf("reading usher's log: %v", err)
	}
	var out []auditRecord
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, " msg=audit kind=admission ") {
			continue
		}
		if r := parseLogfmt(line); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// parseLogfmt splits a line of slog's text handler into its key=value
// pairs; values may be quoted as strconv.Quote does. It returns nil for a
// line it cannot read.
func parseLogfmt(line string) auditRecord {
	r := auditRecord{}
	for {
		line = strings.TrimLeft(line, " ")
		if line == "" {
			return r
		}
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			return nil
		}
		key, rest := line[:eq], line[eq+1:]
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil
			}
			v, err := strconv.Unquote(q)
			if err != nil {
				return nil
			}
			r[key], line = v, rest[len(q):]
			continue
		}
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			sp = len(rest)
		}
		r[key], line = rest[:sp], rest[sp:]
	}
}

// wantDeleteRecord waits until usher's audit log holds a DELETE review
// (not a dry run) of kind in ns by user, named name, and returns it. When
// name is "", it matches the review of any object of that kind, as the API
// server sends them for a DeleteCollection (the namespace controller's):
// request.name is empty then, and usher records it so. usher writes its
// log in batches, so a record may show up a little after the API server
// answered.
func (e *usherEnv) wantDeleteRecord(ctx context.Context, t *testing.T, kind, ns, name, user string) auditRecord {
	t.Helper()
	var found auditRecord
	err := Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
		for _, r := range e.auditRecords() {
			if r["webhook"] == "validate" && r["operation"] == "DELETE" && r["object"] == kind && r["namespace"] == ns &&
				(name == "" || r["name"] == name) && r["user"] == user && r["dryRun"] != "true" {
				found = r
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("usher recorded no DELETE of %s %s/%s by %s: %v", kind, ns, name, user, err)
	}
	return found
}

// wantAllowedBecause checks that r allowed the request with a reason
// containing want.
func wantAllowedBecause(t *testing.T, r auditRecord, want string) {
	t.Helper()
	if r == nil {
		return // wantDeleteRecord reported it
	}
	if r["allowed"] != "true" || !strings.Contains(r["reason"], want) {
		t.Errorf("usher's record %v: want allowed with a reason containing %q", r, want)
	}
}

// waitGone waits until get reports NotFound.
func waitGone(ctx context.Context, t *testing.T, what string, timeout time.Duration, get func(context.Context) error) {
	t.Helper()
	var last error
	err := Eventually(ctx, timeout, func(ctx context.Context) (bool, error) {
		last = get(ctx)
		return apierrors.IsNotFound(last), nil
	})
	if err != nil {
		t.Errorf("%s is still there after %v (last get: %v): %v", what, timeout, last, err)
	}
}

// waitNoPods waits until no pod in ns matches selector.
func waitNoPods(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, selector string, timeout time.Duration) {
	t.Helper()
	var left []string
	err := Eventually(ctx, timeout, func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		left = left[:0]
		for _, p := range l.Items {
			left = append(left, p.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("pods %s in %s still there after %v: %v: %v", selector, ns, timeout, left, err)
	}
}

// wantStillThere checks that the pod exists and is not being deleted.
func wantStillThere(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("pod %s/%s after the refused delete: %v", ns, name, err)
	case p.DeletionTimestamp != nil:
		t.Errorf("pod %s/%s is being deleted (deletionTimestamp %v) after the refused delete", ns, name, p.DeletionTimestamp)
	}
}

// background is the propagation kubectl uses: the garbage collector
// deletes the dependents after the owner is gone. (A Job deleted through
// the API without a policy would orphan its pods.)
func background() metav1.DeleteOptions {
	p := metav1.DeletePropagationBackground
	return metav1.DeleteOptions{PropagationPolicy: &p}
}

// Scenario 11: with enforceDeleteACLs and the validating webhook on
// DELETE, only those YARN lets kill an application may delete a workload:
// its owner, the members of its modify ACL, admins of its queue and cluster
// admins. The controllers that clean up (garbage collector, namespace
// controller) keep working.
func TestUsherDeleteACLs(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	e, ns := setupDelete(t, ctx, deleteConfig, "delete")
	alice, bob, carol, ext, admin := client(t, Alice), client(t, Bob), client(t, Carol), client(t, Ext), client(t, Admin)
	gc := cluster.ControllerUser("generic-garbage-collector")

	// notKiller is the end of the reason usher gives for a requester who
	// is none of those the rule names.
	notKiller := func(user, queue string) string {
		return fmt.Sprintf("%s may not kill the application of alice in %s: not the owner, not an admin of %s or its parents, not a cluster or application admin, not in its modify ACL", user, queue, queue)
	}

	t.Run("bob and ext may not delete alice's pod", func(t *testing.T) {
		if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "alice-pod", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a pod: %v", err)
		}
		for _, tc := range []struct {
			user string
			c    kubernetes.Interface
		}{{Bob, bob}, {Ext, ext}} {
			err := tc.c.CoreV1().Pods(ns).Delete(ctx, "alice-pod", metav1.DeleteOptions{})
			wantDenied(t, tc.user+" deleting alice's pod", err,
				fmt.Sprintf(`usher: user %q may not delete Pod "%s/alice-pod": `, tc.user, ns), notKiller(tc.user, "root.default"))
			wantStillThere(ctx, t, admin, ns, "alice-pod")
		}
		_, stderr, err := cluster.RunKubectl(ctx, Bob, nil, "-n", ns, "delete", "pod", "alice-pod", "--wait=false")
		if err == nil {
			t.Error("kubectl delete pod alice-pod as bob succeeded")
		}
		if want := notKiller(Bob, "root.default"); !strings.Contains(stderr, want) {
			t.Errorf("kubectl told bob %q, want it to contain %q", stderr, want)
		}
		t.Logf("kubectl told bob: %s", strings.TrimSpace(stderr))
		wantStillThere(ctx, t, admin, ns, "alice-pod")

		// A DeleteCollection is decided object by object.
		err = bob.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		wantDenied(t, "bob deleting every pod of the namespace", err,
			fmt.Sprintf(`usher: user "bob" may not delete Pod "%s/alice-pod": `, ns), notKiller(Bob, "root.default"))
		wantStillThere(ctx, t, admin, ns, "alice-pod")
	})

	t.Run("alice deletes her own pod", func(t *testing.T) {
		if err := alice.CoreV1().Pods(ns).Delete(ctx, "alice-pod", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
			t.Fatalf("alice deleting her own pod: %v", err)
		}
		waitGone(ctx, t, "pod alice-pod", 30*time.Second, func(ctx context.Context) error {
			_, err := admin.CoreV1().Pods(ns).Get(ctx, "alice-pod", metav1.GetOptions{})
			return err
		})
		wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "Pod", ns, "alice-pod", Alice), "alice may kill the application of alice in root.default: alice owns it")
	})

	t.Run("ext deletes alice's Deployment through its modify ACL; the garbage collector removes the ReplicaSet and pods", func(t *testing.T) {
		d := Deployment(ns, "shared", 2, map[string]string{modifyACLAnnotation: Ext})
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating Deployment shared: %v", err)
		}
		pods := waitPods(ctx, t, admin, ns, "app=shared", 2, 90*time.Second)
		for _, p := range pods {
			wantIdentity(t, "pod "+p.Name, p.Annotations, Alice, aliceGroups...)
			if got := p.Annotations[modifyACLAnnotation]; got != Ext {
				t.Errorf("pod %s: annotation %s = %q, want %q (copied from the template)", p.Name, modifyACLAnnotation, got, Ext)
			}
		}
		rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=shared"})
		if err != nil || len(rss.Items) != 1 {
			t.Fatalf("ReplicaSets of Deployment shared: %v (err %v), want one", rss, err)
		}
		rs := rss.Items[0].Name

		err = bob.AppsV1().Deployments(ns).Delete(ctx, "shared", background())
		wantDenied(t, "bob deleting Deployment shared", err,
			fmt.Sprintf(`usher: user "bob" may not delete Deployment "%s/shared": `, ns), notKiller(Bob, "root.default"))

		// The modify ACL travels to the pods: ext may delete one of them,
		// and the ReplicaSet controller replaces it.
		victim := pods[0].Name
		if err := ext.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("ext deleting pod %s (its modify ACL names ext): %v", victim, err)
		}
		waitGone(ctx, t, "pod "+victim, 30*time.Second, func(ctx context.Context) error {
			_, err := admin.CoreV1().Pods(ns).Get(ctx, victim, metav1.GetOptions{})
			return err
		})
		wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "Pod", ns, victim, Ext), `ext may kill the application of alice in root.default: user entry "ext" in its modify ACL`)
		pods = waitPods(ctx, t, admin, ns, "app=shared", 2, 90*time.Second)

		if err := ext.AppsV1().Deployments(ns).Delete(ctx, "shared", background()); err != nil {
			t.Fatalf("ext deleting Deployment shared (its modify ACL names ext): %v", err)
		}
		wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "Deployment", ns, "shared", Ext), `user entry "ext" in its modify ACL`)
		waitGone(ctx, t, "Deployment shared", 30*time.Second, func(ctx context.Context) error {
			_, err := admin.AppsV1().Deployments(ns).Get(ctx, "shared", metav1.GetOptions{})
			return err
		})
		waitGone(ctx, t, "ReplicaSet "+rs, 90*time.Second, func(ctx context.Context) error {
			_, err := admin.AppsV1().ReplicaSets(ns).Get(ctx, rs, metav1.GetOptions{})
			return err
		})
		waitNoPods(ctx, t, admin, ns, "app=shared", 90*time.Second)
		// The garbage collector's deletes went through usher, which let
		// them pass as a trusted controller's.
		wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "ReplicaSet", ns, rs, gc), "delete by a trusted controller")
		for _, p := range pods {
			wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "Pod", ns, p.Name, gc), "delete by a trusted controller")
		}
	})

	t.Run("bob deletes alice's Job in root.ops, which he administers, but not hers in the default queue", func(t *testing.T) {
		for _, j := range []struct{ name, queue string }{{"ops-job", "root.ops"}, {"dev-job", ""}} {
			var labels map[string]string
			if j.queue != "" {
				labels = map[string]string{"queue": j.queue}
			}
			// On the pod template: YuniKorn reads the queue on the pods.
			if _, err := alice.BatchV1().Jobs(ns).Create(ctx, Job(ns, j.name, nil, labels), metav1.CreateOptions{}); err != nil {
				t.Fatalf("alice creating Job %s: %v", j.name, err)
			}
		}
		opsPods := waitPods(ctx, t, admin, ns, "app=ops-job", 1, 90*time.Second)

		err := bob.BatchV1().Jobs(ns).Delete(ctx, "dev-job", background())
		wantDenied(t, "bob deleting Job dev-job (default queue)", err,
			fmt.Sprintf(`usher: user "bob" may not delete Job "%s/dev-job": `, ns), notKiller(Bob, "root.default"))
		if _, err := admin.BatchV1().Jobs(ns).Get(ctx, "dev-job", metav1.GetOptions{}); err != nil {
			t.Errorf("Job dev-job after bob's refused delete: %v", err)
		}

		if err := bob.BatchV1().Jobs(ns).Delete(ctx, "ops-job", background()); err != nil {
			t.Fatalf("bob deleting Job ops-job in root.ops: %v", err)
		}
		wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "Job", ns, "ops-job", Bob),
			`bob may kill the application of alice in root.ops: queue admin: user entry "bob" in adminacl of root.ops`)
		waitGone(ctx, t, "Job ops-job", 30*time.Second, func(ctx context.Context) error {
			_, err := admin.BatchV1().Jobs(ns).Get(ctx, "ops-job", metav1.GetOptions{})
			return err
		})
		waitNoPods(ctx, t, admin, ns, "app=ops-job", 90*time.Second)
		for _, p := range opsPods {
			wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "Pod", ns, p.Name, gc), "delete by a trusted controller")
		}
	})

	t.Run("carol, a cluster admin through her group, deletes alice's pod", func(t *testing.T) {
		if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "for-carol", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a pod: %v", err)
		}
		if err := carol.CoreV1().Pods(ns).Delete(ctx, "for-carol", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("carol deleting alice's pod: %v", err)
		}
		waitGone(ctx, t, "pod for-carol", 30*time.Second, func(ctx context.Context) error {
			_, err := admin.CoreV1().Pods(ns).Get(ctx, "for-carol", metav1.GetOptions{})
			return err
		})
		wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, "Pod", ns, "for-carol", Carol),
			`carol may kill the application of alice in root.default: cluster admin: group entry "spark-submitters" in the adminacl of partition default`)
	})

	t.Run("deleting the namespace deletes everything in it", func(t *testing.T) {
		// Left in the namespace: Job dev-job and its pod, and these.
		if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "left-pod", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a pod: %v", err)
		}
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "left", 1, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a Deployment: %v", err)
		}
		waitPods(ctx, t, admin, ns, "app=left", 1, 90*time.Second)
		waitPods(ctx, t, admin, ns, "app=dev-job", 1, 90*time.Second)

		if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting namespace %s: %v", ns, err)
		}
		waitGone(ctx, t, "namespace "+ns, 2*time.Minute, func(ctx context.Context) error {
			_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err
		})
		nsc := cluster.ControllerUser("namespace-controller")
		// The namespace controller deletes each kind as a collection: the
		// API server asks usher about every object, with no request name.
		// (A ReplicaSet may go first to the garbage collector, once its
		// Deployment is gone; these three have no owner.)
		for _, kind := range []string{"Pod", "Job", "Deployment"} {
			wantAllowedBecause(t, e.wantDeleteRecord(ctx, t, kind, ns, "", nsc), "delete by a trusted controller")
		}
	})

	// Only tenants were ever refused a DELETE: no controller was.
	for _, r := range e.auditRecords() {
		if r["operation"] == "DELETE" && r["allowed"] != "true" && r["user"] != Bob && r["user"] != Ext {
			t.Errorf("usher refused a DELETE it should have let through: %v", r)
		}
	}
}
