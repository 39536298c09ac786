package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const placementExample = "../../../examples/placement.yaml"

func TestPlace(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		code  int
		first string
		more  []string // lines expected somewhere in the output
	}{
		{"provided queue the user may use", []string{"--user", "alice", "--groups", "dev", "--queue", "root.teams.ml"}, 0, "root.teams.ml",
			[]string{"rule 1: provided", `alice may submit to root.teams.ml: group entry "dev" in submitacl of root.teams`}},
		{"namespace queue created under root.teams", []string{"--user", "alice", "--groups", "dev", "--tag", "namespace=spark"}, 0, "root.teams.spark",
			[]string{`rule 2: tag "namespace" create filter(deny groups contractors) under (fixed "root.teams")`, "placed in root.teams.spark (to be created)", "the application names no queue"}},
		{"tag names are not case sensitive", []string{"--user", "alice", "--groups", "dev", "--tag", "Namespace=spark"}, 0, "root.teams.spark", nil},
		{"unqualified marker is dot-replaced", []string{"--user", "carl", "--groups", "staff", "--queue", "teams.ml"}, 0, "root.users.carl",
			[]string{"root.teams_dot_ml does not exist and create is false"}},
		{"contractors are filtered and land in root.default", []string{"--user", "bob", "--groups", "contractors", "--tag", "namespace=web"}, 0, "root.default",
			[]string{"the filter does not let the user through", "the root.default fallback"}},
		{"rejected", []string{"--user", "bob", "--groups", "ops", "--queue", "root.teams.ml"}, 1, "rejected",
			[]string{"no placement rule placed the application, and bob may not submit to root.default"}},
		{"rule error rejects", []string{"--user", "bob", "--groups", "ops", "--queue", "root.bad name"}, 1, "rejected",
			[]string{"placement failed: rule 1: provided rule: queue \"root.bad name\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := run(t, append([]string{"place", "--config", placementExample}, tt.args...)...)
			if code != tt.code || strings.SplitN(out, "\n", 2)[0] != tt.first {
				t.Fatalf("code %d, out:\n%s\nerr: %s", code, out, errs)
			}
			for _, m := range tt.more {
				if !strings.Contains(out, m) {
					t.Errorf("output lacks %q:\n%s", m, out)
				}
			}
		})
	}
}

// A partition without placementrules uses the implicit provided rule.
func TestPlaceImplicitRule(t *testing.T) {
	out, _, code := run(t, "place", "--config", yunikornACL, "--user", "bob", "--queue", "test")
	if code != 0 || !strings.HasPrefix(out, "root.test\nrule 1: provided (implicit") {
		t.Fatalf("code %d out %s", code, out)
	}
	out, _, code = run(t, "place", "--config", yunikornACL, "--user", "bob", "--queue", "ml.training")
	if code != 1 || !strings.Contains(out, "root.ml_dot_training does not exist") || !strings.Contains(out, "root.default does not exist") {
		t.Fatalf("code %d out %s", code, out)
	}
}

// Groups come from the partition's resolver when none are given.
func TestPlaceResolvesGroups(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(placementExample)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "    queues:\n", "    usergroupresolver:\n      type: test\n      users:\n        alice: [dev]\n    queues:\n", 1)
	path := filepath.Join(dir, "q.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "place", "--config", path, "--user", "alice", "--tag", "namespace=spark")
	if code != 0 || !strings.HasPrefix(out, "root.teams.spark\n") {
		t.Fatalf("code %d out %s err %s", code, out, errs)
	}
}

func TestPlaceUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"place", "--config", placementExample}, 2, "--user is required"},
		{[]string{"place", "--config", placementExample, "--user", "a", "--tag", "novalue"}, 2, "want NAME=VALUE"},
		{[]string{"place", "--config", placementExample, "--user", "a", "--partition", "nope"}, 2, "unknown partition"},
		{[]string{"place", "--config", placementExample, "--user", "a", "extra"}, 2, "unexpected argument"},
		{[]string{"place", "--config", "../../../examples/broken.yaml", "--user", "a"}, 2, "invalid configuration"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errs, code := run(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.msg) {
				t.Fatalf("code %d stderr %s", code, errs)
			}
		})
	}
}

// check and explain with --place (or a --tag) let the placement rules
// choose the queue; check's first line stays allowed or denied, explain
// prints the placement trail before the identity and the ACL trail of the
// queue whose ACLs decided.
func TestCheckAndExplainPlace(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string // in this order
	}{
		{"check: the tag rule creates under root.teams", []string{"check", "--tag", "namespace=spark", "--user", "alice", "--groups", "dev"}, 0,
			[]string{"allowed\n", "placed in root.teams.spark (to be created)", `by rule 2: tag "namespace"`}},
		{"check: an unqualified marker is dot-replaced", []string{"check", "--place", "--queue", "teams.ml", "--user", "bob", "--groups", "ops"}, 1,
			[]string{"denied\n", "rule 1 (provided): root.teams_dot_ml does not exist and create is false", "bob may not submit to root.default"}},
		{"explain: placement trail, identity, then the ACL trail of the ancestor", []string{"explain", "--tag", "namespace=spark", "--user", "alice", "--groups", "dev"}, 0,
			[]string{"allowed\n", "placement (rules in order", "  1  provided", "the application names no queue", "=>   placed in root.teams.spark",
				"identity:", "dev (given)", "trail (submit on root.teams,", `root.teams  submitacl  " dev"`, `MATCH: group "dev"  <- decided`}},
		{"explain: rejected, no ACL trail", []string{"explain", "--place", "--queue", "root.teams.ml", "--user", "bob", "--groups", "ops"}, 1,
			[]string{"denied\n", "placement (rules in order", "bob may not submit to root.default", "identity:"}},
		{"explain: a full path", []string{"explain", "--place", "--queue", "root.teams.ml", "--user", "alice", "--groups", "dev"}, 0,
			[]string{"allowed\n", "by rule 1: provided", "trail (submit on root.teams.ml,"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := run(t, append([]string{tt.args[0], "--config", placementExample}, tt.args[1:]...)...)
			if code != tt.code {
				t.Fatalf("code %d, want %d\n%s%s", code, tt.code, out, errs)
			}
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			if tt.code == 1 && strings.Contains(out, "trail (") {
				t.Errorf("a rejection has no ACL trail:\n%s", out)
			}
		})
	}
	_, errs, code := run(t, "check", "--config", placementExample, "--place", "--action", "admin", "--user", "alice")
	if code != 2 || !strings.Contains(errs, "--place decides a submission") {
		t.Fatalf("--place with admin: %d %s", code, errs)
	}
	// Without --place nothing changes: no --queue is the default queue.
	out, _, code := run(t, "check", "--config", placementExample, "--user", "carl", "--groups", "contractors")
	if code != 0 || !strings.Contains(out, "root.default") {
		t.Fatalf("plain check: %d %s", code, out)
	}
}

// The outputs of check and explain with --place shown in docs/placement.md
// are what the commands print.
func TestPlaceDocs(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/placement.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		command, suffix string
		args            []string
	}{
		{"$ usher explain --config examples/placement.yaml --tag namespace=spark --user alice --groups dev\n", "",
			[]string{"explain", "--config", placementExample, "--tag", "namespace=spark", "--user", "alice", "--groups", "dev"}},
		{"$ usher check --config examples/placement.yaml --place --queue teams.ml --user bob --groups ops; echo $?\n", "1\n",
			[]string{"check", "--config", placementExample, "--place", "--queue", "teams.ml", "--user", "bob", "--groups", "ops"}},
	} {
		out, _, _ := run(t, tc.args...)
		if !strings.Contains(string(doc), tc.command+out+tc.suffix) {
			t.Errorf("the output after %q is stale; the command prints:\n%s", tc.command, out)
		}
	}
}
