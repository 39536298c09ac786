package cli_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	teams     = "../../../examples/teams.yaml"
	teamsNext = "../../../examples/diff/teams-next.yaml"
	people    = "../../../examples/diff/people.txt"
)

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -run %s -update to accept):\ngot:\n%s\nwant:\n%s", path, t.Name(), got, want)
	}
}

func TestDiffText(t *testing.T) {
	out, errs, code := run(t, "diff", teams, teamsNext)
	if code != 1 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	golden(t, "diff-teams.txt", out)

	// Flags may follow the files.
	out, errs, code = run(t, "diff", teams, teamsNext, "--subjects", people)
	if code != 1 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	golden(t, "diff-teams-subjects.txt", out)
}

const (
	placementOld    = "../../../examples/placement.yaml"
	placementNext   = "../../../examples/diff/placement-next.yaml"
	placementPeople = "../../../examples/diff/placement-people.txt"
)

// Placement: where a request that names no queue lands, for every named
// user and group, the --subjects lines, with the --tag tags.
func TestDiffPlacement(t *testing.T) {
	out, errs, code := run(t, "diff", placementOld, placementNext)
	if code != 1 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	golden(t, "diff-placement.txt", out)
	out, errs, code = run(t, "diff", placementOld, placementNext, "--tag", "namespace=ml", "--subjects", placementPeople)
	if code != 1 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	golden(t, "diff-placement-subjects.txt", out)
	out, errs, code = run(t, "diff", "-o", "json", placementOld, placementNext, "--tag", "namespace=ml")
	if code != 1 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	golden(t, "diff-placement.json", out)

	// A rule added, no ACL changed: exit 1 all the same.
	src, err := os.ReadFile(placementOld)
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Replace(string(src), "    placementrules:\n", "    placementrules:\n      - name: fixed\n        value: root.teams.ml\n", 1)
	path := filepath.Join(t.TempDir(), "next.yaml")
	if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = run(t, "diff", placementOld, path)
	if code != 1 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	want := "partition default\n" +
		"  placement of a request that names no queue\n" +
		"-   queue   group dev  rejected\n" +
		"+   queue   group dev  root.teams.ml\n" +
		"no access changes; 1 placement changed\n"
	if !strings.HasSuffix(out, want) {
		t.Fatalf("got\n%s\nwant suffix\n%s", out, want)
	}
	// A bad tag is a usage error.
	if _, errs, code := run(t, "diff", "--tag", "nope", placementOld, path); code != 2 || errs == "" {
		t.Fatalf("--tag nope: code %d, stderr %q", code, errs)
	}
}

func TestDiffNoChange(t *testing.T) {
	// The same policy as a file and as a ConfigMap manifest.
	dir := t.TempDir()
	src, err := os.ReadFile(teams)
	if err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: usher\ndata:\n  queues.yaml: |\n" + indentLines(string(src), "    ")
	cmPath := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(cmPath, []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "diff", teams, cmPath)
	if code != 0 || errs != "" {
		t.Fatalf("code %d, stderr %q, out %q", code, errs, out)
	}
	if !strings.HasSuffix(out, "no access changes\n") {
		t.Fatalf("out %q", out)
	}
}

func indentLines(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(pre + l)
		}
	}
	return b.String()
}

func TestDiffJSON(t *testing.T) {
	out, errs, code := run(t, "diff", "-o", "json", teams, teamsNext)
	if code != 1 || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	golden(t, "diff-teams.json", out)
	var res struct {
		Old, New     string
		Gained, Lost int
		Partitions   []struct {
			Name   string
			Queues []struct {
				Queue   string
				Status  string
				Below   int
				Changes []struct {
					Gained bool
					Right  string
					Kind   string
					Name   string
					Queues int
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Gained != 6 || res.Lost != 2 || res.Old != teams || len(res.Partitions) != 1 {
		t.Fatalf("%+v", res)
	}
	q := res.Partitions[0].Queues[len(res.Partitions[0].Queues)-1]
	if q.Queue != "root.sandbox" || q.Status != "added" || q.Changes[0].Kind != "everyone" || q.Changes[0].Name != "*" {
		t.Fatalf("%+v", q)
	}
}

func TestDiffErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "subjects.txt")
	if err := os.WriteFile(bad, []byte("alice: dev\nbob dev\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"diff", teams}, "want two configurations"},
		{[]string{"diff", teams, teamsNext, teams}, "want two configurations"},
		{[]string{"diff", teams, "../../../examples/broken.yaml"}, "broken.yaml: invalid configuration"},
		{[]string{"diff", teams, filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"diff", "-o", "yaml", teams, teamsNext}, `-o "yaml"`},
		{[]string{"diff", "--subjects", bad, teams, teamsNext}, "subjects.txt:2:1: missing colon after the user name"},
		{[]string{"diff", "--subjects", filepath.Join(dir, "none.txt"), teams, teamsNext}, "--subjects"},
		{[]string{"diff", "--nope", teams, teamsNext}, "unknown flag: --nope"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			out, errs, code := run(t, tt.args...)
			if code != 2 || !strings.Contains(errs, tt.msg) || out != "" {
				t.Fatalf("code %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, tt.msg)
			}
		})
	}
}

func TestDiffHelp(t *testing.T) {
	errs, _, code := run(t, "diff", "--help")
	if code != 0 || !strings.Contains(errs, "usher diff examples/teams.yaml examples/diff/teams-next.yaml") {
		t.Fatalf("code %d, %q", code, errs)
	}
	// The example in the help is what the command prints.
	out, _, _ := run(t, "diff", teams, teamsNext)
	out = strings.ReplaceAll(out, "../../../", "")
	var indented strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		indented.WriteString(strings.TrimRight("  "+l, " ") + "\n")
	}
	if !strings.Contains(errs, indented.String()) {
		t.Fatalf("help example is stale:\n%s\nwant it to contain:\n%s", errs, indented.String())
	}
}

// The outputs shown in README.md and docs/diff.md are what the command
// prints.
func TestDiffDocs(t *testing.T) {
	for _, tc := range []struct {
		file, command string
		args          []string
	}{
		{"../../../README.md", "$ usher diff examples/teams.yaml examples/diff/teams-next.yaml; echo $?\n", []string{teams, teamsNext}},
		{"../../../docs/diff.md", "$ usher diff examples/teams.yaml examples/diff/teams-next.yaml --subjects examples/diff/people.txt\n",
			[]string{teams, teamsNext, "--subjects", people}},
		{"../../../docs/diff.md", "$ usher diff examples/placement.yaml examples/diff/placement-next.yaml --tag namespace=ml --subjects examples/diff/placement-people.txt\n",
			[]string{placementOld, placementNext, "--tag", "namespace=ml", "--subjects", placementPeople}},
	} {
		doc, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		out, _, _ := run(t, append([]string{"diff"}, tc.args...)...)
		out = strings.ReplaceAll(out, "../../../", "")
		if !strings.Contains(string(doc), tc.command+out) {
			t.Errorf("%s: the output after %q is stale; the command prints:\n%s", tc.file, tc.command, out)
		}
	}
}
