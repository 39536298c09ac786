//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// denialShape is usher's admission denial in its stable shape (the
// annotation usher.io/denial of a denial Event; docs/decision.schema.json,
// $defs/admissionDenial).
type denialShape struct {
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	Code      int32  `json:"code"`
	Warned    bool   `json:"warned"`
	Operation string `json:"operation"`
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	User      string `json:"user"`
	Identity  string `json:"identity"`
	Queue     string `json:"queue"`
	Check     string `json:"check"`
	Field     string `json:"field"`
	DryRun    bool   `json:"dryRun"`
}

// denialEvents returns usher's denial Events in ns on kind/name.
func denialEvents(ctx context.Context, t *testing.T, e *usherEnv, ns, kind, name string) []corev1.Event {
	t.Helper()
	l, err := e.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range l.Items {
		if ev.ReportingController == "usher.io/usher" && ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// TestDenial: a denial reaches the people who submit, in one stable shape
// everywhere. usher runs as a service account bound to the ClusterRoles
// usher-event-recorder and usher-owner-reader that deploy/rbac.yaml ships (and
// system:auth-delegator), with enforceQueueACLs; alice (group dev) creates
// a Job in queue ops (group ops only):
//
//   - kubectl shows the human message; the API server passes usher's
//     status details on (the cause QueueSubmitDenied, the field of the
//     marker, the Job);
//   - an Event in the namespace names the Job, with reason
//     QueueSubmitDenied, the message, and the denial as JSON in the
//     annotation usher.io/denial;
//   - usher's audit record has the structured details (denial.*), and the
//     API server's audit event of the request has usher's audit
//     annotations (decision, reason, queue);
//   - a Job created with generateName gets an Event naming it
//     generateName + "*";
//   - a dry run is denied the same way and records no Event (neither do
//     the dry-run probes of the webhooks' registration).
func TestDenial(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	const config = `partitions:
  - name: default
    defaultqueue: root.sandbox
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: dev
            submitacl: " dev"
          - name: ops
            submitacl: " ops"
          - name: sandbox
            submitacl: "*"
admissionController:
  enforceQueueACLs: true
`
	const kueue = "kueue.x-k8s.io/queue-name"
	roles := shippedClusterRoles(t)
	e := &usherEnv{t: t, label: fmt.Sprintf("d%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1)), admin: client(t, Admin)}
	ns := e.namespace(ctx, "denial")
	kubeconfig := usherServiceAccount(t, ctx, e, ns, t.TempDir())
	bindShipped(t, ctx, e, roles, "usher-event-recorder", "system:serviceaccount:"+ns+":usher")
	// The Job's kueue.x-k8s.io/queue-name names LocalQueue ops, of ClusterQueue ops (root.ops).
	bindShipped(t, ctx, e, roles, "usher-owner-reader", "system:serviceaccount:"+ns+":usher")
	dyn, err := cluster.Dynamic(Admin)
	if err != nil {
		t.Fatal(err)
	}
	createKueue(ctx, t, dyn, LocalQueues, ns, map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": "ops", "namespace": ns},
		"spec": map[string]any{"clusterQueue": "ops"}})
	label := e.label
	e = startUsherWith(t, ctx, config, "--kubeconfig", kubeconfig)
	e.label = label
	e.register(ctx, ns)
	alice := client(t, Alice)

	t.Run("kubectl shows the message; the status carries the details", func(t *testing.T) {
		manifest := fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: alice-to-ops
  namespace: %s
  labels:
    %s: ops
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: %s
`, ns, kueue, Image)
		_, stderr, err := cluster.RunKubectl(ctx, Alice, []byte(manifest), "create", "-f", "-")
		if err == nil {
			t.Fatal("kubectl create of alice's Job to queue ops succeeded")
		}
		if want := `user "alice" may not submit to queue "root.ops" of partition "default"`; !strings.Contains(stderr, want) {
			t.Errorf("kubectl's error = %q, want it to contain %q", stderr, want)
		}
		t.Logf("kubectl told alice: %s", strings.TrimSpace(stderr))

		// The same through client-go: the API server keeps usher's
		// status details.
		_, err = alice.BatchV1().Jobs(ns).Create(ctx, Job(ns, "alice-to-ops-2", map[string]string{kueue: "ops"}, nil), metav1.CreateOptions{})
		var st apierrors.APIStatus
		if !errors.As(err, &st) {
			t.Fatalf("create: %v, want a status error", err)
		}
		s := st.Status()
		if s.Reason != metav1.StatusReasonForbidden || s.Code != 403 || s.Details == nil || len(s.Details.Causes) != 1 {
			t.Fatalf("status %+v", s)
		}
		c := s.Details.Causes[0]
		if s.Details.Kind != "Job" || s.Details.Group != "batch" || s.Details.Name != "alice-to-ops-2" ||
			c.Type != "QueueSubmitDenied" || c.Field != "metadata.labels["+kueue+"]" || c.Message != "root.ops" {
			t.Fatalf("details %+v", *s.Details)
		}
	})

	t.Run("an Event on the namespace names the Job", func(t *testing.T) {
		var evs []corev1.Event
		err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			evs = denialEvents(ctx, t, e, ns, "Job", "alice-to-ops")
			return len(evs) > 0, nil
		})
		if err != nil {
			t.Fatalf("no usher Event on Job alice-to-ops: %v", err)
		}
		ev := evs[0]
		if ev.Type != corev1.EventTypeWarning || ev.Reason != "QueueSubmitDenied" || ev.InvolvedObject.APIVersion != "batch/v1" ||
			ev.InvolvedObject.Namespace != ns || !strings.Contains(ev.Message, `user "alice" may not submit to queue "root.ops"`) {
			t.Fatalf("Event %+v", ev)
		}
		var d denialShape
		if err := json.Unmarshal([]byte(ev.Annotations["usher.io/denial"]), &d); err != nil {
			t.Fatalf("annotation usher.io/denial %q: %v", ev.Annotations["usher.io/denial"], err)
		}
		if d.Reason != "QueueSubmitDenied" || d.Code != 403 || d.Kind != "Job" || d.Group != "batch" || d.Name != "alice-to-ops" ||
			d.Namespace != ns || d.User != Alice || d.Queue != "root.ops" || d.Check != "submit" || d.Field != "metadata.labels["+kueue+"]" ||
			d.Message != ev.Message || d.Operation != "CREATE" {
			t.Fatalf("denial %+v", d)
		}
		out, _, err := cluster.RunKubectl(ctx, Admin, nil, "get", "events", "-n", ns, "--field-selector", "reason=QueueSubmitDenied")
		if err != nil || !strings.Contains(out, "job/alice-to-ops") {
			t.Errorf("kubectl get events: %v\n%s", err, out)
		}
		t.Logf("kubectl get events -n %s --field-selector reason=QueueSubmitDenied:\n%s", ns, out)
	})

	t.Run("the audit record has the structured details", func(t *testing.T) {
		var rec auditRecord
		err := Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
			for _, r := range e.auditRecords() {
				if r["name"] == "alice-to-ops" && r["denial.reason"] != "" {
					rec = r
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no audit record of the denial: %v", err)
		}
		want := map[string]string{
			"allowed": "false", "code": "403", "queue": "root.ops", "namespace": ns, "user": Alice,
			"denial.reason": "QueueSubmitDenied", "denial.queue": "root.ops", "denial.check": "submit",
			"denial.field": "metadata.labels[" + kueue + "]", "denial.kind": "Job", "denial.name": "alice-to-ops", "denial.user": Alice,
		}
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("audit record %s = %q, want %q (%v)", k, rec[k], v, rec)
			}
		}
	})

	t.Run("the API server's audit log has usher's audit annotations", func(t *testing.T) {
		// The API server prefixes each key of response.auditAnnotations
		// with the webhook's name and writes them on the request's audit
		// event, denied requests included.
		prefix := "usher-mutate-" + e.label + ".usher.e2e/"
		var ann map[string]string
		err := Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
			data, err := os.ReadFile(filepath.Join(cluster.StateDir, "logs", "audit.log"))
			if err != nil {
				return false, err
			}
			for _, line := range strings.Split(string(data), "\n") {
				if !strings.Contains(line, `"alice-to-ops"`) || !strings.Contains(line, prefix) {
					continue
				}
				var ev struct {
					Stage       string                `json:"stage"`
					ObjectRef   struct{ Name string } `json:"objectRef"`
					Annotations map[string]string     `json:"annotations"`
				}
				if json.Unmarshal([]byte(line), &ev) == nil && ev.ObjectRef.Name == "alice-to-ops" && ev.Stage == "ResponseComplete" {
					ann = ev.Annotations
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("no audit event of the create of alice-to-ops with %s* annotations: %v", prefix, err)
		}
		for k, v := range map[string]string{"decision": "denied", "reason": "QueueSubmitDenied", "queue": "root.ops"} {
			if ann[prefix+k] != v {
				t.Errorf("audit annotation %s%s = %q, want %q (%v)", prefix, k, ann[prefix+k], v, ann)
			}
		}
	})

	t.Run("generateName", func(t *testing.T) {
		job := Job(ns, "", map[string]string{kueue: "ops"}, nil)
		job.GenerateName = "spark-"
		if _, err := alice.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err == nil {
			t.Fatal("alice's generated Job to ops was admitted")
		}
		err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			return len(denialEvents(ctx, t, e, ns, "Job", "spark-*")) > 0, nil
		})
		if err != nil {
			t.Fatalf("no usher Event on Job spark-*: %v", err)
		}
	})

	t.Run("a dry run records no Event", func(t *testing.T) {
		_, err := alice.BatchV1().Jobs(ns).Create(ctx, Job(ns, "dry-ops", map[string]string{kueue: "ops"}, nil),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), `may not submit to queue "root.ops"`) {
			t.Fatalf("dry run: %v, want usher's denial", err)
		}
		// A real denial after it: once its Event is there, the dry run's
		// would have been too.
		if _, err := alice.BatchV1().Jobs(ns).Create(ctx, Job(ns, "after-dry", map[string]string{kueue: "ops"}, nil), metav1.CreateOptions{}); err == nil {
			t.Fatal("alice's Job after-dry to ops was admitted")
		}
		err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			return len(denialEvents(ctx, t, e, ns, "Job", "after-dry")) > 0, nil
		})
		if err != nil {
			t.Fatalf("no Event for after-dry: %v", err)
		}
		if evs := denialEvents(ctx, t, e, ns, "Job", "dry-ops"); len(evs) != 0 {
			t.Fatalf("the dry run recorded an Event: %+v", evs[0])
		}
		if evs := denialEvents(ctx, t, e, ns, "Pod", "usher-probe"); len(evs) != 0 {
			t.Fatalf("the registration's dry-run probe recorded an Event: %+v", evs[0])
		}
		// usher's log is buffered: wait for the record.
		err = Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
			for _, r := range e.auditRecords() {
				if r["name"] == "dry-ops" && r["dryRun"] == "true" && r["denial.reason"] == "QueueSubmitDenied" && r["denial.dryRun"] == "true" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("no audit record of the dry run's denial: %v", err)
		}
	})
}
