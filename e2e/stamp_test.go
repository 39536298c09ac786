//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stampConfig merges the groups the API server gives with a
// users-to-groups file's; root.ml is open to the group ml only, root.dev
// to dev (alice's from the API server).
const stampConfig = `# generation %d
partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: file
      file: %s
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: dev
            submitacl: " dev"
          - name: ml
            submitacl: " ml"
admissionController:
  enforceQueueACLs: true
`

// The stamp carries the groups usher decided with, directory groups
// included, on the Deployment alice creates and on the pods the real
// controller manager makes from it; directory groups are a snapshot that
// is looked up again whenever a controller creates a pod: once alice
// leaves ml in the directory, a new pod of her Deployment carries no ml,
// and a queue open only to ml refuses it.
func TestUsherStampDirectoryGroups(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	groups := filepath.Join(t.TempDir(), "groups.txt")
	if err := os.WriteFile(groups, []byte("alice: ml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, ns := setup(t, ctx, fmt.Sprintf(stampConfig, 1, groups), "stamp")
	alice, admin := client(t, Alice), client(t, Admin)

	deployment := func(name, queue string) *appsv1.Deployment {
		d := Deployment(ns, name, 1, nil)
		d.Spec.Template.Labels["queue"] = queue
		return d
	}
	for _, d := range []*appsv1.Deployment{deployment("train", "root.ml"), deployment("web", "root.dev")} {
		if _, err := alice.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatalf("alice creating Deployment %s: %v", d.Name, err)
		}
	}
	stored, err := admin.AppsV1().Deployments(ns).Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	merged := UserInfoJSON(Alice, "dev", "system:authenticated", "ml")
	if got := stored.Spec.Template.Annotations; got[UserInfoAnnotation] != merged || got["usher.io/directory-groups"] != `["ml"]` {
		t.Fatalf("the Deployment's template carries %v, want %s beside [\"ml\"]", got, merged)
	}
	for _, app := range []string{"train", "web"} {
		for _, p := range waitPods(ctx, t, admin, ns, "app="+app, 1, 90*time.Second) {
			if p.Annotations[UserInfoAnnotation] != merged {
				t.Errorf("pod %s (made by the controllers) carries %s, want %s", p.Name, p.Annotations[UserInfoAnnotation], merged)
			}
		}
	}

	// alice leaves ml in the directory. usher reads the users-to-groups
	// file with its configuration: the configuration's change makes it
	// reload both. Her pod to root.ml is refused from then on.
	if err := writeFileAtomic(groups, "alice: research\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(e.u.ConfigPath, fmt.Sprintf(stampConfig, 2, groups)); err != nil {
		t.Fatal(err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	err = Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		p := Pod(ns, "probe", nil)
		p.Labels = map[string]string{"queue": "root.ml"}
		_, err := alice.CoreV1().Pods(ns).Create(ctx, p, dry)
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("usher never reloaded the directory: %v", err)
	}

	for _, app := range []string{"train", "web"} {
		if err := updateDeployment(ctx, alice, ns, app, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr(int32(2)) }); err != nil {
			t.Fatalf("alice scaling %s to 2: %v", app, err)
		}
	}
	// web's queue is open to dev: its new pod is made, stamped with the
	// directory's groups of now.
	now := UserInfoJSON(Alice, "dev", "system:authenticated", "research")
	var fresh int
	for _, p := range waitPods(ctx, t, admin, ns, "app=web", 2, 90*time.Second) {
		info, _, _ := UserInfo(p.Annotations)
		if slices.Contains(info.Groups, "ml") {
			continue // the pod made before alice left ml
		}
		fresh++
		if p.Annotations[UserInfoAnnotation] != now || p.Annotations["usher.io/directory-groups"] != `["research"]` {
			t.Errorf("new pod %s carries %v, want %s beside [\"research\"]", p.Name, p.Annotations, now)
		}
	}
	if fresh != 1 {
		t.Errorf("%d pods of web without ml, want the one made after alice left ml", fresh)
	}
	// train's queue is open to ml only: its new pod is refused, and the
	// ReplicaSet controller says why.
	rss, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=train"})
	if err != nil || len(rss.Items) != 1 {
		t.Fatalf("ReplicaSets of train: %v %v", rss, err)
	}
	wantEvent(ctx, t, admin, ns, "ReplicaSet", rss.Items[0].Name, "FailedCreate", `user "alice" may not submit to queue "root.ml"`)
	if l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=train"}); err != nil || len(l.Items) != 1 {
		t.Errorf("train has %d pods, want only the one made before alice left ml (%v)", len(l.Items), err)
	}
}
