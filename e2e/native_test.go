//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/usherhq/usher/admission/settings"
)

const floorLabel = "usher-e2e/floor"

// nativeConfig stamps the groups the API server gives (groups: given, the
// default), so that the floor stamps.
const nativeConfig = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
`

// installFloor renders the floor with usher native and applies it, its
// bindings narrowed to namespaces labelled floorLabel=label and its names
// made unique, then waits until it acts in probeNS: bob's forged stamp is
// refused and, where the floor stamps, alice's pod is stamped.
func installFloor(t *testing.T, ctx context.Context, config, label, probeNS string) {
	t.Helper()
	bin, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "native", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("usher native: %v", err)
	}
	docs := strings.Split(string(out), "\n---\n")
	objs := []any{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}}
	if len(docs) != 2 && len(docs) != 4 {
		t.Fatalf("usher native printed %d documents, want 2 (guarding only) or 4", len(docs))
	}
	stamps := len(docs) == 4
	objs = objs[:len(docs)]
	name := "usher-floor-" + label
	only := &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{floorLabel: label}}}
	reg := client(t, Admin).AdmissionregistrationV1()
	for i, o := range objs {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), o); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		o.(metav1.Object).SetName(name)
		switch o := o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			_, err = reg.ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			o.Spec.PolicyName, o.Spec.MatchResources = name, only
			_, err = reg.ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.MutatingAdmissionPolicy:
			_, err = reg.MutatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			o.Spec.PolicyName, o.Spec.MatchResources = name, only
			_, err = reg.MutatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{
			reg.MutatingAdmissionPolicyBindings().Delete, reg.MutatingAdmissionPolicies().Delete,
			reg.ValidatingAdmissionPolicyBindings().Delete, reg.ValidatingAdmissionPolicies().Delete,
		} {
			if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})
	// The API server compiles new policies asynchronously: dry runs until
	// each acts.
	alice, bob := client(t, Alice), client(t, Bob)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	want := stampOf(Alice, aliceGroups...)
	var last error
	err = Eventually(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		_, forged := bob.CoreV1().Pods(probeNS).Create(ctx, Pod(probeNS, "floor-probe", map[string]string{UserInfoAnnotation: want}), dry)
		if forged == nil || !strings.Contains(forged.Error(), "usher floor") {
			return false, nil
		}
		if !stamps {
			return true, nil
		}
		var p *corev1.Pod
		p, last = alice.CoreV1().Pods(probeNS).Create(ctx, Pod(probeNS, "floor-probe", nil), dry)
		return last == nil && p.Annotations[UserInfoAnnotation] == want, nil
	})
	if err != nil {
		t.Fatalf("the floor never took effect in %s (last: %v): %v", probeNS, last, err)
	}
}

// stampOf is the stamp the webhook writes for user and groups.
func stampOf(user string, groups ...string) string {
	return string(settings.AppendUserInfo(nil, user, groups))
}

func floorNamespace(t *testing.T, ctx context.Context, labels map[string]string) string {
	t.Helper()
	ns, err := cluster.NewNamespace(ctx, "floor", labels)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client(t, Admin).CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	return ns
}

func wantFloorDenied(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "usher floor") {
		t.Errorf("%s: %v, want it refused by the usher floor", what, err)
	}
}

// With no usher webhook and only the floor usher native prints, alice's
// pod and Deployment are stamped with her identity in the webhook's bytes,
// the pods the controllers make keep the template's stamp, and bob can
// neither forge, change nor remove it through pods, templates or status.
func TestNativeFloorAlone(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	label := fmt.Sprintf("f%d", time.Now().UnixNano()%1e9)
	ns := floorNamespace(t, ctx, map[string]string{floorLabel: label})
	installFloor(t, ctx, nativeConfig, label, ns)
	alice, bob, admin := client(t, Alice), client(t, Bob), client(t, Admin)
	want := stampOf(Alice, aliceGroups...)

	p, err := alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, "mine", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Annotations[UserInfoAnnotation]; got != want {
		t.Errorf("alice's pod carries %q, want %q", got, want)
	}
	if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "web", 2, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations[UserInfoAnnotation]; got != want {
		t.Errorf("alice's Deployment template carries %q, want %q", got, want)
	}
	for _, pod := range waitPods(ctx, t, admin, ns, "app=web", 2, 90*time.Second) {
		if got := pod.Annotations[UserInfoAnnotation]; got != want {
			t.Errorf("pod %s made by the ReplicaSet controller carries %q, want the template's %q", pod.Name, got, want)
		}
	}

	// Forged, on a pod and on a template; a case variant.
	_, err = bob.CoreV1().Pods(ns).Create(ctx, Pod(ns, "forged", map[string]string{UserInfoAnnotation: want}), metav1.CreateOptions{})
	wantFloorDenied(t, "bob's pod naming alice", err)
	_, err = bob.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "forged", 1, map[string]string{UserInfoAnnotation: want}), metav1.CreateOptions{})
	wantFloorDenied(t, "bob's Deployment template naming alice", err)
	_, err = bob.CoreV1().Pods(ns).Create(ctx, Pod(ns, "variant", map[string]string{UserInfoAnnotation: `{"user":"bob","User":"alice"}`}), metav1.CreateOptions{})
	wantFloorDenied(t, "bob's case-variant stamp", err)

	// Changed or removed on UPDATE, through the pod, the template and status.
	edit := func(what string, update func(*corev1.Pod) (*corev1.Pod, error), change func(map[string]string)) {
		pod, err := admin.CoreV1().Pods(ns).Get(ctx, "mine", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(pod.Annotations)
		_, err = update(pod)
		wantFloorDenied(t, what, err)
	}
	update := func(c kubernetes.Interface) func(*corev1.Pod) (*corev1.Pod, error) {
		return func(p *corev1.Pod) (*corev1.Pod, error) {
			return c.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		}
	}
	edit("bob changing the pod's stamp", update(bob), func(a map[string]string) { a[UserInfoAnnotation] = stampOf(Bob, "ops") })
	edit("bob removing the pod's stamp", update(bob), func(a map[string]string) { delete(a, UserInfoAnnotation) })
	edit("admin changing the pod's stamp", update(admin), func(a map[string]string) { a[UserInfoAnnotation] = stampOf(Bob) })
	edit("admin changing it through status", func(p *corev1.Pod) (*corev1.Pod, error) {
		return admin.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}, func(a map[string]string) { a[UserInfoAnnotation] = stampOf(Bob) })
	for what, change := range map[string]func(map[string]string){
		"bob changing the Deployment template's stamp": func(a map[string]string) { a[UserInfoAnnotation] = stampOf(Bob, "ops") },
		"bob removing the Deployment template's stamp": func(a map[string]string) { delete(a, UserInfoAnnotation) },
	} {
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(d.Spec.Template.Annotations)
		_, err = bob.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		wantFloorDenied(t, what, err)
	}
}

// With both the webhook and the floor, the stamps and decisions equal the
// webhook's alone on a corpus of requesters (impersonated names with
// characters the encoding escapes) and objects.
func TestNativeFloorWithWebhook(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	e := startUsher(t, ctx, nativeConfig)
	alone := e.namespace(ctx, "webhook")
	label := fmt.Sprintf("f%d", time.Now().UnixNano()%1e9)
	both := floorNamespace(t, ctx, map[string]string{floorLabel: label})
	installFloor(t, ctx, nativeConfig, label, both)
	e.register(ctx, alone)
	admin := client(t, Admin)
	nsObj, err := admin.CoreV1().Namespaces().Get(ctx, both, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels[usherNSLabel] = e.label
	if _, err := admin.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The floor alone refuses alice's own stamp with other groups; the
	// webhook replaces it with hers, which the floor then admits.
	own := map[string]string{UserInfoAnnotation: stampOf(Alice, "other")}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := client(t, Alice).CoreV1().Pods(both).Create(ctx, Pod(both, "both-probe", own), dry)
		return err == nil && p.Annotations[UserInfoAnnotation] == stampOf(Alice, aliceGroups...), nil
	})
	if err != nil {
		t.Fatalf("usher's webhook never took effect in %s beside the floor: %v", both, err)
	}

	type requester struct {
		user   string
		groups []string
	}
	corpus := []requester{{Alice, nil}, {Bob, nil}}
	for _, odd := range []string{"zoë", "a<b>&c", "line\u2028sep\u2029", `quo"te\back`, "tab\tname", "日本語", strings.Repeat("long", 500)} {
		corpus = append(corpus, requester{odd, []string{"system:masters", odd + "-group", "<g>"}})
	}
	for i, r := range corpus {
		var c kubernetes.Interface
		if r.groups == nil {
			c = client(t, r.user)
		} else if c, err = cluster.ClientAs(Admin, r.user, r.groups...); err != nil {
			t.Fatal(err)
		}
		objects := []struct {
			name string
			ann  map[string]string
		}{{"plain", nil}, {"alices", map[string]string{UserInfoAnnotation: stampOf(Alice, aliceGroups...)}}, {"variant", map[string]string{UserInfoAnnotation: `{"User":"alice"}`}},
			{"own", map[string]string{UserInfoAnnotation: stampOf(r.user, "other")}}}
		for _, o := range objects {
			var got [2]string
			var errs [2]error
			for j, ns := range []string{alone, both} {
				p, err := c.CoreV1().Pods(ns).Create(ctx, Pod(ns, fmt.Sprintf("r%d-%s", i, o.name), o.ann), metav1.CreateOptions{})
				if errs[j] = err; err == nil {
					got[j] = p.Annotations[UserInfoAnnotation]
				}
			}
			if o.name == "plain" && (errs[0] != nil || !strings.HasPrefix(got[0], stampOf(r.user)[:len(stampOf(r.user))-3])) {
				t.Errorf("%q creating pod %s: %v, stamp %q", r.user, o.name, errs[0], got[0])
			}
			if got[0] != got[1] || (errs[0] == nil) != (errs[1] == nil) {
				t.Errorf("%q creating pod %s: webhook alone %q (%v), with the floor %q (%v)", r.user, o.name, got[0], errs[0], got[1], errs[1])
			}
		}
	}
}

// TestNativeGuardOnlyRefusesForgery: where the floor guards only (the
// partition's groups are the directory's), bob's stamp must name him
// canonically with exactly its two members, so a later duplicate or a
// case-variant member, which a JSON reader such as YuniKorn's takes, does
// not name alice. (Groups the floor cannot check: docs/native.md.)
func TestNativeGuardOnlyRefusesForgery(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	label := fmt.Sprintf("g%d", time.Now().UnixNano()%1e9)
	ns := floorNamespace(t, ctx, map[string]string{floorLabel: label})
	installFloor(t, ctx, strings.Replace(nativeConfig, "  - name: default\n", "  - name: default\n    groups: merge\n", 1), label, ns)
	bob := client(t, Bob)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, s := range []string{`{"user":"bob","groups":[],"user":"alice"}`, `{"user":"bob","groups":[],"User":"alice","Groups":["system:masters"]}`} {
		_, err := bob.CoreV1().Pods(ns).Create(ctx, Pod(ns, "forged", map[string]string{UserInfoAnnotation: s}), dry)
		wantFloorDenied(t, "bob's pod stamped "+s, err)
	}
}

// TestNativeBigStamp: alice with 1,400 groups (a 40 KiB stamp, within the
// webhook's 64 KiB) creates a Deployment with only the floor installed,
// and the ReplicaSet controller, copying the template's stamp, makes its
// pod: the floor does not parse a trusted setter's stamp past what its CEL
// cost limit allows.
func TestNativeBigStamp(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	label := fmt.Sprintf("b%d", time.Now().UnixNano()%1e9)
	ns := floorNamespace(t, ctx, map[string]string{floorLabel: label})
	installFloor(t, ctx, nativeConfig, label, ns)
	groups := make([]string, 1400)
	for i := range groups {
		groups[i] = fmt.Sprintf("corp-engineering-team-%04d", i)
	}
	alice, err := cluster.ClientAs(Admin, Alice, groups...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "big", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice's Deployment: %v", err)
	}
	admin := client(t, Admin)
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=big"})
		return err == nil && len(pods.Items) > 0, nil
	}); err != nil {
		evs, _ := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
		t.Fatalf("no pod of alice's Deployment was made (%v): %v", err, evs)
	}
}
