//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/hack/slapdtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tutorialStep is one command of a console block of docs/tutorial.md and
// the output the page shows for it.
type tutorialStep struct {
	line     int // of the command, from 1
	from, to int // the output's lines, [from, to) from 0
	cmd, out string
}

// updateTutorial rewrites the outputs of docs/tutorial.md with what the
// commands print, for a change of output that is meant:
// bash hack/e2e.sh -run TestTutorial -update-tutorial (then read the diff).
var updateTutorial = flag.Bool("update-tutorial", false, "write the outputs the commands print into docs/tutorial.md")

// tutorialSteps reads the console blocks of a Markdown page: a line
// "$ CMD" (continued by lines ending in a backslash) is a command, the
// lines after it up to the next command or the end of the block its
// output.
func tutorialSteps(page string) []tutorialStep {
	var steps []tutorialStep
	in, cont := false, false
	for i, l := range strings.Split(page, "\n") {
		switch {
		case !in && l == "```console":
			in = true
		case in && l == "```":
			in = false
		case in && cont:
			steps[len(steps)-1].cmd += "\n" + l
			steps[len(steps)-1].from, steps[len(steps)-1].to = i+1, i+1
			cont = strings.HasSuffix(l, `\`)
		case in && strings.HasPrefix(l, "$ "):
			steps = append(steps, tutorialStep{line: i + 1, from: i + 1, to: i + 1, cmd: l[2:]})
			cont = strings.HasSuffix(l, `\`)
		case in && len(steps) > 0:
			steps[len(steps)-1].out += l + "\n"
			steps[len(steps)-1].to = i + 1
		}
	}
	return steps
}

// tutorialVaries is what differs from one run to the next.
var tutorialVaries = regexp.MustCompile(`(?m)^LAST DEPLOYED: .*$`)

// normalOutput is out without what varies and trailing blanks.
func normalOutput(out string) string {
	out = tutorialVaries.ReplaceAllString(out, "LAST DEPLOYED: (date)")
	lines := strings.Split(strings.TrimRight(out, "\n "), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// TestTutorial follows docs/tutorial.md: it runs every command of the
// page's console blocks, in order, with kubectl, helm and usher on PATH and
// the cluster's admin kubeconfig, in a directory holding the repository's
// examples/ and deploy/ (and OpenLDAP's slapd, on a port of its own, as
// the directory of examples/tutorial/ldap.yaml), and requires the output the page shows (stdout
// and stderr; the helm release date aside). So the page cannot go stale:
// the chart install, the allowed pod and the denial as the tenant sees it,
// the policy tests, the users-to-groups file, LDAP and the pictures.
//
// The pods of this control plane run nowhere (KWOK fakes them), so the
// replicas the chart installs never run and never register the webhooks. Before the first command that acts
// as a tenant (kubectl --as), the test stands in for them: usher serve on
// 127.0.0.1 with the ConfigMap the chart installed, and the webhooks
// `usher webhook` prints for it, pointed at that address (the
// usher-namespaces condition keeps them to namespace tutorial, so the
// other tests' namespaces are untouched).
//
// Not parallel: the page installs the chart as release usher, whose
// cluster-scoped objects (ClusterRoles, admission policies) are the ones
// the chart's and the manifests' dry runs name; it runs, and uninstalls,
// before the parallel tests start.
func TestTutorial(t *testing.T) {
	ctx := ctxFor(t, 5*time.Minute)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := tutorialSteps(string(page))
	if len(steps) < 10 {
		t.Fatalf("docs/tutorial.md has %d console commands", len(steps))
	}
	usher, err := BuildUsher()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	bin, dir := t.TempDir(), t.TempDir()
	for name, target := range map[string]string{
		filepath.Join(bin, "usher"): usher, filepath.Join(bin, "kubectl"): cluster.Kubectl,
		filepath.Join(bin, "helm"): helmPath(ctx, t, root), filepath.Join(dir, "deploy"): filepath.Join(root, "deploy"),
	} {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	// The directory of examples/tutorial/ldap.yaml: slapd holding
	// people.ldif, its address in the file, its CA and usher's password
	// beside it.
	examples := filepath.Join(dir, "examples")
	if err := os.CopyFS(examples, os.DirFS(filepath.Join(root, "examples"))); err != nil {
		t.Fatal(err)
	}
	ldap := slapdtest.New(t)
	ldif, err := os.ReadFile(filepath.Join(examples, "tutorial", "people.ldif"))
	if err != nil {
		t.Fatal(err)
	}
	ldap.AddLDIF(t, string(ldif))
	ldapYAML, err := os.ReadFile(filepath.Join(examples, "tutorial", "ldap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	password, err := os.ReadFile(ldap.ServicePasswordFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"ldap.yaml": bytes.Replace(ldapYAML, []byte("ldap://localhost:389"), []byte(ldap.URL), 1), "ldap-ca.pem": ldap.CAPEM, "ldap-password": password,
	} {
		if err := os.WriteFile(filepath.Join(examples, "tutorial", name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig, "HOME="+dir)
	run := func(cmd string) string {
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Dir, c.Env = dir, env
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		c.Run() // the page shows the failures it means (a denial, a failing test)
		return strings.ReplaceAll(out.String(), ldap.URL, "ldap://localhost:389")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, "bash", "-c", "helm uninstall usher --namespace usher-system --ignore-not-found; "+
			"kubectl delete namespace tutorial usher-system --ignore-not-found --wait=false")
		c.Dir, c.Env = dir, env
		if out, err := c.CombinedOutput(); err != nil {
			t.Logf("cleanup: %v\n%s", err, out)
		}
	})

	standIn := false
	got := make([]string, len(steps))
	for i, s := range steps {
		if !standIn && strings.HasPrefix(s.cmd, "kubectl --as ") {
			standInForReplicas(t, ctx, usher)
			standIn = true
		}
		got[i] = run(s.cmd)
		if normalOutput(got[i]) != normalOutput(s.out) && !*updateTutorial {
			t.Errorf("docs/tutorial.md:%d: $ %s\nthe page shows:\n%s\nthe command printed:\n%s", s.line, s.cmd, s.out, got[i])
		}
	}
	if !standIn {
		t.Error("docs/tutorial.md has no command run as a tenant (kubectl --as)")
	}
	// A mermaid block draws what the last command before it printed.
	drawn, lines := 0, strings.Split(string(page), "\n")
	for i, l := range lines {
		if l != "```mermaid" {
			continue
		}
		end := slices.Index(lines[i:], "```")
		last := slices.IndexFunc(steps, func(s tutorialStep) bool { return s.line > i })
		if last < 0 {
			last = len(steps)
		}
		last--
		if drawn++; end < 0 || last < 0 || normalOutput(strings.Join(lines[i+1:i+end], "\n")) != normalOutput(got[last]) {
			t.Errorf("docs/tutorial.md:%d: the mermaid block is not what the command before it prints", i+1)
		}
	}
	if drawn == 0 {
		t.Error("docs/tutorial.md draws no picture (a mermaid block)")
	}
	if *updateTutorial {
		for i := len(steps) - 1; i >= 0; i-- {
			out := strings.Split(strings.TrimRight(got[i], "\n"), "\n")
			if got[i] == "" {
				out = nil
			}
			lines = append(lines[:steps[i].from], append(out, lines[steps[i].to:]...)...)
		}
		if err := os.WriteFile(filepath.Join(root, "docs", "tutorial.md"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// standInForReplicas serves the ConfigMap the chart installed in
// usher-system with usher on 127.0.0.1 and registers the webhooks usher
// webhook prints for it (as the replicas would), then waits until a tenant's
// pod in namespace tutorial comes back stamped.
func standInForReplicas(t *testing.T, ctx context.Context, usher string) {
	t.Helper()
	cm, errOut, err := cluster.RunKubectl(ctx, Admin, nil, "--namespace", "usher-system", "get", "configmap", "usher-config", "-o", "yaml")
	if err != nil {
		t.Fatalf("the chart's ConfigMap: %v\n%s", err, errOut)
	}
	e := startUsher(t, ctx, cm)
	hooks, err := exec.CommandContext(ctx, usher, "webhook", "--config", e.u.ConfigPath, "--name", "usher-tutorial",
		"--url", e.u.URL(), "--ca-bundle-file", cluster.CAFile).Output()
	if err != nil {
		t.Fatalf("usher webhook: %v", err)
	}
	t.Cleanup(func() { // before usher stops
		_, errOut, err := cluster.RunKubectl(context.Background(), Admin, nil, "delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration",
			"usher-tutorial", "--ignore-not-found")
		if err != nil {
			t.Errorf("deleting the webhooks: %v\n%s", err, errOut)
		}
	})
	if out, errOut, err := cluster.RunKubectl(ctx, Admin, hooks, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of usher webhook's output: %v\n%s%s", err, out, errOut)
	}
	alice := client(t, Alice)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pod := Pod("tutorial", "usher-probe", nil)
		pod.Labels = map[string]string{"queue": "root.sandbox"}
		p, err := alice.CoreV1().Pods("tutorial").Create(ctx, pod, dry)
		if last = err; err != nil {
			return false, nil
		}
		info, ok, _ := UserInfo(p.Annotations)
		return ok && info.User == Alice, nil
	})
	if err != nil {
		t.Fatalf("usher's webhooks never took effect in namespace tutorial (last dry run: %v): %v", last, err)
	}
}
