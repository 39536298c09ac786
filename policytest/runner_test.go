package policytest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/policytest"
)

// A failing case is explained from the generation the run holds: the
// configuration is loaded once (the variables read once), however many
// cases fail, and the trail is what the reproducing command prints.
func TestFailuresExplainedFromTheGeneration(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("q.yaml", "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues: [{name: test, submitacl: sue}]\n")
	run := func(cases string) (policytest.FileReport, int) {
		t.Helper()
		f, err := policytest.Read(write("c_test.yaml", "config: q.yaml\ncases:\n"+cases))
		if err != nil {
			t.Fatal(err)
		}
		reads := 0
		fr, err := policytest.Run(context.Background(), f, func(string) (string, bool) { reads++; return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return fr, reads
	}
	_, once := run("  - {name: pass, user: sue, queue: root.test, expect: allowed}\n")
	fr, reads := run(`  - {name: decision, user: john, queue: root.test, expect: allowed}
  - {name: unknown queue, user: john, queue: root.tset, expect: allowed}
  - {name: placement, user: sue, action: place, queue: root.test, expect: rejected}
  - {name: application, user: john, action: kill, application: {owner: sue, queue: root.test}, expect: allowed}
`)
	if reads != once {
		t.Errorf("the variables were read %d times with four failures, %d with none: the configuration was loaded again", reads, once)
	}
	for i, want := range [][2]string{
		{"usher explain --config " + filepath.Join(dir, "q.yaml") + " --user john --queue root.test", "denied\njohn may not submit to root.test"},
		{"usher explain ", `queue "root.tset" in partition default: unknown queue`},
		{"usher place ", "root.test\n"},
		{"usher app ", "denied\n"},
	} {
		c := fr.Cases[i]
		if c.Passed || !strings.HasPrefix(c.Reproduce, want[0]) || !strings.Contains(c.Trail, want[1]) {
			t.Errorf("case %s: reproduce %q, trail:\n%s", c.Name, c.Reproduce, c.Trail)
		}
	}
	if tr := fr.Cases[1].Trail; !strings.Contains(tr, "did you mean root.test?") {
		t.Errorf("no hint for the unknown queue:\n%s", tr)
	}
}
