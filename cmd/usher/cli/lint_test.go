package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/usherhq/usher/config"
)

// --strict makes warnings fail with exit status 1, in every format.
func TestLintStrict(t *testing.T) {
	for _, o := range []string{"text", "json", "sarif"} {
		if _, errs, code := run(t, "lint", "-o", o, teams); code != 0 {
			t.Errorf("-o %s without --strict: %d %q", o, code, errs)
		}
		_, errs, code := run(t, "lint", "--strict", "-o", o, teams)
		if code != 1 || !strings.Contains(errs, "teams.yaml: valid, 4 warnings (--strict: warnings fail)") {
			t.Errorf("-o %s --strict: %d %q", o, code, errs)
		}
	}
	if _, errs, code := run(t, "lint", "--strict", yunikornACL); code != 0 {
		t.Errorf("--strict on a clean file: %d %q", code, errs)
	}
	if _, errs, code := run(t, "lint", "-o", "yaml", teams); code != 2 || !strings.Contains(errs, `want text, json or sarif, not "yaml"`) {
		t.Errorf("-o yaml: %d %q", code, errs)
	}
}

// -o json: one object for every PATH, each diagnostic with its code and,
// where one is known, the suggestion.
func TestLintJSON(t *testing.T) {
	out, _, code := run(t, "lint", "-o", "json", "../../../examples/broken.yaml", teams)
	if code != 1 {
		t.Fatalf("code %d", code)
	}
	var got struct {
		Errors, Warnings int
		Diagnostics      []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Errors != 3 || got.Warnings != 4 || len(got.Diagnostics) != 7 {
		t.Fatalf("counts: %+v", got)
	}
	first := map[string]any{"file": "../../../examples/broken.yaml", "line": 6.0, "column": 9.0, "severity": "error",
		"code": "unknown-key", "message": `queue: unknown key "submitAcl" (did you mean "submitacl"?)`, "suggestion": "submitacl"}
	if b, _ := json.Marshal(got.Diagnostics[0]); string(b) != mustJSON(first) {
		t.Errorf("first: %s\nwant %s", b, mustJSON(first))
	}
	last := got.Diagnostics[6]
	if last["severity"] != "warning" || last["code"] != "yunikorn-acl-name" || last["line"] != 22.0 || last["suggestion"] != nil {
		t.Errorf("last: %v", last)
	}
	// A file with no problems is an empty list, not null.
	out, _, _ = run(t, "lint", "-o", "json", yunikornACL)
	if !strings.Contains(out, `"diagnostics": []`) {
		t.Errorf("clean: %s", out)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// -o sarif is a SARIF 2.1.0 log the official schema accepts, with what
// GitHub code scanning and GitLab read: a rule for each code, and results
// with ruleId, level, message and a physical location.
func TestLintSARIF(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	f, err := os.Open("testdata/sarif-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("sarif.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A path with a space, absolute; and a diagnostic without a line.
	spaced := filepath.Join(dir, "my queues.yaml")
	os.WriteFile(spaced, []byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"a,a\"\n"), 0o600)
	empty := filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, nil, 0o600)
	out, _, code := run(t, "lint", "-o", "sarif", "../../../examples/broken.yaml", teams, spaced, empty)
	if code != 1 {
		t.Fatalf("code %d", code)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("the SARIF schema refuses the output: %v\n%s", err, out)
	}
	var log struct {
		Version string
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string
					Rules []struct {
						ID               string
						ShortDescription struct{ Text string }
					}
				}
			}
			Results []struct {
				RuleID    string
				RuleIndex int
				Level     string
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           *struct{ StartLine, StartColumn int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "usher" {
		t.Fatalf("log: %+v", log)
	}
	run0 := log.Runs[0]
	for _, r := range run0.Tool.Driver.Rules {
		if r.ShortDescription.Text == "" || config.Codes[r.ID] != r.ShortDescription.Text {
			t.Errorf("rule %q: %q", r.ID, r.ShortDescription.Text)
		}
	}
	if len(run0.Results) != 9 {
		t.Fatalf("%d results:\n%s", len(run0.Results), out)
	}
	for _, r := range run0.Results {
		if run0.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID || r.Message.Text == "" || len(r.Locations) != 1 {
			t.Errorf("result: %+v", r)
		}
	}
	r := run0.Results[0]
	if r.RuleID != "unknown-key" || r.Level != "error" || r.Locations[0].PhysicalLocation.ArtifactLocation.URI != "../../../examples/broken.yaml" ||
		*r.Locations[0].PhysicalLocation.Region != (struct{ StartLine, StartColumn int }{6, 9}) {
		t.Errorf("first: %+v", r)
	}
	r = run0.Results[7]
	if r.Level != "warning" || r.RuleID != "acl-entry" || r.Locations[0].PhysicalLocation.ArtifactLocation.URI != "file://"+filepath.ToSlash(dir)+"/my%20queues.yaml" {
		t.Errorf("warning: %+v", r)
	}
	if r = run0.Results[8]; r.Locations[0].PhysicalLocation.Region != nil {
		t.Errorf("no line: %+v", r)
	}
	// The schema is a real check: a level SARIF does not have is refused.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(out, `"level": "warning"`, `"level": "serious"`, 1)))
	if schema.Validate(bad) == nil {
		t.Error("the schema accepts level serious")
	}
}
