package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/cmd/usher/cli"
)

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: noEnv}, args)
	return out.String(), errb.String(), code
}

const yunikornACL = "../../../examples/yunikorn-acl.yaml"

// The stories of the YuniKorn ACL page, through the command line.
func TestCheckYuniKornACLExample(t *testing.T) {
	tests := []struct {
		args []string
		code int
		line string
	}{
		{[]string{"--queue", "root.test", "--user", "sue", "--action", "admin"}, 0, "allowed"},
		{[]string{"--queue", "root.test", "--user", "john", "--groups", "dev", "--action", "admin"}, 0, "allowed"},
		{[]string{"--queue", "root.test", "--user", "bob", "--groups", "ops", "--action", "admin"}, 1, "denied"},
		{[]string{"--queue", "root.test", "--user", "bob", "--groups", "test", "--action", "admin"}, 0, "allowed"},
		{[]string{"--queue", "root.test", "--user", "bob"}, 0, "allowed"},
		{[]string{"--queue", "root.product", "--user", "sue"}, 1, "denied"},
		{[]string{"--queue", "root.product", "--user", "pat", "--groups", "product"}, 0, "allowed"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errs, code := run(t, append([]string{"check", "--config", yunikornACL}, tt.args...)...)
			if code != tt.code || strings.SplitN(out, "\n", 2)[0] != tt.line {
				t.Fatalf("code %d out %q err %q", code, out, errs)
			}
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 {
				t.Fatalf("want the decision and a reason, got %q", out)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"check", "--config", yunikornACL, "--queue", "root.test"}, "--user is required"},
		{[]string{"check", "--config", yunikornACL, "--user", "a", "--action", "delete"}, `unknown action "delete"`},
		{[]string{"check", "--config", yunikornACL, "--user", "a", "--queue", "root.nope"}, `unknown queue`},
		{[]string{"check", "--config", yunikornACL, "--user", "a", "--partition", "gpu"}, `unknown partition`},
		{[]string{"check", "--config", "../../../examples/broken.yaml", "--user", "a"}, "invalid configuration"},
		{[]string{"check", "--config", "/nonexistent.yaml", "--user", "a"}, "no such file"},
		{[]string{"check", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"check", "--user", "a", "extra"}, `unexpected argument "extra"`},
		{[]string{"check", "--user", "a", "--groups", "ok,not ok"}, "whitespace"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"lint"}, "want at least one PATH"},
		{[]string{"serve", "--validate-config-warnings", "warn"}, `--validate-config-warnings "warn": want admit or refuse`},
		{[]string{"access", "--user", "a", "-o", "xml"}, `want text, json or yaml, not "xml"`},
		{[]string{"check", "--user", "a", "-o", "xml"}, `want text, json or yaml, not "xml"`},
		{[]string{"explain", "--user", "a", "--output", "csv"}, `want text, json or yaml`},
		{[]string{"place", "--user", "a", "-o", "tree"}, `want text, json or yaml`},
		{[]string{"app", "--user", "a", "--owner", "b", "--action", "view", "-o", ""}, `want text, json or yaml`},
		{[]string{"serve", "--access-auth", "token"}, `--access-auth "token"`},
		{[]string{"serve", "--access-auth", "none,kubernetes"}, "cannot be combined"},
		{[]string{"serve", "--access-auth", "client-cert"}, "needs --client-ca"},
		{[]string{"serve", "--access-auth", "kubernetes", "--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
		{[]string{"serve", "--access-auth-cache-ttl", "0s"}, "positive duration"},
		{[]string{"serve", "--body-memory", "lots"}, `--body-memory "lots": want a quantity`},
		{[]string{"serve", "--body-memory", "0"}, `--body-memory "0": want a quantity`},
		{[]string{"serve", "--memory-limit", "-1Mi"}, `--memory-limit "-1Mi": want a quantity`},
		{[]string{"serve", "--config-map", "usher-config"}, `"usher-config": want NAMESPACE/NAME`},
		{[]string{"serve", "--config-map", "a/b,a/"}, `"a/": want NAMESPACE/NAME`},
		{[]string{"serve", "--config", yunikornACL, "--config-map", "a/b"}, "give --config or --config-map, not both"},
		{[]string{"serve", "--config-map", "a/b", "--config-map", "a/b"}, "given twice"},
		{[]string{"serve", "--config-map", "a/b", "--kubeconfig", "/nonexistent/kubeconfig"}, "--config-map: kubeconfig /nonexistent/kubeconfig"},
		{[]string{"serve", "--audit-log", "/nonexistent/dir/audit.log"}, "--audit-log: open /nonexistent/dir/audit.log"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errs, code := run(t, tt.args...)
			if code != cli.ExitUsage || !strings.Contains(errs, tt.msg) {
				t.Fatalf("code %d, stderr %q; want 2 and %q", code, errs, tt.msg)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	errs, _, code := run(t, "check", "--help")
	if code != 0 || !strings.Contains(errs, "Exit status: 0 allowed, 1 denied, 2") || !strings.Contains(errs, "--groups") {
		t.Fatalf("check --help: %d %q", code, errs)
	}
	errs, _, code = run(t, "help")
	if code != 0 || !strings.Contains(errs, "usher lint    queues.yaml") {
		t.Fatalf("help: %d %q", code, errs)
	}
	// Bare usher prints the help, as kubectl does.
	if out, errs, code := run(t); code != cli.ExitOK || errs != "" || !strings.Contains(out, "Available Commands") && !strings.Contains(out, "usher check") {
		t.Fatalf("no arguments: %d %q %q", code, out, errs)
	}
}

func TestEmbeddedDefault(t *testing.T) {
	out, _, code := run(t, "check", "--queue", "root", "--user", "anyone")
	if code != 0 || !strings.HasPrefix(out, "allowed\n") {
		t.Fatalf("%d %q", code, out)
	}
}

func TestExplainShowsTrail(t *testing.T) {
	out, _, code := run(t, "explain", "--config", "../../../examples/teams.yaml", "--queue", "root.analytics.adhoc", "--user", "kim", "--groups", "analytics-leads")
	if code != 0 {
		t.Fatalf("code %d\n%s", code, out)
	}
	for _, want := range []string{
		"allowed\n",
		`kim may submit to root.analytics.adhoc: group entry "analytics-leads" in adminacl of root.analytics`,
		"analytics-leads (given)",
		`root.analytics.adhoc  submitacl  "john.doe@EXAMPLE.COM analytics,dev.team"  no match`,
		`root.analytics        adminacl   " analytics-leads"`,
		`MATCH: group "analytics-leads"  <- decided`,
		"root                  submitacl  \" \"",
		"not reached",
		`partition             adminacl   " platform-admins"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, "explain", "--config", yunikornACL, "--queue", "root.product", "--user", "bob")
	if code != 1 || !strings.Contains(out, "bob (none)") || !strings.Contains(out, `root.product  submitacl  " product"`) {
		t.Fatalf("denied explain: %d\n%s", code, out)
	}
}

func TestAccess(t *testing.T) {
	out, _, code := run(t, "access", "--config", "../../../examples/teams.yaml", "--user", "system:serviceaccount:spark:driver", "--groups", "system:authenticated")
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{
		"QUEUE", "├── analytics", "│   ├── adhoc", "│   └── spark      yes", "└── ml", "    └── inference  yes",
		`user system:serviceaccount:spark:driver in submitacl of root.analytics.spark`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("access tree lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, "access", "--config", "../../../examples/teams.yaml", "--user", "ann", "--groups", "ml", "-o", "json")
	if code != 0 {
		t.Fatal(code)
	}
	var doc struct {
		Identity struct{ User string }
		Queues   []struct {
			Queue         string
			Submit, Admin bool
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	submit := map[string]bool{}
	for _, q := range doc.Queues {
		submit[q.Queue] = q.Submit
	}
	if doc.Identity.User != "ann" || !submit["root.ml.training"] || submit["root.analytics.adhoc"] || len(doc.Queues) != 7 {
		t.Fatalf("json: %+v", doc)
	}
}

func TestLint(t *testing.T) {
	out, errs, code := run(t, "lint", "../../../examples/broken.yaml")
	if code != 1 {
		t.Fatalf("code %d\n%s%s", code, out, errs)
	}
	want := []string{
		`../../../examples/broken.yaml:6:9: queue: unknown key "submitAcl" (did you mean "submitacl"?)`,
		`../../../examples/broken.yaml:9:27: submitacl "u1  g1": more than one space`,
		`../../../examples/broken.yaml:12:19: queue name "data.eng" is invalid`,
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("lint output lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(errs, "3 errors") {
		t.Errorf("summary: %q", errs)
	}
	out, errs, code = run(t, "lint", yunikornACL)
	if code != 0 || out != "" || !strings.Contains(errs, "valid, no problems found") {
		t.Fatalf("clean file: %d %q %q", code, out, errs)
	}
	dir := t.TempDir()
	warn := filepath.Join(dir, "w.yaml")
	os.WriteFile(warn, []byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"a,a\"\n"), 0o600)
	out, errs, code = run(t, "lint", warn)
	if code != 0 || !strings.Contains(out, `w.yaml:5:23: warning: submitacl "a,a": duplicate user "a"`) || !strings.Contains(errs, "1 warning") {
		t.Fatalf("warnings only: %d %q %q", code, out, errs)
	}
}

// What a later release refuses is an error in usher lint and a warning in
// the commands that load a configuration as usher serve does.
func TestLintIsStrict(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	os.WriteFile(cfg, []byte("partitions:\n  - name: default\n    usergroupresolver:\n      type: file\n      file: /dev/null\n"+
		"    queues:\n      - name: root\n        submitacl: \"*\"\n"), 0o600)
	out, errs, code := run(t, "lint", cfg)
	if code != 1 || !strings.Contains(out, "q.yaml:5:13: usergroupresolver file: users-to-groups file: open /dev/null: not a regular file") {
		t.Errorf("lint: %d %q %q", code, out, errs)
	}
	// It loads: the (empty) table answers.
	_, errs, _ = run(t, "check", "--config", cfg, "--queue", "root", "--user", "alice")
	if !strings.Contains(errs, `unknown user "alice" (not in /dev/null)`) {
		t.Errorf("check: %q", errs)
	}
}

// The real binary exits with the codes scripts rely on.
func TestBinaryExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "usher")
	build := exec.Command("go", "build", "-o", bin, "github.com/usherhq/usher/cmd/usher")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"check", "--config", yunikornACL, "--queue", "root.test", "--user", "sue", "--action", "admin"}, 0},
		{[]string{"check", "--config", yunikornACL, "--queue", "root.test", "--user", "bob", "--action", "admin"}, 1},
		{[]string{"check", "--config", yunikornACL, "--queue", "root.x", "--user", "bob"}, 2},
		{[]string{"lint", "../../../examples/broken.yaml"}, 1},
	} {
		err := exec.Command(bin, tt.args...).Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code {
			t.Errorf("usher %s: exit %d, want %d", strings.Join(tt.args, " "), code, tt.code)
		}
	}
}
