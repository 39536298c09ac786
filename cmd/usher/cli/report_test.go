package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

const reportConfig, reportOld = "../../../report/testdata/queues.yaml", "../../../report/testdata/old.yaml"

func TestWhoCan(t *testing.T) {
	out, errs, code := run(t, "who-can", "--config", reportConfig, "--queue", "root.teams.web")
	want := `who may submit root.teams.web (partition default), in check order:
  user alice in submitacl of root.teams
  group leads in adminacl of root.teams: bob
  group platform in the partition adminacl: carol
group members: members as the file resolver lists them; groups a request carries are not listed
`
	if code != 0 || out != want {
		t.Fatalf("code %d, err %s, out:\n%s", code, errs, out)
	}
	out, _, code = run(t, "who-can", "--config", reportConfig, "--queue", "root.teams.ml", "--action", "admin", "-o", "json")
	var got struct {
		Queue  string
		Grants []struct{ Queue, ACL, Kind, Name string }
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Queue != "root.teams.ml" || len(got.Grants) != 2 ||
		got.Grants[0].ACL != "adminacl" || got.Grants[0].Queue != "root.teams" || got.Grants[1].ACL != "partition adminacl" {
		t.Fatalf("code %d err %v: %s", code, err, out)
	}
	for _, args := range [][]string{
		{"--config", reportConfig},
		{"--config", reportConfig, "--queue", "root.nope"},
		{"--config", reportConfig, "--queue", "root", "--action", "kill"},
		{"--config", reportConfig, "--queue", "root", "-o", "dot"},
	} {
		if _, errs, code := run(t, append([]string{"who-can"}, args...)...); code != 2 || errs == "" {
			t.Errorf("%v: code %d, %q", args, code, errs)
		}
	}
}

// access, diff and place draw their answer, with their usual exit status.
func TestPictures(t *testing.T) {
	for _, tt := range []struct {
		code int
		args []string
		want string
	}{
		{0, []string{"access", "--config", reportConfig, "--user", "bob", "-o", "dot"}, `n2 [label="root.teams.ml\nsubmit, admin", color="#1a7f37"`},
		{1, []string{"diff", reportOld, reportConfig, "-o", "mermaid"}, `n0 -->|"-submit (3 queues)"| n1`},
		{1, []string{"place", "--config", reportConfig, "--user", "dave", "--queue", "root.teams.ml", "-o", "dot"}, `label="rejected"`},
		{0, []string{"place", "--config", reportConfig, "--user", "alice", "--queue", "root.teams.ml", "-o", "mermaid"}, `n2["root.teams.ml"]`},
	} {
		out, errs, code := run(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("%v: code %d, err %s, out:\n%s", tt.args, code, errs, out)
		}
	}
}

func TestReport(t *testing.T) {
	out, errs, code := run(t, "report", "--config", reportConfig, "--against", reportOld, "--user", "alice", "--tag", "namespace=ml")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, `<span class="gain">+   submit  group ml`) ||
		!strings.Contains(out, "<pre id=place>root.teams.ml\n") {
		t.Fatalf("code %d, err %s, out:\n%s", code, errs, out)
	}
	if _, errs, code := run(t, "report", "--config", reportConfig, "--against", "nope.yaml"); code != 2 || !strings.Contains(errs, "--against nope.yaml") {
		t.Errorf("code %d, %q", code, errs)
	}
}
