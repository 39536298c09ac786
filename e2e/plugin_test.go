//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// pluginConfig gives alice (group dev) and bob (group ops) different
// rights, and a directory (a users-to-groups file, merged with the groups
// the API server gives) that adds alice to ml and bob to oncall.
const pluginConfig = `partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: file
      file: %s
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: dev
            submitacl: " dev"
          - name: ops
            submitacl: " ops"
            adminacl: bob
          - name: ml
            submitacl: " ml"
admissionController:
  enforceQueueACLs: true
`

const pluginGroups = `alice: ml
bob: oncall
admin: platform
`

// TestPlugin runs the four commands of kubectl usher through the real
// kubectl (which finds the plugin on PATH) as alice and bob, with their own
// kubeconfigs (token-file users): usher authenticates them with a
// TokenReview and lets each ask only about itself, unless bound to
// usher-access-reviewer (carol) or in system:masters (admin).
func TestPlugin(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	if _, err := BuildPlugin(); err != nil {
		t.Fatal(err)
	}
	roles := shippedClusterRoles(t)
	e := &usherEnv{t: t, label: fmt.Sprintf("p%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1)), admin: client(t, Admin)}
	ns := e.namespace(ctx, "plugin")
	kubeconfig := usherServiceAccount(t, ctx, e, ns, t.TempDir())
	bindShipped(t, ctx, e, roles, "usher-access-reviewer", Carol)
	groups := filepath.Join(t.TempDir(), "groups.txt")
	if err := os.WriteFile(groups, []byte(pluginGroups), 0o644); err != nil {
		t.Fatal(err)
	}
	label := e.label
	e = startUsherWith(t, ctx, fmt.Sprintf(pluginConfig, groups), "--access-auth", "kubernetes", "--kubeconfig", kubeconfig, "--access-auth-cache-ttl", "1s")
	e.label = label
	e.register(ctx, ns)

	// The plugin reaches usher directly (the e2e usher listens on
	// 127.0.0.1, which the API server's service proxy does not reach), and
	// checks usher's certificate against the cluster's CA.
	env := []string{"KUBECTL_USHER_SERVER=" + e.u.URL(), "KUBECTL_USHER_CERTIFICATE_AUTHORITY=" + cluster.CAFile}
	type result struct {
		out, errOut string
		code        int
	}
	run := func(t *testing.T, user string, stdin []byte, args ...string) result {
		t.Helper()
		out, errOut, code, err := cluster.RunPlugin(ctx, user, stdin, env, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: kubectl usher %s -> exit %d\n%s%s", user, strings.Join(args, " "), code, out, errOut)
		return result{out, errOut, code}
	}
	want := func(t *testing.T, r result, code int, wants ...string) {
		t.Helper()
		if r.code != code {
			t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.out, r.errOut)
		}
		for _, w := range wants {
			if !strings.Contains(r.out+r.errOut, w) {
				t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", w, r.out, r.errOut)
			}
		}
	}

	t.Run("whoami", func(t *testing.T) {
		want(t, run(t, Alice, nil, "whoami"), 0, "user:    alice", "dev, system:authenticated", "ml", "file (usher's directory)", "given (by the API server)")
		r := run(t, Bob, nil, "whoami", "-o", "json")
		want(t, r, 0)
		var got struct {
			Kubernetes struct {
				User   string   `json:"user"`
				Groups []string `json:"groups"`
			} `json:"kubernetes"`
			Usher struct {
				User   string `json:"user"`
				Groups []struct{ Name, Source string }
			} `json:"usher"`
			Partition string `json:"partition"`
		}
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		sources := map[string]string{}
		for _, g := range got.Usher.Groups {
			sources[g.Name] = g.Source
		}
		if got.Kubernetes.User != Bob || strings.Join(got.Kubernetes.Groups, ",") != "ops,system:authenticated" || got.Usher.User != Bob ||
			sources["ops"] != "given" || sources["oncall"] != "file" || got.Partition != "default" {
			t.Fatalf("bob's whoami: %+v", got)
		}
	})

	t.Run("can-i exit codes", func(t *testing.T) {
		want(t, run(t, Alice, nil, "can-i", "submit", "root.dev"), 0, "yes")
		want(t, run(t, Alice, nil, "can-i", "submit", "root.ml"), 0, "yes") // through the directory's group
		want(t, run(t, Alice, nil, "can-i", "submit", "root.ops"), 1, "no")
		want(t, run(t, Bob, nil, "can-i", "submit", "root.ops"), 0, "yes")
		want(t, run(t, Bob, nil, "can-i", "submit", "root.dev"), 1, "no")
		want(t, run(t, Bob, nil, "can-i", "admin", "root.ops"), 0, "yes")
		want(t, run(t, Alice, nil, "can-i", "admin", "root.ops"), 1, "no")
		r := run(t, Alice, nil, "can-i", "submit", "root.ops", "-q")
		want(t, r, 1)
		if r.out != "" {
			t.Errorf("-q printed %q", r.out)
		}
		want(t, run(t, Alice, nil, "can-i", "submit", "root.dev", "--explain"), 0, "yes", `decided by: group entry "dev" in submitacl of root.dev`, "trail:")
		// The application actions: bob administers root.ops, so he may
		// kill alice's application there; alice may not kill bob's.
		want(t, run(t, Bob, nil, "can-i", "kill", "root.ops", "--owner", Alice), 0, "yes")
		want(t, run(t, Alice, nil, "can-i", "kill", "root.ops", "--owner", Bob), 1, "no")
		// A pod labelled for a queue that does not exist is placed
		// nowhere: no. Errors are 2: an unknown queue asked about (usher
		// says 400, with the closest name), a bad action, bad usage.
		want(t, run(t, Alice, nil, "can-i", "submit", "root.dve", "--explain"), 1, "no", "root.dve does not exist and create is false")
		want(t, run(t, Alice, nil, "can-i", "admin", "root.dve"), 2, "root.dev")
		want(t, run(t, Alice, nil, "can-i", "fly", "root.dev"), 2, `action "fly"`)
		want(t, run(t, Alice, nil, "can-i", "submit"), 2, "accepts 2 arg(s)")
	})

	t.Run("can-i --as", func(t *testing.T) {
		// alice may not ask about bob: usher refuses her (403) without
		// the accessreviews permission.
		want(t, run(t, Alice, nil, "can-i", "submit", "root.ops", "--as", Bob, "--as-group", "ops"), 2, "403", "accessreviews")
		want(t, run(t, Alice, nil, "queues", "--as", Bob), 2, "403")
		// admin (system:masters) may; so may carol, bound to the shipped
		// ClusterRole usher-access-reviewer.
		want(t, run(t, Admin, nil, "can-i", "submit", "root.ops", "--as", Bob, "--as-group", "ops"), 0, "yes")
		want(t, run(t, Admin, nil, "can-i", "submit", "root.ops", "--as", Alice, "--as-group", "dev"), 1, "no")
		var r result
		if err := Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
			r = run(t, Carol, nil, "can-i", "submit", "root.ops", "--as", Bob, "--as-group", "ops")
			return r.code == 0, nil
		}); err != nil {
			t.Fatalf("carol, usher-access-reviewer, about bob: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		want(t, run(t, Admin, nil, "whoami", "--as", Bob, "--as-group", "ops"), 0, "asked about (--as)", "oncall")
	})

	t.Run("queues", func(t *testing.T) {
		want(t, run(t, Alice, nil, "queues"), 0, "partition default, user alice", "├── dev", "└── ml", "QUEUE")
		for _, format := range []string{"json", "yaml"} {
			r := run(t, Alice, nil, "queues", "-o", format)
			want(t, r, 0)
			var got struct {
				Partition string `json:"partition"`
				Queues    []struct {
					Queue  string `json:"queue"`
					Submit bool   `json:"submit"`
					Admin  bool   `json:"admin"`
				} `json:"queues"`
			}
			if err := yaml.Unmarshal([]byte(r.out), &got); err != nil {
				t.Fatalf("%s: %v\n%s", format, err, r.out)
			}
			rights := map[string]bool{}
			for _, q := range got.Queues {
				rights[q.Queue] = q.Submit
			}
			if len(got.Queues) != 4 || !rights["root.dev"] || !rights["root.ml"] || rights["root.ops"] || rights["root"] {
				t.Fatalf("%s: alice's queues %+v", format, got)
			}
		}
		r := run(t, Bob, nil, "queues", "-o", "json")
		if r.code != 0 || !strings.Contains(r.out, `"queue": "root.ops"`) || !strings.Contains(r.out, `"admin": true`) {
			t.Fatalf("bob's queues: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		want(t, run(t, Alice, nil, "queues", "-o", "xml"), 2, `--output "xml"`)
	})

	job := func(name, queue string) []byte {
		return fmt.Appendf(nil, `apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
spec:
  template:
    metadata:
      labels:
        queue: %s
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: %s
`, name, ns, queue, Image)
	}
	t.Run("why", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "job.yaml")
		if err := os.WriteFile(file, job("alice-to-ops", "root.ops"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, Alice, nil, "why", "-f", file)
		want(t, r, 1, "Job "+ns+"/alice-to-ops", "admission (server-side dry run): refused",
			`user "alice" may not submit to queue "root.ops"`, `queue marker: label queue="root.ops" on the pod template`,
			"placement: rejected", "usher's decision for alice: denied", "trail:", "placement rule 1 provided: denied root.ops")
		r = run(t, Alice, job("alice-to-dev", "root.dev"), "why", "-f", "-", "-o", "json")
		want(t, r, 0)
		var got struct {
			Objects []struct {
				Kind, Namespace, Name string
				DryRun                struct{ Admitted bool }
				Decision              struct {
					Allowed   bool
					Placement struct {
						Placed bool
						Queue  string
						Rule   string
					}
					Trail struct {
						Placement []struct{ Outcome string }
						ACLs      []struct{ Matched bool }
					}
				}
			}
		}
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if len(got.Objects) != 1 {
			t.Fatalf("objects: %s", r.out)
		}
		o := got.Objects[0]
		if o.Kind != "Job" || o.Namespace != ns || !o.DryRun.Admitted || !o.Decision.Allowed || o.Decision.Placement.Queue != "root.dev" ||
			!strings.Contains(o.Decision.Placement.Rule, "provided") || len(o.Decision.Trail.Placement) == 0 || len(o.Decision.Trail.ACLs) == 0 {
			t.Fatalf("alice's Job to dev: %+v\n%s", o, r.out)
		}
		// bob may use ops: the same manifest is admitted for him.
		want(t, run(t, Bob, nil, "why", "-f", file), 0, "admitted", "placement: root.ops (rule 1: provided)", `root.ops submitacl " ops": matched group ops`)
		// A dry run stores nothing.
		for _, name := range []string{"alice-to-ops", "alice-to-dev"} {
			if _, err := e.admin.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("job %s: err = %v, want NotFound (a dry run)", name, err)
			}
		}
		// --as in a dry run is impersonation, which the API server checks:
		// alice may not impersonate bob; admin may.
		want(t, run(t, Alice, nil, "why", "-f", file, "--as", Bob, "--as-group", "ops"), 2, "impersonate")
		want(t, run(t, Admin, nil, "why", "-f", file, "--as", Bob, "--as-group", "ops"), 0, "admitted", "usher's decision for bob: allowed")
	})
}
