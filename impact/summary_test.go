package impact_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
)

func load(t *testing.T, path string) *config.Config {
	t.Helper()
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A server that reloads calls Summarize with the configuration in force and the
// new one, logs it (LogValue) and adds Gained and Lost to a counter.
func TestSummarize(t *testing.T) {
	old, new := load(t, "../examples/teams.yaml"), load(t, "../examples/diff/teams-next.yaml")
	s := impact.Summarize(old, new, 3)
	if s.Gained != 6 || s.Lost != 2 || s.Queues != 5 || len(s.First) != 3 {
		t.Fatalf("%+v", s)
	}
	var first []string
	for _, c := range s.First {
		first = append(first, c.String())
	}
	want := "+submit user sre-bot on default/root (7 queues), " +
		"+admin user sre-bot on default/root (8 queues), " +
		"-submit group system:serviceaccounts:spark on default/root.analytics.spark"
	if got := strings.Join(first, ", "); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("configuration reloaded", "access", impact.Summarize(old, new, 1))
	if want := `"access":{"gained":6,"lost":2,"queues":5,"placements":0,"first":["+submit user sre-bot on default/root (7 queues)"]}`; !strings.Contains(buf.String(), want) {
		t.Fatalf("log %s\nwant %s", buf.String(), want)
	}
	if s := impact.Summarize(old, old, 3); s.Gained+s.Lost+s.Placements != 0 || len(s.First) != 0 {
		t.Fatalf("%+v", s)
	}
	// Everything is new on the first load.
	if s := impact.Summarize(nil, new, 0); s.Lost != 0 || s.Gained == 0 {
		t.Fatalf("%+v", s)
	}
}

// A subjects file is a users-to-groups file, read by the same parser: a
// line "alice: analytics" is the user alice in group analytics (it was the
// user "alice:"), and a Kubernetes name needs no quoting.
func TestParseSubjects(t *testing.T) {
	got, err := impact.ParseSubjects("people.txt", strings.NewReader(
		"# comment\n\nalice: analytics, ops\n  system:serviceaccount:spark:driver:\njohn.doe@EXAMPLE.COM: dev.team\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].User != "alice" || strings.Join(got[0].Groups, "|") != "analytics|ops" ||
		got[1].User != "system:serviceaccount:spark:driver" || len(got[1].Groups) != 0 ||
		got[2].User != "john.doe@EXAMPLE.COM" || got[2].Groups[0] != "dev.team" {
		t.Fatalf("%+v", got)
	}
	for _, tc := range []struct{ in, msg string }{
		{"alice dev,ops\n", "people.txt:1:1: missing colon after the user name"},
		{"alice:\nbob:\nalice: dev\n", "people.txt:3:1: duplicate user (first listed at line 1)"},
		{"alice: dev,,ops\n", "people.txt:1:12: empty group name"},
	} {
		if _, err := impact.ParseSubjects("people.txt", strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.msg)
		}
	}
}
