//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// usherNSLabel is the namespace label that limits a test's webhooks to the
// namespaces of that test.
const usherNSLabel = "usher-e2e/usher"

// baseConfig is the configuration of most scenarios: everyone may submit
// anywhere, ext is a trusted external user and members of
// spark-submitters are trusted external groups; controllers are trusted
// (the default).
const baseConfig = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
admissionController:
  accessControl:
    externalUsers: "^ext$"
    externalGroups: "^spark-submitters$"
`

var usherSeq atomic.Int64

// usherEnv is one usher serve with its webhooks registered for the
// namespaces labelled usherNSLabel=label.
type usherEnv struct {
	t     *testing.T
	u     *UsherProcess
	dir   string
	label string
	admin kubernetes.Interface
}

// startUsher builds usher (once per process), writes config to a file,
// starts `usher serve` on a free loopback port with a serving certificate
// from the cluster's CA and waits for /healthz. t.Cleanup stops it by its
// pid (and prints its log when the test failed). The webhooks are
// registered later, by register, once the test's namespaces exist.
func startUsher(t *testing.T, ctx context.Context, config string) *usherEnv {
	t.Helper()
	return startUsherWith(t, ctx, config)
}

// startUsherWith is startUsher with more flags for usher serve.
func startUsherWith(t *testing.T, ctx context.Context, config string, args ...string) *usherEnv {
	t.Helper()
	bin, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := cluster.NewUsherProcess(bin, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	u.Args = args
	if err := u.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		u.Close()
		if t.Failed() {
			t.Logf("usher log (last 60 lines of %s):\n%s", u.LogPath, u.LogTail(60))
		}
	})
	return &usherEnv{
		t: t, u: u, dir: dir,
		label: fmt.Sprintf("u%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1)),
		admin: client(t, Admin),
	}
}

// namespace makes a namespace the tenants may use, labelled so that this
// usher's webhooks (once registered) cover it. It is deleted when the test
// ends, after the webhooks are gone (cleanups run last in, first out).
func (e *usherEnv) namespace(ctx context.Context, prefix string) string {
	e.t.Helper()
	ns, err := cluster.NewNamespace(ctx, prefix, map[string]string{usherNSLabel: e.label})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	return ns
}

// createOnly returns rules with CREATE as the only operation.
func createOnly(rules []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.RuleWithOperations {
	out := make([]admissionregistrationv1.RuleWithOperations, len(rules))
	for i, r := range rules {
		r.Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
		out[i] = r
	}
	return out
}

// register points the API server at this usher for the namespaces
// labelled with e.label, as deploy/webhooks.yaml does for a cluster:
// /mutate on CREATE and /validate on CREATE and UPDATE of the eight
// workload kinds, failurePolicy Fail. probeNS is one of those namespaces:
// register waits there until each webhook demonstrably takes effect. The
// validating webhook goes first, so that its effect can be seen alone (it
// refuses a pod the mutating webhook did not stamp); then the mutating one
// (alice's pod comes back stamped).
func (e *usherEnv) register(ctx context.Context, probeNS string) {
	t := e.t
	t.Helper()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{usherNSLabel: e.label}}
	unValidate, err := RegisterValidatingWebhook(ctx, e.admin, Webhook{
		Name: "usher-validate-" + e.label, URL: e.u.URL() + "/validate", CABundle: e.u.Cert.CABundle,
		FailurePolicy: admissionregistrationv1.Fail, Rules: WorkloadRules, NamespaceSelector: sel,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := unValidate(ctx); err != nil {
			t.Error(err)
		}
	})
	alice := client(t, Alice)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, last = alice.CoreV1().Pods(probeNS).Create(ctx, Pod(probeNS, "usher-probe", nil), dry)
		return last != nil && strings.Contains(last.Error(), "did not stamp it"), nil
	})
	if err != nil {
		t.Fatalf("usher's validating webhook never took effect in %s (last dry run: %v): %v", probeNS, last, err)
	}

	unMutate, err := RegisterMutatingWebhook(ctx, e.admin, Webhook{
		Name: "usher-mutate-" + e.label, URL: e.u.URL() + "/mutate", CABundle: e.u.Cert.CABundle,
		FailurePolicy: admissionregistrationv1.Fail, Rules: createOnly(WorkloadRules), NamespaceSelector: sel,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := unMutate(ctx); err != nil {
			t.Error(err)
		}
	})
	// Stamped, or refused by the mutating webhook itself (with
	// enforceQueueACLs, when alice may not use the default queue).
	mutateDenied := fmt.Sprintf("admission webhook %q denied the request", "usher-mutate-"+e.label+".usher.e2e")
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		var p *corev1.Pod
		p, last = alice.CoreV1().Pods(probeNS).Create(ctx, Pod(probeNS, "usher-probe", nil), dry)
		if last != nil {
			return strings.Contains(last.Error(), mutateDenied), nil
		}
		info, ok, _ := UserInfo(p.Annotations)
		return ok && info.User == Alice, nil
	})
	if err != nil {
		t.Fatalf("usher's mutating webhook never took effect in %s (last dry run: %v): %v", probeNS, last, err)
	}
}

// setup is startUsher, one namespace and register.
func setup(t *testing.T, ctx context.Context, config, prefix string) (*usherEnv, string) {
	t.Helper()
	e := startUsher(t, ctx, config)
	ns := e.namespace(ctx, prefix)
	e.register(ctx, ns)
	return e, ns
}

// wantIdentity checks that annotations carry user.info for user with (at
// least) groups.
func wantIdentity(t *testing.T, what string, annotations map[string]string, user string, groups ...string) {
	t.Helper()
	info, ok, err := UserInfo(annotations)
	switch {
	case err != nil:
		t.Errorf("%s: %v", what, err)
		return
	case !ok:
		t.Errorf("%s: no %s annotation (annotations %v), want user %q", what, UserInfoAnnotation, annotations, user)
		return
	}
	if info.User != user {
		t.Errorf("%s: %s names user %q, want %q", what, UserInfoAnnotation, info.User, user)
	}
	for _, g := range groups {
		if !slices.Contains(info.Groups, g) {
			t.Errorf("%s: %s has groups %v, want them to include %q", what, UserInfoAnnotation, info.Groups, g)
		}
	}
}

// aliceGroups are the groups the API server reports for alice.
var aliceGroups = []string{"dev", "system:authenticated"}

// wantDenied checks that err is the API server's 403 carrying a webhook
// denial whose message contains every one of wants.
func wantDenied(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want it denied", what)
		return
	}
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: err = %v (reason %q), want Forbidden", what, err, apierrors.ReasonForError(err))
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not contain %q", what, err, w)
		}
	}
}

// waitPods waits until at least n pods match selector in ns and returns
// them.
func waitPods(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, selector string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := Eventually(ctx, timeout, func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		pods = l.Items
		return len(pods) >= n, nil
	})
	if err != nil {
		t.Fatalf("pods %s in %s: have %d, want %d: %v (see %s/logs/kube-controller-manager.log)",
			selector, ns, len(pods), n, err, cluster.StateDir)
	}
	return pods
}

// ownerOf returns the kind/name of obj's controller, or "".
func ownerOf(m metav1.ObjectMeta) string {
	for _, o := range m.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind + "/" + o.Name
		}
	}
	return ""
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// updateDeployment reads, edits and writes back a Deployment as c,
// retrying when a controller wrote it in between.
func updateDeployment(ctx context.Context, c kubernetes.Interface, ns, name string, edit func(*appsv1.Deployment)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(d)
		_, err = c.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

// updatePod reads, edits and writes back a pod as c, retrying when another
// writer (kube-scheduler marking it unschedulable, a controller) wrote it in
// between, so that err is the answer to the edit itself.
func updatePod(ctx context.Context, c kubernetes.Interface, ns, name string, edit func(*corev1.Pod)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(p)
		_, err = c.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// template returns a pod template labelled app=name (plus labels).
func template(name string, labels map[string]string) corev1.PodTemplateSpec {
	l := map[string]string{"app": name}
	for k, v := range labels {
		l[k] = v
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: PodSpec()}
}

// jobTemplate is template with restartPolicy Never, as a Job needs.
func jobTemplate(name string, labels map[string]string) corev1.PodTemplateSpec {
	t := template(name, labels)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return t
}

// Job returns a Job named name whose metadata carries labels and whose
// pods are labelled app=name plus podLabels.
func Job(ns, name string, labels, podLabels map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       batchv1.JobSpec{Template: jobTemplate(name, podLabels)},
	}
}

// Scenario 1: the API server stores alice's pod with her identity, and
// nobody can change it afterwards.
func TestUsherStampsPodCreator(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	_, ns := setup(t, ctx, baseConfig, "stamp")
	alice, admin := client(t, Alice), client(t, Admin)

	if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "alice-pod", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating a pod: %v", err)
	}
	stored, err := admin.CoreV1().Pods(ns).Get(ctx, "alice-pod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIdentity(t, "alice's stored pod", stored.Annotations, Alice, aliceGroups...)
	original := stored.Annotations[UserInfoAnnotation]

	edits := []struct {
		name, user string
		edit       func(*corev1.Pod)
		want       string
	}{
		{"alice gives herself another group", Alice, func(p *corev1.Pod) {
			p.Annotations[UserInfoAnnotation] = UserInfoJSON(Alice, "dev", "system:authenticated", "admins")
		}, `user "alice" may not change annotation ` + UserInfoAnnotation + ` on Pod "` + ns + `/alice-pod"`},
		{"alice removes it", Alice, func(p *corev1.Pod) {
			delete(p.Annotations, UserInfoAnnotation)
		}, `user "alice" may not remove annotation ` + UserInfoAnnotation},
		{"admin rewrites it", Admin, func(p *corev1.Pod) {
			p.Annotations[UserInfoAnnotation] = UserInfoJSON(Bob, "ops")
		}, `user "admin" may not change annotation ` + UserInfoAnnotation},
	}
	for _, tc := range edits {
		t.Run(tc.name+": refused", func(t *testing.T) {
			err := updatePod(ctx, client(t, tc.user), ns, "alice-pod", tc.edit)
			wantDenied(t, tc.name, err, tc.want)
			after, err := admin.CoreV1().Pods(ns).Get(ctx, "alice-pod", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := after.Annotations[UserInfoAnnotation]; got != original {
				t.Errorf("after the refused update the stored annotation is %q, want %q", got, original)
			}
		})
	}

	t.Run("alice changes a label: passes", func(t *testing.T) {
		if err := updatePod(ctx, alice, ns, "alice-pod", func(p *corev1.Pod) { p.Labels = map[string]string{"tier": "batch"} }); err != nil {
			t.Fatalf("alice changing only a label: %v", err)
		}
		after, err := admin.CoreV1().Pods(ns).Get(ctx, "alice-pod", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.Labels["tier"] != "batch" {
			t.Errorf("stored labels %v, want tier=batch", after.Labels)
		}
		if got := after.Annotations[UserInfoAnnotation]; got != original {
			t.Errorf("after the label change the annotation is %q, want %q", got, original)
		}
	})
}

// Scenario 2: the ReplicaSet and the pods the controllers make for alice's
// Deployment carry alice's identity, not a controller's.
func TestUsherDeploymentPodsCarryCreator(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	_, ns := setup(t, ctx, baseConfig, "deploy")
	alice, admin := client(t, Alice), client(t, Admin)

	if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "web", 2, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating a deployment: %v", err)
	}
	d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIdentity(t, "the stored Deployment's pod template", d.Spec.Template.Annotations, Alice, aliceGroups...)

	pods := waitPods(ctx, t, admin, ns, "app=web", 2, 90*time.Second)
	rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 1 {
		t.Fatalf("%d ReplicaSets for deployment web, want 1", len(rss.Items))
	}
	rs := rss.Items[0]
	if got := ownerOf(rs.ObjectMeta); got != "Deployment/web" {
		t.Errorf("ReplicaSet %s is controlled by %q, want Deployment/web", rs.Name, got)
	}
	wantIdentity(t, "the pod template of ReplicaSet "+rs.Name+" (made by "+cluster.ControllerUser("deployment-controller")+")",
		rs.Spec.Template.Annotations, Alice, aliceGroups...)
	for _, p := range pods {
		if got := ownerOf(p.ObjectMeta); got != "ReplicaSet/"+rs.Name {
			t.Errorf("pod %s is controlled by %q, want ReplicaSet/%s", p.Name, got, rs.Name)
		}
		wantIdentity(t, "pod "+p.Name+" (made by "+cluster.ControllerUser("replicaset-controller")+")", p.Annotations, Alice, aliceGroups...)
	}

	// Scaling is an update that leaves the template alone: it passes, and
	// the new pod carries alice's identity too.
	if err := updateDeployment(ctx, alice, ns, "web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(3)) }); err != nil {
		t.Fatalf("alice scaling her deployment to 3: %v", err)
	}
	for _, p := range waitPods(ctx, t, admin, ns, "app=web", 3, 90*time.Second) {
		wantIdentity(t, "pod "+p.Name+" after scaling", p.Annotations, Alice, aliceGroups...)
	}
}

func ptr[T any](v T) *T { return &v }

// Scenario 3: every workload kind's controller makes pods (and, for a
// CronJob, Jobs) that carry the identity of the user who created the
// workload.
func TestUsherControllerWorkloads(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 5*time.Minute)
	e, ns := setup(t, ctx, baseConfig, "kinds")
	alice, admin := client(t, Alice), client(t, Admin)

	// podsOf waits for n pods labelled app=name and checks their owner
	// and identity.
	podsOf := func(t *testing.T, name, ownerKind string, n int, timeout time.Duration) {
		t.Helper()
		for _, p := range waitPods(ctx, t, admin, ns, "app="+name, n, timeout) {
			if got := ownerOf(p.ObjectMeta); !strings.HasPrefix(got, ownerKind+"/") {
				t.Errorf("pod %s is controlled by %q, want a %s", p.Name, got, ownerKind)
			}
			wantIdentity(t, "pod "+p.Name+" made by the "+ownerKind+" controller", p.Annotations, Alice, aliceGroups...)
		}
	}

	t.Run("Job", func(t *testing.T) {
		t.Parallel()
		if _, err := alice.BatchV1().Jobs(ns).Create(ctx, Job(ns, "job", nil, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		j, err := admin.BatchV1().Jobs(ns).Get(ctx, "job", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "the stored Job's pod template", j.Spec.Template.Annotations, Alice, aliceGroups...)
		podsOf(t, "job", "Job", 1, 90*time.Second)
	})

	t.Run("CronJob", func(t *testing.T) {
		t.Parallel()
		// "@every 5s" is a schedule the API server accepts (the cron
		// library's descriptor) and fires within seconds instead of at the
		// next minute; Forbid keeps it to one Job, whose pod never runs.
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cron"},
			Spec: batchv1.CronJobSpec{
				Schedule:          "@every 5s",
				ConcurrencyPolicy: batchv1.ForbidConcurrent,
				JobTemplate: batchv1.JobTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "cron"}},
					Spec:       batchv1.JobSpec{Template: jobTemplate("cron", nil)},
				},
			},
		}
		if _, err := alice.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stored, err := admin.BatchV1().CronJobs(ns).Get(ctx, "cron", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "the stored CronJob's job template", stored.Spec.JobTemplate.Spec.Template.Annotations, Alice, aliceGroups...)
		var jobs []batchv1.Job
		err = Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
			l, err := admin.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=cron"})
			if err != nil {
				return false, err
			}
			jobs = l.Items
			return len(jobs) > 0, nil
		})
		if err != nil {
			t.Fatalf("the CronJob made no Job: %v", err)
		}
		for _, j := range jobs {
			if got := ownerOf(j.ObjectMeta); got != "CronJob/cron" {
				t.Errorf("job %s is controlled by %q, want CronJob/cron", j.Name, got)
			}
			wantIdentity(t, "job "+j.Name+" made by the CronJob controller", j.Spec.Template.Annotations, Alice, aliceGroups...)
		}
		podsOf(t, "cron", "Job", 1, 90*time.Second)
	})

	t.Run("StatefulSet", func(t *testing.T) {
		t.Parallel()
		ss := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ss"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:            ptr(int32(2)),
				ServiceName:         "ss",
				PodManagementPolicy: appsv1.ParallelPodManagement, // pods never become ready
				Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ss"}},
				Template:            template("ss", nil),
			},
		}
		if _, err := alice.AppsV1().StatefulSets(ns).Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stored, err := admin.AppsV1().StatefulSets(ns).Get(ctx, "ss", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "the stored StatefulSet's pod template", stored.Spec.Template.Annotations, Alice, aliceGroups...)
		podsOf(t, "ss", "StatefulSet", 2, 90*time.Second)
	})

	t.Run("DaemonSet", func(t *testing.T) {
		t.Parallel()
		// A DaemonSet makes pods only for nodes. A Node object without a
		// kubelet is legal; the API server taints it not-ready at
		// creation, so the pods tolerate everything, and a node selector
		// keeps them to this node.
		node := "usher-e2e-node-" + e.label
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"usher-e2e/node": node}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting node %s: %v", node, err)
			}
		})
		tmpl := template("ds", nil)
		tmpl.Spec.NodeSelector = map[string]string{"usher-e2e/node": node}
		tmpl.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ds"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}},
				Template: tmpl,
			},
		}
		if _, err := alice.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stored, err := admin.AppsV1().DaemonSets(ns).Get(ctx, "ds", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "the stored DaemonSet's pod template", stored.Spec.Template.Annotations, Alice, aliceGroups...)
		podsOf(t, "ds", "DaemonSet", 1, 90*time.Second)
	})

	t.Run("ReplicaSet", func(t *testing.T) {
		t.Parallel()
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rs"},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr(int32(2)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rs"}},
				Template: template("rs", nil),
			},
		}
		if _, err := alice.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stored, err := admin.AppsV1().ReplicaSets(ns).Get(ctx, "rs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "the stored ReplicaSet's pod template", stored.Spec.Template.Annotations, Alice, aliceGroups...)
		podsOf(t, "rs", "ReplicaSet", 2, 90*time.Second)
	})

	t.Run("ReplicationController", func(t *testing.T) {
		t.Parallel()
		tmpl := template("rc", nil)
		rc := &corev1.ReplicationController{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rc"},
			Spec: corev1.ReplicationControllerSpec{
				Replicas: ptr(int32(2)),
				Selector: map[string]string{"app": "rc"},
				Template: &tmpl,
			},
		}
		if _, err := alice.CoreV1().ReplicationControllers(ns).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stored, err := admin.CoreV1().ReplicationControllers(ns).Get(ctx, "rc", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "the stored ReplicationController's pod template", stored.Spec.Template.Annotations, Alice, aliceGroups...)
		podsOf(t, "rc", "ReplicationController", 2, 90*time.Second)
	})
}

// Scenario 4: an untrusted user cannot claim someone else's identity; a
// trusted external user or group member may.
func TestUsherForgedAnnotations(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	_, ns := setup(t, ctx, baseConfig, "forge")
	admin := client(t, Admin)
	asAlice := map[string]string{UserInfoAnnotation: UserInfoJSON(Alice, aliceGroups...)}

	t.Run("bob claims to be alice on a pod: denied", func(t *testing.T) {
		_, err := client(t, Bob).CoreV1().Pods(ns).Create(ctx, Pod(ns, "bob-forged", asAlice), metav1.CreateOptions{})
		wantDenied(t, "bob's pod claiming alice", err,
			`user "bob" may not set annotation `+UserInfoAnnotation+` on Pod "`+ns+`/bob-forged"`,
			"externalUsers", "remove it and usher records your own identity")
		if _, err := admin.CoreV1().Pods(ns).Get(ctx, "bob-forged", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get bob-forged: err = %v, want NotFound", err)
		}
	})

	t.Run("bob claims to be alice on a Deployment's template: denied", func(t *testing.T) {
		_, err := client(t, Bob).AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "bob-forged", 1, asAlice), metav1.CreateOptions{})
		wantDenied(t, "bob's deployment claiming alice", err,
			`user "bob" may not set annotation `+UserInfoAnnotation+` on the pod template of Deployment "`+ns+`/bob-forged"`)
		if _, err := admin.AppsV1().Deployments(ns).Get(ctx, "bob-forged", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get deployment bob-forged: err = %v, want NotFound", err)
		}
	})

	t.Run("kubectl shows bob the reason", func(t *testing.T) {
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: bob-kubectl
  namespace: %s
  annotations:
    %s: '%s'
spec:
  containers:
  - name: main
    image: %s
`, ns, UserInfoAnnotation, UserInfoJSON(Alice, "dev"), Image)
		_, stderr, err := cluster.RunKubectl(ctx, Bob, []byte(manifest), "create", "-f", "-")
		if err == nil {
			t.Fatal("kubectl create of bob's forged pod succeeded")
		}
		want := `user "bob" may not set annotation ` + UserInfoAnnotation
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl's error = %q, want it to contain %q", stderr, want)
		}
	})

	t.Run("bob re-applying his own identity: allowed", func(t *testing.T) {
		own := UserInfoJSON(Bob, "ops", "system:authenticated")
		if _, err := client(t, Bob).CoreV1().Pods(ns).Create(ctx, Pod(ns, "bob-own", map[string]string{UserInfoAnnotation: own}), metav1.CreateOptions{}); err != nil {
			t.Fatalf("bob creating a pod whose annotation names exactly himself: %v", err)
		}
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "bob-own", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "bob's own pod", p.Annotations, Bob, "ops", "system:authenticated")
	})

	for _, tc := range []struct{ user, why string }{
		{Ext, "matches externalUsers ^ext$"},
		{Carol, "is in spark-submitters, which matches externalGroups"},
	} {
		t.Run(tc.user+" ("+tc.why+") submits for alice: allowed", func(t *testing.T) {
			name := tc.user + "-for-alice"
			if _, err := client(t, tc.user).CoreV1().Pods(ns).Create(ctx, Pod(ns, name, asAlice), metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s creating a pod for alice: %v", tc.user, err)
			}
			p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Annotations[UserInfoAnnotation]; got != asAlice[UserInfoAnnotation] {
				t.Errorf("stored annotation %q, want the one %s supplied, %q", got, tc.user, asAlice[UserInfoAnnotation])
			}
			wantIdentity(t, tc.user+"'s pod for alice", p.Annotations, Alice, aliceGroups...)
		})
	}

	t.Run("alice naming herself plus a case-variant member naming admin is refused", func(t *testing.T) {
		// encoding/json, which the scheduler decodes user.info with,
		// reads "User" (or "uſer") as "user" and keeps the last: the
		// scheduler would run these as admin.
		own := UserInfoJSON(Alice, aliceGroups...)
		for _, member := range []string{`"User"`, `"uſer"`, `"\u0055ser"`} {
			v := own[:len(own)-1] + `,` + member + `:"admin"}`
			ann := map[string]string{UserInfoAnnotation: v}
			_, err := client(t, Alice).CoreV1().Pods(ns).Create(ctx, Pod(ns, "alice-fold", ann), metav1.CreateOptions{})
			if err == nil || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "is not valid: member") {
				t.Errorf("alice's pod with %s: err = %v, want a 400 naming the member", v, err)
			}
			d := Deployment(ns, "alice-fold", 1, ann)
			_, err = client(t, Alice).AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
			if err == nil || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "is not valid: member") {
				t.Errorf("alice's Deployment with %s: err = %v, want a 400 naming the member", v, err)
			}
		}
	})

	t.Run("an invalid annotation is refused, even from ext", func(t *testing.T) {
		bad := map[string]string{UserInfoAnnotation: `{"username":"alice"}`}
		_, err := client(t, Ext).CoreV1().Pods(ns).Create(ctx, Pod(ns, "ext-invalid", bad), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "is not valid") || !strings.Contains(err.Error(), `member "username" is not allowed`) {
			t.Errorf("ext's pod with %s: err = %v, want a denial saying the annotation is not valid", bad[UserInfoAnnotation], err)
		}
	})
}

// Scenario 5: alice cannot make her Deployment's controller create pods
// under admin's name by editing the template; legitimate template edits
// still roll out under her name.
func TestUsherTemplateEditCannotChangeIdentity(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	_, ns := setup(t, ctx, baseConfig, "edit")
	alice, admin := client(t, Alice), client(t, Admin)

	if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "web", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range waitPods(ctx, t, admin, ns, "app=web", 1, 90*time.Second) {
		wantIdentity(t, "pod "+p.Name, p.Annotations, Alice, aliceGroups...)
	}
	d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original := d.Spec.Template.Annotations[UserInfoAnnotation]
	asAdmin := UserInfoJSON(Admin, "system:masters", "system:authenticated")

	t.Run("client update claiming admin: denied", func(t *testing.T) {
		err := updateDeployment(ctx, alice, ns, "web", func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations[UserInfoAnnotation] = asAdmin
		})
		wantDenied(t, "alice's template edit", err,
			`user "alice" may not change annotation `+UserInfoAnnotation+` on the pod template of Deployment "`+ns+`/web"`)
	})
	t.Run("kubectl patch claiming admin: denied", func(t *testing.T) {
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, UserInfoAnnotation, asAdmin)
		_, stderr, err := cluster.RunKubectl(ctx, Alice, nil, "-n", ns, "patch", "deployment", "web", "--type", "merge", "-p", patch)
		if err == nil {
			t.Fatal("kubectl patch of the template's user.info succeeded")
		}
		if want := `user "alice" may not change annotation ` + UserInfoAnnotation; !strings.Contains(stderr, want) {
			t.Errorf("kubectl's error = %q, want it to contain %q", stderr, want)
		}
	})
	t.Run("removing the template's annotation: denied", func(t *testing.T) {
		err := updateDeployment(ctx, alice, ns, "web", func(d *appsv1.Deployment) {
			delete(d.Spec.Template.Annotations, UserInfoAnnotation)
		})
		wantDenied(t, "alice removing the template annotation", err,
			`user "alice" may not remove annotation `+UserInfoAnnotation+` from the pod template of Deployment`)
	})

	// A legitimate template edit rolls out a new ReplicaSet, still alice's.
	if err := updateDeployment(ctx, alice, ns, "web", func(d *appsv1.Deployment) {
		d.Spec.Template.Labels["rev"] = "2"
	}); err != nil {
		t.Fatalf("alice adding a template label: %v", err)
	}
	for _, p := range waitPods(ctx, t, admin, ns, "app=web,rev=2", 1, 90*time.Second) {
		wantIdentity(t, "pod "+p.Name+" of the new rollout", p.Annotations, Alice, aliceGroups...)
	}

	d, err = admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations[UserInfoAnnotation]; got != original {
		t.Errorf("the stored template's annotation is %q, want alice's %q", got, original)
	}
	rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 2 {
		t.Errorf("%d ReplicaSets, want 2 (the first and the rev=2 rollout)", len(rss.Items))
	}
	for _, rs := range rss.Items {
		wantIdentity(t, "ReplicaSet "+rs.Name, rs.Spec.Template.Annotations, Alice, aliceGroups...)
	}
	pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		info, _, _ := UserInfo(p.Annotations)
		if info.User == Admin {
			t.Errorf("pod %s runs as admin", p.Name)
		}
		wantIdentity(t, "pod "+p.Name, p.Annotations, Alice, aliceGroups...)
	}
}

// Re-applying a manifest must keep working although usher refuses any
// change of the annotation: kubectl apply (client side, a three-way merge
// against the last applied manifest) and server-side apply (the
// annotation the webhook added belongs to no field manager) leave it
// alone. kubectl replace with a manifest that lacks it asks to remove it,
// and is refused with usher's reason.
func TestUsherReapply(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	_, ns := setup(t, ctx, baseConfig, "reapply")
	admin := client(t, Admin)
	manifest := func(name string, replicas int) []byte {
		return []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: main
        image: %[4]s
`, name, ns, replicas, Image))
	}
	for _, tc := range []struct{ name, mode string }{
		{"kubectl apply", "client-side"},
		{"kubectl apply --server-side", "server-side"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"apply", "-f", "-"}
			if tc.mode == "server-side" {
				args = []string{"apply", "--server-side", "-f", "-"}
			}
			for i, replicas := range []int{1, 1, 2} {
				if out, stderr, err := cluster.RunKubectl(ctx, Alice, manifest(tc.mode, replicas), args...); err != nil {
					t.Fatalf("%s #%d (replicas %d): %v\n%s%s", tc.name, i+1, replicas, err, out, stderr)
				}
			}
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, tc.mode, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != 2 {
				t.Errorf("replicas = %d after the third apply, want 2", *d.Spec.Replicas)
			}
			wantIdentity(t, "the template after three applies", d.Spec.Template.Annotations, Alice, aliceGroups...)
		})
	}
	t.Run("kubectl replace without the annotation: refused", func(t *testing.T) {
		if _, stderr, err := cluster.RunKubectl(ctx, Alice, manifest("replaced", 1), "create", "-f", "-"); err != nil {
			t.Fatalf("kubectl create: %v: %s", err, stderr)
		}
		// A replace without a resourceVersion can meet the Deployment
		// controller's own update of the object and fail with a Conflict
		// that says nothing about usher; try again then.
		var stderr string
		var err error
		_ = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			_, stderr, err = cluster.RunKubectl(ctx, Alice, manifest("replaced", 2), "replace", "-f", "-")
			return err == nil || !strings.Contains(stderr, "(Conflict)"), nil
		})
		if err == nil {
			t.Fatal("kubectl replace that drops the template's user.info succeeded")
		}
		if want := `user "alice" may not remove annotation ` + UserInfoAnnotation + ` from the pod template of Deployment`; !strings.Contains(stderr, want) {
			t.Errorf("kubectl's error = %q, want it to contain %q", stderr, want)
		}
	})
}

// Scenario 6: with trustControllers false, controllers may not carry a
// workload's user.info onto what they create: the Deployment controller's
// ReplicaSet and the ReplicaSet controller's pods are refused, and the
// controllers report why.
func TestUsherUntrustedControllers(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	const config = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
admissionController:
  accessControl:
    trustControllers: false
`
	_, ns := setup(t, ctx, config, "untrusted")
	alice, admin := client(t, Alice), client(t, Admin)
	const why = "the user matches systemUsers but trustControllers is false"

	t.Run("a Deployment gets no ReplicaSet", func(t *testing.T) {
		t.Parallel()
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "web", 1, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a deployment: %v", err)
		}
		var cond appsv1.DeploymentCondition
		err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentProgressing {
					cond = c
				}
			}
			return cond.Reason == "ReplicaSetCreateError", nil
		})
		if err != nil {
			t.Fatalf("deployment web: Progressing condition %+v, want reason ReplicaSetCreateError: %v", cond, err)
		}
		if cond.Status != corev1.ConditionFalse || !strings.Contains(cond.Message, why) ||
			!strings.Contains(cond.Message, cluster.ControllerUser("deployment-controller")) {
			t.Errorf("Progressing condition %s: %q, want False with usher's reason %q naming %s",
				cond.Status, cond.Message, why, cluster.ControllerUser("deployment-controller"))
		}
		wantEvent(ctx, t, admin, ns, "Deployment", "web", "ReplicaSetCreateError", why)
		rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) != 0 {
			t.Errorf("%d ReplicaSets exist for deployment web, want none", len(rss.Items))
		}
		wantNoPods(ctx, t, admin, ns, "app=web")
	})

	t.Run("a ReplicaSet gets no pods", func(t *testing.T) {
		t.Parallel()
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rs"},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rs"}},
				Template: template("rs", nil),
			},
		}
		if _, err := alice.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a replicaset: %v", err)
		}
		var cond appsv1.ReplicaSetCondition
		err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			rs, err := admin.AppsV1().ReplicaSets(ns).Get(ctx, "rs", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure {
					cond = c
				}
			}
			return cond.Status == corev1.ConditionTrue, nil
		})
		if err != nil {
			t.Fatalf("replicaset rs: ReplicaFailure condition %+v, want True: %v", cond, err)
		}
		if cond.Reason != "FailedCreate" || !strings.Contains(cond.Message, why) {
			t.Errorf("ReplicaFailure condition %s: %q, want FailedCreate with usher's reason %q", cond.Reason, cond.Message, why)
		}
		wantEvent(ctx, t, admin, ns, "ReplicaSet", "rs", "FailedCreate", why)
		wantNoPods(ctx, t, admin, ns, "app=rs")
	})

	t.Run("alice's own pod still passes", func(t *testing.T) {
		t.Parallel()
		if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "alice-pod", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating a pod: %v", err)
		}
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "alice-pod", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "alice's pod", p.Annotations, Alice, aliceGroups...)
	})
}

// wantEvent waits for a Warning event on kind/name with reason whose
// message contains want.
func wantEvent(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, kind, name, reason, want string) {
	t.Helper()
	var seen []string
	err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, ev := range l.Items {
			if ev.InvolvedObject.Kind != kind || ev.InvolvedObject.Name != name {
				continue
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
			if ev.Type == corev1.EventTypeWarning && ev.Reason == reason && strings.Contains(ev.Message, want) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no Warning event %s on %s %s containing %q; events: %q", reason, kind, name, want, seen)
	}
}

// wantNoPods checks that no pod matches selector in ns.
func wantNoPods(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, selector string) {
	t.Helper()
	l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		t.Errorf("pod %s exists (annotations %v), want none matching %s", p.Name, p.Annotations, selector)
	}
}

// Scenario 7: with enforceQueueACLs, a Job aimed at a queue its creator
// may not submit to is refused at creation, with usher's reason shown by
// kubectl; an allowed queue passes.
func TestUsherQueueACLs(t *testing.T) {
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
	_, ns := setup(t, ctx, config, "queues")
	admin := client(t, Admin)
	const kueue = "kueue.x-k8s.io/queue-name"

	t.Run("alice's Job to ops via kubectl: denied", func(t *testing.T) {
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
		for _, want := range []string{
			`user "alice" may not submit to queue "root.ops" of partition "default"`,
			`label ` + kueue + `="ops" on the Job`,
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("kubectl's error = %q, want it to contain %q", stderr, want)
			}
		}
		t.Logf("kubectl told alice: %s", strings.TrimSpace(stderr))
		if _, err := admin.BatchV1().Jobs(ns).Get(ctx, "alice-to-ops", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get job alice-to-ops: err = %v, want NotFound", err)
		}
	})

	t.Run("alice's Job to dev: allowed, and its pod too", func(t *testing.T) {
		if _, err := client(t, Alice).BatchV1().Jobs(ns).Create(ctx, Job(ns, "alice-to-dev", map[string]string{kueue: "dev"}, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice's Job to queue dev: %v", err)
		}
		j, err := admin.BatchV1().Jobs(ns).Get(ctx, "alice-to-dev", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "the stored Job's template", j.Spec.Template.Annotations, Alice, aliceGroups...)
		// The Job's pods carry no YuniKorn queue marker (Kueue reads the
		// label on the Job only), so YuniKorn would run them in the
		// partition's default queue: usher checked alice's Job against
		// it as well, and checks the Job controller's pods there, under
		// alice's identity. root.sandbox is open to all here; without an
		// open default queue the Job itself is refused at creation
		// (TestUsherQueueWherePodsRun).
		for _, p := range waitPods(ctx, t, admin, ns, "app=alice-to-dev", 1, 90*time.Second) {
			wantIdentity(t, "pod "+p.Name, p.Annotations, Alice, aliceGroups...)
		}
	})

	t.Run("bob's Job to ops: allowed", func(t *testing.T) {
		if _, err := client(t, Bob).BatchV1().Jobs(ns).Create(ctx, Job(ns, "bob-to-ops", map[string]string{kueue: "ops"}, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("bob's Job to queue ops: %v", err)
		}
	})

	t.Run("alice's Job to dev whose pods name ops: denied", func(t *testing.T) {
		j := Job(ns, "alice-smuggle", map[string]string{kueue: "dev"}, map[string]string{kueue: "ops"})
		_, err := client(t, Alice).BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
		wantDenied(t, "alice's Job with an ops marker on its template", err, `user "alice" may not submit to queue "root.ops"`)
	})

	t.Run("alice's Pod with YuniKorn's queue label root.ops: denied", func(t *testing.T) {
		p := Pod(ns, "alice-yk", nil)
		p.Labels = map[string]string{"queue": "root.ops"}
		_, err := client(t, Alice).CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		wantDenied(t, "alice's pod labelled queue=root.ops", err, `user "alice" may not submit to queue "root.ops"`)
	})
}

// Scenario 7, continued: with enforceQueueACLs, a workload is checked
// against the queue its pods will run in. YuniKorn reads its queue markers
// on the pods only, so a Deployment labelled for an allowed queue on its
// own metadata, or carrying only Kueue's label, runs its pods in the
// default queue: refused when its creator may not submit there. The same
// Deployment with the marker on its pod template passes, and so do the
// pods the controllers make from it.
func TestUsherQueueWherePodsRun(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	const config = `partitions:
  - name: default
    defaultqueue: root.ops
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: dev
            submitacl: " dev"
          - name: ops
            submitacl: " ops"
admissionController:
  enforceQueueACLs: true
`
	_, ns := setup(t, ctx, config, "podqueue")
	alice, admin := client(t, Alice), client(t, Admin)
	const kueue = "kueue.x-k8s.io/queue-name"
	defaultDenied := `user "alice" may not submit to the default queue of partition "default" (the pod template carries no yunikorn queue marker, so yunikorn runs its pods there)`

	t.Run("queue label on the Deployment only: denied", func(t *testing.T) {
		d := Deployment(ns, "top-only", 1, nil)
		d.Labels = map[string]string{"queue": "root.dev"}
		_, err := alice.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		wantDenied(t, "alice's Deployment labelled queue=root.dev on its own metadata", err, defaultDenied)
		if _, err := admin.AppsV1().Deployments(ns).Get(ctx, "top-only", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get deployment top-only: err = %v, want NotFound", err)
		}
	})

	t.Run("Kueue's label only: denied", func(t *testing.T) {
		d := Deployment(ns, "kueue-only", 1, nil)
		d.Labels = map[string]string{kueue: "dev"}
		_, err := alice.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		wantDenied(t, "alice's Deployment with Kueue's label only", err, defaultDenied)
	})

	t.Run("queue label on the template: allowed, and its pods run", func(t *testing.T) {
		d := Deployment(ns, "in-template", 1, nil)
		// YuniKorn does not read the Deployment's own label: root.ops
		// there does not matter.
		d.Labels = map[string]string{"queue": "root.ops"}
		d.Spec.Template.Labels["queue"] = "root.dev"
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice's Deployment with queue=root.dev on its template: %v", err)
		}
		for _, p := range waitPods(ctx, t, admin, ns, "app=in-template", 1, 90*time.Second) {
			wantIdentity(t, "pod "+p.Name, p.Annotations, Alice, aliceGroups...)
		}
	})
}

// Scenario 7, placement: with enforceQueueACLs, YuniKorn's queue markers
// are checked on the queue YuniKorn's placement rules give, with the
// namespace as the namespace tag, not on the path the marker spells: an
// unqualified dotted marker is root.ml_dot_training (no such queue), a pod
// without a marker is placed by the tag rule, and a rejected placement
// denies with every rule tried.
func TestUsherQueuePlacement(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	const config = `partitions:
  - name: default
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
        filter:
          type: allow
          users: [bob]
        parent:
          name: fixed
          value: root.teams
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: teams
            parent: true
            submitacl: bob
          - name: ml
            queues:
              - name: training
                submitacl: " dev"
admissionController:
  enforceQueueACLs: true
`
	_, ns := setup(t, ctx, config, "placement")
	alice, bob, admin := client(t, Alice), client(t, Bob), client(t, Admin)
	labelled := func(name, queue string) *corev1.Pod {
		p := Pod(ns, name, nil)
		if queue != "" {
			p.Labels = map[string]string{"queue": queue}
		}
		return p
	}

	t.Run("alice's pod labelled root.ml.training: allowed", func(t *testing.T) {
		if _, err := alice.CoreV1().Pods(ns).Create(ctx, labelled("full-path", "root.ml.training"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice's pod labelled queue=root.ml.training: %v", err)
		}
	})

	t.Run("alice's pod labelled ml.training: denied, YuniKorn would look for root.ml_dot_training", func(t *testing.T) {
		_, err := alice.CoreV1().Pods(ns).Create(ctx, labelled("dotted", "ml.training"), metav1.CreateOptions{})
		wantDenied(t, "alice's pod labelled queue=ml.training", err,
			`user "alice" may not submit to queue "root.ml_dot_training"`, "YuniKorn's placement rejected",
			"root.ml_dot_training does not exist and create is false", "the filter does not let the user through", "root.default does not exist")
		if _, err := admin.CoreV1().Pods(ns).Get(ctx, "dotted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get pod dotted: err = %v, want NotFound", err)
		}
	})

	t.Run("bob's pod without a marker: the tag rule places it in root.teams.<namespace>", func(t *testing.T) {
		if _, err := bob.CoreV1().Pods(ns).Create(ctx, labelled("by-namespace", ""), metav1.CreateOptions{}); err != nil {
			t.Fatalf("bob's pod without a marker: %v", err)
		}
	})

	t.Run("alice's pod without a marker: rejected by placement", func(t *testing.T) {
		_, err := alice.CoreV1().Pods(ns).Create(ctx, labelled("unplaced", ""), metav1.CreateOptions{})
		wantDenied(t, "alice's pod without a marker", err, "the application names no queue", "the filter does not let the user through")
	})
}

// Scenario 8: with failurePolicy Fail, workloads are refused while usher
// is down, and admitted again once it is back.
func TestUsherFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	e, ns := setup(t, ctx, baseConfig, "down")
	alice, admin := client(t, Alice), client(t, Admin)
	if _, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "before", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creating a pod while usher runs: %v", err)
	}

	e.u.Stop()
	t.Run("pod create fails closed", func(t *testing.T) {
		_, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "during", nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `failed calling webhook "usher-mutate-`+e.label) {
			t.Errorf("alice creating a pod with usher down: err = %v, want the API server's failure to call usher-mutate-%s", err, e.label)
		}
		if _, err := admin.CoreV1().Pods(ns).Get(ctx, "during", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get pod during: err = %v, want NotFound", err)
		}
	})
	t.Run("deployment create fails closed", func(t *testing.T) {
		_, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "during", 1, nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `failed calling webhook "usher-mutate-`+e.label) {
			t.Errorf("alice creating a deployment with usher down: err = %v, want the API server's failure to call usher-mutate-%s", err, e.label)
		}
	})
	t.Run("pod update fails closed", func(t *testing.T) {
		err := updatePod(ctx, alice, ns, "before", func(p *corev1.Pod) { p.Labels = map[string]string{"tier": "batch"} })
		if err == nil || !strings.Contains(err.Error(), `failed calling webhook "usher-validate-`+e.label) {
			t.Errorf("alice updating a pod with usher down: err = %v, want the API server's failure to call usher-validate-%s", err, e.label)
		}
	})

	if err := e.u.Start(ctx); err != nil {
		t.Fatalf("restarting usher on %s: %v", e.u.Addr, err)
	}
	var last error
	err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, last = alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "after", nil), metav1.CreateOptions{})
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		t.Fatalf("alice creating a pod after usher restarted: %v (last: %v)", err, last)
	}
	p, err := admin.CoreV1().Pods(ns).Get(ctx, "after", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIdentity(t, "the pod created after the restart", p.Annotations, Alice, aliceGroups...)
}

// writeFileAtomic replaces path's content in one rename, so usher never
// reads a half-written file.
func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Scenario 9: a configuration change that breaks the file is refused, the
// old rules keep deciding, /readyz says so (and the log says why); a good
// change is then taken.
func TestUsherRefusesBrokenReload(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	e, ns := setup(t, ctx, baseConfig, "reload")
	asAlice := map[string]string{UserInfoAnnotation: UserInfoJSON(Alice, aliceGroups...)}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	clients := map[string]kubernetes.Interface{Ext: client(t, Ext), Bob: client(t, Bob)}
	forge := func(user string) error {
		_, err := clients[user].CoreV1().Pods(ns).Create(ctx, Pod(ns, "for-alice", asAlice), dry)
		return err
	}
	// The old rules: ext may submit for alice, bob may not.
	oldRules := func(t *testing.T) {
		t.Helper()
		if err := forge(Ext); err != nil {
			t.Errorf("ext (externalUsers ^ext$) submitting for alice: %v", err)
		}
		wantDenied(t, "bob submitting for alice", forge(Bob), `user "bob" may not set annotation`)
	}
	oldRules(t)
	readyz := func() (string, int) {
		body, code, err := e.u.Get(ctx, "/readyz")
		if err != nil {
			return fmt.Sprintf("GET /readyz: %v", err), 0
		}
		return body, code
	}
	if body, _ := readyz(); strings.Contains(body, "failed") {
		t.Fatalf("/readyz before any change: %q", body)
	}

	const trustBob = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: %q
admissionController:
  accessControl:
    externalUsers: "^bob$"
    externalGroups: %q
`
	for _, tc := range []struct {
		name, content, want string
	}{
		{"an invalid regular expression", fmt.Sprintf(trustBob, "*", "(["), `externalGroups[0]: invalid regular expression "(["`},
		{"a YAML syntax error", "partitions: [\n", "YAML"},
		{"an ACL with two spaces", fmt.Sprintf(trustBob, "u1  g1", ""), `submitacl "u1  g1": more than one space`},
		{"a partition that does not exist", fmt.Sprintf(trustBob, "*", "") + "  partition: nope\n  enforceQueueACLs: true\n",
			`admissionController.partition: "nope" names no partition of this configuration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := writeFileAtomic(e.u.ConfigPath, tc.content); err != nil {
				t.Fatal(err)
			}
			// /readyz says that the reload failed; the reason is only in
			// the log (text format: quotes inside a value are escaped).
			inLog := strings.Trim(strconv.Quote(tc.want), `"`)
			var body string
			var code int
			err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
				body, code = readyz()
				log, _ := os.ReadFile(e.u.LogPath)
				return strings.Contains(body, "configuration reload failed") && strings.Contains(string(log), inLog), nil
			})
			if err != nil {
				t.Fatalf("/readyz never reported the refused reload, or the log lacks its reason %q: %q", inLog, body)
			}
			if strings.Contains(body, tc.want) {
				t.Errorf("/readyz echoes the reason of the refusal, which belongs in the log only: %q", body)
			}
			if code != 200 {
				t.Errorf("/readyz answered %d after a refused reload, want 200: the old configuration still serves", code)
			}
			t.Logf("/readyz: %s", strings.TrimSpace(body))
			oldRules(t)
		})
	}

	t.Run("a good change is taken", func(t *testing.T) {
		if err := writeFileAtomic(e.u.ConfigPath, fmt.Sprintf(trustBob, "*", "")); err != nil {
			t.Fatal(err)
		}
		var last error
		err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			last = forge(Bob)
			return last == nil, nil
		})
		if err != nil {
			t.Fatalf("bob submitting for alice after externalUsers became ^bob$: %v", last)
		}
		wantDenied(t, "ext submitting for alice after externalUsers became ^bob$", forge(Ext), `user "ext" may not set annotation`)
		if body, _ := readyz(); strings.Contains(body, "failed") {
			t.Errorf("/readyz after a good reload still reports a refusal: %q", body)
		}
	})
}

// Scenario 10: the deploy/ manifests are accepted by a real API server
// (server-side dry run, as admin). cert-manager.yaml is left out: it needs
// cert-manager's CRDs (Issuer, Certificate), which this cluster does not
// have; kustomization.yaml is kustomize's, not a manifest.
func TestDeployManifestsServerDryRun(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy")
	manifests := []string{"namespace.yaml", "rbac.yaml", "configmap.yaml", "deployment.yaml", "pdb.yaml", "resourcequota.yaml", "service.yaml", "webhooks.yaml"}
	skipped := map[string]string{
		"cert-manager.yaml":  "needs cert-manager's CRDs, which this cluster does not have",
		"kustomization.yaml": "kustomize's list of the manifests, not a manifest",
	}
	all, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		base := filepath.Base(f)
		if _, ok := skipped[base]; !ok && !slices.Contains(manifests, base) {
			t.Errorf("deploy/%s is not dry-run by this test: add it to manifests (or to skipped, with the reason)", base)
		}
	}
	for base, why := range skipped {
		t.Logf("not applied: deploy/%s (%s)", base, why)
	}

	kubectl := func(args ...string) (string, string, error) {
		return cluster.RunKubectl(ctx, Admin, nil, args...)
	}
	dryRun := func(t *testing.T, base string) {
		t.Helper()
		f := filepath.Join(dir, base)
		out, stderr, err := kubectl("apply", "--dry-run=server", "-f", f)
		if err != nil {
			t.Fatalf("kubectl apply --dry-run=server -f deploy/%s: %v\n%s%s", base, err, out, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, l := range lines {
			if !strings.HasSuffix(l, "(server dry run)") {
				t.Errorf("deploy/%s: kubectl printed %q, want every object reported as a server dry run", base, l)
			}
		}
		t.Logf("deploy/%s: %s", base, strings.Join(lines, "; "))
		// Nothing was stored.
		got, stderr, err := kubectl("get", "--ignore-not-found", "-o", "name", "-f", f)
		if err != nil {
			t.Fatalf("kubectl get -f deploy/%s: %v: %s", base, err, stderr)
		}
		if strings.TrimSpace(got) != "" {
			t.Errorf("after the dry run of deploy/%s these exist: %s", base, got)
		}
	}

	// The namespace first, dry, while nothing exists; the namespaced
	// objects need it to exist even for a dry run, so then for real.
	t.Run("namespace.yaml", func(t *testing.T) { dryRun(t, "namespace.yaml") })
	nsFile := filepath.Join(dir, "namespace.yaml")
	if out, stderr, err := kubectl("apply", "-f", nsFile); err != nil {
		t.Fatalf("kubectl apply -f deploy/namespace.yaml: %v\n%s%s", err, out, stderr)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if _, stderr, err := cluster.RunKubectl(ctx, Admin, nil, "delete", "--wait=true", "--timeout=80s", "-f", nsFile); err != nil {
			t.Errorf("deleting deploy/namespace.yaml's namespace: %v: %s", err, stderr)
		}
	})
	for _, base := range manifests[1:] {
		t.Run(base, func(t *testing.T) { dryRun(t, base) })
	}
}
