package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/cmd/usher/cli"
)

// yarnGuide is the queue tree of the "Managing YARN ACLs" guide with the roles of its second
// example ("Moving the Application and Viewing the Log in the Queue Test"):
// Bob is the cluster admin, Jane administers Marketing (through her group
// others) and Dev, John submits to Production and Test. Spark admins
// administer every application.
const yarnGuide = `partitions:
  - name: default
    adminacl: bob
    applicationacls:
      admin: " spark-admins"
      view: " analysts"
    queues:
      - name: root
        submitacl: " "
        adminacl: " "
        queues:
          - name: Marketing
            submitacl: john,jane
            adminacl: " others"
          - name: Dev
            adminacl: jane
          - name: Datascience
            queues:
              - name: Production
                submitacl: john
              - name: Test
                submitacl: john
`

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "usher.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The stories of the "Managing YARN ACLs" guide of application_1536220066338_0002 in the queue Test,
// through the command line. Jane has log view rights via
// mapreduce.job.acl-view-job (--view-acl jane).
func TestAppYARNGuide(t *testing.T) {
	cfg := writeConfig(t, yarnGuide)
	base := []string{"app", "--config", cfg, "--queue", "root.Datascience.Test", "--owner", "john",
		"--id", "application_1536220066338_0002", "--view-acl", "jane"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"john views his logs", []string{"--user", "john", "--action", "view"}, 0, "john owns it"},
		{"jane may not move to Marketing", []string{"--user", "jane", "--groups", "jane,others", "--action", "move", "--target-queue", "root.Marketing"}, 1,
			"no submit or admin right on root.datascience.test, where it runs"},
		{"jane may not kill", []string{"--user", "jane", "--groups", "others", "--action", "kill"}, 1, "not in its modify ACL"},
		{"jane views through the view ACL", []string{"--user", "jane", "--groups", "others", "--action", "view"}, 0, `user entry "jane" in its view ACL`},
		{"bob moves to Marketing", []string{"--user", "bob", "--action", "move", "--target-queue", "root.Marketing"}, 0,
			"bob may move application_1536220066338_0002 (owner john, queue root.datascience.test) to root.marketing"},
		// Derived from the rules: the partition's application admins and
		// default view ACL (applicationacls) apply.
		{"a spark admin kills (derived)", []string{"--user", "sam", "--groups", "spark-admins", "--action", "kill"}, 0, "application admin"},
		{"the application's own view ACL replaces the default (derived)", []string{"--user", "ann", "--groups", "analysts", "--action", "view"}, 1, "not in its modify or view ACL"},
		{"an empty view ACL allows nobody (derived)", []string{"--user", "ann", "--groups", "analysts", "--action", "view", "--view-acl", ""}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := run(t, append(append([]string{}, base...), tt.args...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			first := map[int]string{0: "allowed", 1: "denied"}[tt.code]
			if code != tt.code || lines[0] != first || len(lines) != 2 || !strings.Contains(lines[1], tt.want) {
				t.Fatalf("code %d, out %q, err %q; want %d, %q", code, out, errs, tt.code, tt.want)
			}
		})
	}
	// Without --view-acl the application takes the partition's default view
	// ACL, which lets analysts view.
	out, _, code := run(t, "app", "--config", cfg, "--queue", "root.dev", "--owner", "john", "--user", "ann", "--groups", "analysts", "--action", "view")
	if code != 0 || !strings.Contains(out, `group entry "analysts" in the default view ACL (applicationacls view of partition default)`) {
		t.Fatalf("default view ACL: %d %q", code, out)
	}
}

func TestAppExplain(t *testing.T) {
	cfg := writeConfig(t, yarnGuide)
	out, _, code := run(t, "app", "--config", cfg, "--queue", "root.datascience.test", "--owner", "john", "--user", "bob",
		"--action", "move", "--target-queue", "root.marketing", "--explain")
	if code != 0 {
		t.Fatalf("code %d\n%s", code, out)
	}
	for _, want := range []string{
		"allowed\n",
		"identity:\n  user    bob\n  groups  bob (none)",
		"application (no id): owner john, queue root.datascience.test",
		"requirements of move to root.marketing (all three must be met):",
		"1. submit to root.datascience.test (where it runs): met",
		`MATCH: user "bob" in the partition adminacl  <- decided`,
		"2. submit to root.marketing (the target): met",
		"3. modify the application: met",
		`owner              owner "john"`,
		"no match",
		`cluster admin      partition adminacl "bob"`,
		"application admin  applicationacls admin \" spark-admins\"",
		"not reached",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, "app", "--config", cfg, "--queue", "root.marketing", "--owner", "john", "--user", "jane", "--groups", "others",
		"--action", "kill", "--explain")
	if code != 0 {
		t.Fatalf("code %d\n%s", code, out)
	}
	for _, want := range []string{
		"checks for kill (in this order; the first that allows decides):",
		`queue admin        adminacl of root.marketing and its parents  MATCH: group "others" in adminacl of root.marketing  <- decided`,
		"cluster admin      partition adminacl",
		"modify ACL         its modify ACL (not set)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "view ACL ") {
		t.Errorf("kill does not check the view ACL:\n%s", out)
	}
}

func TestAppUsageErrors(t *testing.T) {
	cfg := writeConfig(t, yarnGuide)
	app := []string{"app", "--config", cfg, "--queue", "root.dev"}
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--owner", "john", "--action", "view"}, "--user is required"},
		{[]string{"--user", "jane", "--action", "view"}, "--owner is required"},
		{[]string{"--user", "jane", "--owner", "john"}, "--action is required"},
		{[]string{"--user", "jane", "--owner", "john", "--action", "submit"}, `unknown application action "submit"`},
		{[]string{"--user", "jane", "--owner", "john", "--action", "move"}, "--action move needs --target-queue"},
		{[]string{"--user", "jane", "--owner", "john", "--action", "kill", "--target-queue", "root.dev"}, "only used with --action move"},
		{[]string{"--user", "jane", "--owner", "john", "--action", "kill", "--modify-acl", "a,b*"}, `--modify-acl: acl "a,b*"`},
		{[]string{"--user", "jane", "--owner", "jo hn", "--action", "kill"}, "application owner: name \"jo hn\" contains whitespace"},
		{[]string{"--user", "jane", "--owner", "john", "--action", "move", "--target-queue", "root.nope"}, "target: queue \"root.nope\""},
		{[]string{"--user", "jane", "--owner", "john", "--action", "view", "--partition", "gpu"}, "unknown partition"},
		{[]string{"--user", "jane", "--owner", "john", "--action", "view", "--groups", "a b"}, "whitespace"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errs, code := run(t, append(append([]string{}, app...), tt.args...)...)
			if code != cli.ExitUsage || !strings.Contains(errs, tt.msg) {
				t.Fatalf("code %d, stderr %q; want 2 and %q", code, errs, tt.msg)
			}
		})
	}
	_, errs, code := run(t, "app", "--config", cfg, "--queue", "root.nope", "--owner", "john", "--user", "jane", "--action", "view")
	if code != cli.ExitUsage || !strings.Contains(errs, "unknown queue") {
		t.Fatalf("unknown queue: %d %q", code, errs)
	}
	errs, _, code = run(t, "app", "--help")
	if code != 0 || !strings.Contains(errs, "--target-queue") || !strings.Contains(errs, "Exit status: 0 allowed, 1 denied, 2") {
		t.Fatalf("help: %d %q", code, errs)
	}
}

// An application ACL that YARN's second-space rule truncates is used
// truncated, with a warning on stderr.
func TestAppACLWarning(t *testing.T) {
	cfg := writeConfig(t, yarnGuide)
	out, errs, code := run(t, "app", "--config", cfg, "--queue", "root.dev", "--owner", "john", "--user", "pat", "--groups", "extra",
		"--action", "view", "--view-acl", "ann analysts extra")
	if code != 1 || !strings.HasPrefix(out, "denied\n") {
		t.Fatalf("code %d %q", code, out)
	}
	if !strings.Contains(errs, `usher app: warning: --view-acl "ann analysts extra": offset 12: everything after the second space is ignored`) {
		t.Fatalf("stderr %q", errs)
	}
}
