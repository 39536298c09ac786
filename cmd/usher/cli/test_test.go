package cli_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policyDir returns a temporary directory holding the given files; a
// value starting with "@" is the content of that repository file.
func policyDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if src, ok := strings.CutPrefix(content, "@"); ok {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			content = string(b)
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The policy tests shipped beside the example configurations pass; make
// test runs them too (the policy-tests target).
func TestPolicyTestsShippedExamplesPass(t *testing.T) {
	out, errs, code := run(t, "test", "../../../examples")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if strings.Contains(out, "FAIL") {
		t.Fatalf("a case failed:\n%s", out)
	}
	for _, f := range []string{"yunikorn-acl_test.yaml", "teams_test.yaml", "placement_test.yaml", "teams-configmap_test.yaml", "yarn/usher_test.yaml"} {
		if !strings.Contains(out, f) {
			t.Errorf("%s was not run:\n%s", f, out)
		}
	}
	last := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	if !strings.HasSuffix(last, " passed, 0 failed") || strings.HasPrefix(last, "0 ") {
		t.Fatalf("summary %q", last)
	}
}

const wrongExpectation = `config: queues.yaml
cases:
  - name: sue administers root.test
    user: sue
    queue: root.test
    action: admin
    expect: allowed
  - name: john administers root.test
    user: john
    queue: root.test
    action: admin
    expect: allowed
`

// A wrong expectation fails the run (exit 1) and the output carries what
// was expected, the command that reproduces it and the explain trail.
func TestPolicyTestWrongExpectationFailsWithTrail(t *testing.T) {
	dir := policyDir(t, map[string]string{"queues.yaml": "@" + yunikornACL, "acl_test.yaml": wrongExpectation})
	out, errs, code := run(t, "test", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"  PASS  sue administers root.test\n",
		"  FAIL  john administers root.test  (" + filepath.Join(dir, "acl_test.yaml") + ":8)\n",
		"decision: want allowed, got denied",
		"$ usher explain --config " + filepath.Join(dir, "queues.yaml") + " --user john --queue root.test --action admin",
		"| trail (admin on root.test, checked in this order; the first match decides):",
		`|   root.test  adminacl   "sue dev,test"            no match`,
		"\n1 passed, 1 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Each expectation a case can state is checked: the deciding entry, the
// application rule, the placed queue, and for admission the code, the
// message, the patch and the stamped identity.
func TestPolicyTestEveryExpectationIsChecked(t *testing.T) {
	cases := map[string]struct{ yaml, config, want string }{
		"decidedBy entry": {`
  - name: c
    user: bob
    groups: [dev]
    queue: root.test
    action: admin
    expect: allowed
    decidedBy: {queue: root.test, acl: adminacl, kind: user, entry: bob}
`, "@" + yunikornACL, `decidedBy.entry: want "bob", got "dev"`},
		"decidedBy acl": {`
  - name: c
    user: sue
    queue: root.test
    expect: allowed
    decidedBy: {acl: adminacl}
`, "@" + yunikornACL, "decidedBy.acl: want adminacl, got submitacl"},
		"application rule": {`
  - name: c
    user: jane
    action: view
    application: {owner: john, queue: root.test, viewACL: jane}
    expect: allowed
    decidedBy: {rule: owner}
`, "@" + yunikornACL, "decidedBy.rule: want owner, got view ACL"},
		"application denied": {`
  - name: c
    user: jane
    action: kill
    application: {owner: john, queue: root.product}
    expect: allowed
`, "@" + yunikornACL, "| checks for kill (in this order; the first that allows decides):"},
		"placement": {`
  - name: c
    user: alice
    groups: [dev]
    action: place
    tags: {namespace: spark}
    expect: root.teams.other
`, "@../../../examples/placement.yaml", "placement: want root.teams.other, got root.teams.spark"},
		"admission stamped": {`
  - name: c
    user: maria
    groups: [ml]
    admission:
      object: {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ml}, spec: {containers: [{name: m, image: busybox}]}}
      stamped: {user: mallory, groups: [ml]}
    expect: allowed
`, "@" + yunikornACL, "stamped: want mallory [ml], got maria [ml]"},
		"admission outcome": {`
  - name: c
    user: mike
    admission:
      object:
        apiVersion: v1
        kind: Pod
        metadata: {name: p, namespace: ml, annotations: {yunikorn.apache.org/user.info: '{"user":"pat","groups":[]}'}}
        spec: {containers: [{name: m, image: busybox}]}
      code: 403
    expect: allowed
`, "@" + yunikornACL, "| audit: webhook=mutate uid=usher-test-1 operation=CREATE object=Pod namespace=ml name=p user=mike"},
		"admission code and message": {`
  - name: c
    user: mike
    admission:
      object:
        apiVersion: v1
        kind: Pod
        metadata: {name: p, namespace: ml, annotations: {yunikorn.apache.org/user.info: '{"user":"pat","groups":[]}'}}
        spec: {containers: [{name: m, image: busybox}]}
      code: 400
      message: no such words
      patched: true
    expect: denied
`, "@" + yunikornACL, "code: want 400, got 403\n          message: want to contain \"no such words\", got \"usher: user \\\"mike\\\" may not set annotation"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := policyDir(t, map[string]string{"q.yaml": tc.config, "c_test.yaml": "config: q.yaml\ncases:" + tc.yaml})
			out, errs, code := run(t, "test", dir)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 1 and %q in:\n%s%s", code, tc.want, out, errs)
			}
		})
	}
}

// A malformed test file is reported at FILE:LINE:COL on stderr, nothing
// runs, and the exit status is 2.
func TestPolicyTestMalformedFile(t *testing.T) {
	cases := map[string]struct{ file, want string }{
		"unknown key": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    qeue: root.test\n    expect: allowed\n",
			`:5:5: unknown key "qeue" (known: action, admission, application, decidedBy, expect, groups, name, partition, queue, tags, user)`},
		"bad expectation": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    expect: alowed\n",
			`:5:13: expect: want allowed or denied, not "alowed"`},
		"YAML syntax": {"config: q.yaml\ncases:\n  - name: a\n   user: u\n", ":2:1: did not find expected '-' indicator"},
		"missing config file": {"config: nope.yaml\ncases:\n  - {name: a, user: u, expect: allowed}\n",
			":1:9: config: stat "},
		"groups not a list": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    groups: dev\n    expect: allowed\n",
			`:5:13: groups: want a list of names, got the value "dev"`},
		"unknown action": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    action: delete\n    expect: allowed\n",
			`:5:13: action: "delete" is not submit, admin, view, modify, kill, move or place`},
		"repeated name": {"config: q.yaml\ncases:\n  - {name: a, user: u, expect: allowed}\n  - {name: a, user: v, expect: denied}\n",
			`:4:5: case "a" repeats the name of the case at line 3`},
		"two admission sources": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    expect: allowed\n    admission:\n      object: {kind: Pod}\n      reviewFile: r.json\n",
			":7:7: admission: give exactly one of review, reviewFile, object or objectFile"},
		"decidedBy on a denial": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    expect: denied\n    decidedBy: {entry: u}\n",
			":6:16: decidedBy names the entry that allowed: only with expect allowed"},
		"object without kind": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    expect: allowed\n    admission:\n      object: {apiVersion: v1, metadata: {name: p}}\n",
			":7:15: admission: the object needs apiVersion and kind"},
		"review without request": {"config: q.yaml\ncases:\n  - name: a\n    expect: allowed\n    admission:\n      review: {apiVersion: admission.k8s.io/v1, kind: AdmissionReview}\n",
			":6:15: admission: want an AdmissionReview with a request"},
		"user with a whole review": {"config: q.yaml\ncases:\n  - name: a\n    user: u\n    expect: allowed\n    admission:\n      review: {apiVersion: admission.k8s.io/v1, kind: AdmissionReview, request: {uid: x}}\n",
			`:3:5: case "a": a whole review names its requesting user in request.userInfo; user and groups go with object`},
		"alias of a missing anchor": {"config: q.yaml\ncases:\n  - name: a\n    user: *nope\n", ":1:1: unknown anchor 'nope' referenced"},
		"no cases":                  {"config: q.yaml\ncases: []\n", ":2:8: cases: want a list of one or more cases"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := policyDir(t, map[string]string{"q.yaml": "@" + yunikornACL, "bad_test.yaml": tc.file})
			file := filepath.Join(dir, "bad_test.yaml")
			out, errs, code := run(t, "test", dir)
			if code != 2 || out != "" || !strings.HasPrefix(errs, file+tc.want) {
				t.Fatalf("exit %d, want 2 and stderr starting %q\nstdout: %s\nstderr: %s", code, file+tc.want, out, errs)
			}
		})
	}
}

// Every bad key of a test file is reported in one run: two in one case,
// one in another, and a later case's bad expectation.
func TestPolicyTestReportsEveryBadKey(t *testing.T) {
	dir := policyDir(t, map[string]string{"q.yaml": "@" + yunikornACL, "bad_test.yaml": "config: q.yaml\ncases:\n" +
		"  - {name: a, user: u, qeue: root.test, expct: allowed}\n" +
		"  - {name: b, user: u, expect: allowed}\n" +
		"  - {name: c, usr: u, expect: allowed}\n" +
		"  - {name: d, user: u, expect: alowed}\n"})
	file := filepath.Join(dir, "bad_test.yaml")
	out, errs, code := run(t, "test", dir)
	want := []string{`:3:24: unknown key "qeue"`, `:3:41: unknown key "expct"`, `:5:15: unknown key "usr"`, `:6:32: expect: want allowed or denied, not "alowed"`}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 2 || out != "" || len(lines) != len(want) {
		t.Fatalf("exit %d, want 2 and %d lines\nstdout: %s\nstderr: %s", code, len(want), out, errs)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], file+w) {
			t.Errorf("line %d: %q, want %q…", i+1, lines[i], file+w)
		}
	}
}

// A configuration that does not load is exit 2, as for every command.
func TestPolicyTestBrokenConfig(t *testing.T) {
	dir := policyDir(t, map[string]string{"q.yaml": "@../../../examples/broken.yaml", "a_test.yaml": "config: q.yaml\ncases:\n  - {name: a, user: u, expect: allowed}\n"})
	out, errs, code := run(t, "test", dir)
	if code != 2 || !strings.Contains(errs, "config q.yaml does not load") || !strings.Contains(errs, `unknown key "submitAcl"`) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// -o json carries the counts and, for each failure, the problems and
// the trail.
func TestPolicyTestJSON(t *testing.T) {
	dir := policyDir(t, map[string]string{"queues.yaml": "@" + yunikornACL, "acl_test.yaml": wrongExpectation})
	out, errs, code := run(t, "test", "-o", "json", dir)
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Passed, Failed int
		Files          []struct {
			File, Config string
			Cases        []struct {
				Name, Kind, Expected, Got, Reproduce, Trail string
				Line                                        int
				Passed                                      bool
				Problems                                    []string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Passed != 1 || rep.Failed != 1 || len(rep.Files) != 1 || len(rep.Files[0].Cases) != 2 {
		t.Fatalf("%+v", rep)
	}
	c := rep.Files[0].Cases[1]
	if c.Passed || c.Kind != "decision" || c.Expected != "allowed" || c.Got != "denied" || c.Line != 8 ||
		len(c.Problems) != 1 || !strings.Contains(c.Trail, "trail (admin on root.test") || !strings.HasPrefix(c.Reproduce, "usher explain ") {
		t.Fatalf("%+v", c)
	}
	if p := rep.Files[0].Cases[0]; !p.Passed || p.Trail != "" || p.Problems != nil {
		t.Fatalf("a passing case: %+v", p)
	}
}

// -o junit is JUnit XML that encoding/xml reads, with the counts CI
// systems show and the trail in the failure.
func TestPolicyTestJUnit(t *testing.T) {
	dir := policyDir(t, map[string]string{"queues.yaml": "@" + yunikornACL, "acl_test.yaml": wrongExpectation})
	out, errs, code := run(t, "test", dir, "-o", "junit")
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var suites struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &suites); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if suites.Tests != 2 || suites.Failures != 1 || len(suites.Suites) != 1 {
		t.Fatalf("%+v", suites)
	}
	s := suites.Suites[0]
	if s.Name != filepath.Join(dir, "acl_test.yaml") || s.Tests != 2 || s.Failures != 1 || len(s.Cases) != 2 {
		t.Fatalf("%+v", s)
	}
	if s.Cases[0].Failure != nil {
		t.Fatalf("passing case has a failure: %+v", s.Cases[0])
	}
	f := s.Cases[1].Failure
	if f == nil || f.Message != "decision: want allowed, got denied" || !strings.Contains(f.Text, `root.test  adminacl   "sue dev,test"`) {
		t.Fatalf("%+v", s.Cases[1])
	}
}

// The example in usher test --help is a test file that passes against
// examples/teams.yaml, so the help teaches something true.
func TestPolicyTestHelpExampleRuns(t *testing.T) {
	help, _, code := run(t, "test", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	start := strings.Index(help, "  config: teams.yaml\n")
	end := strings.Index(help, "\n\n  usher test ")
	if start < 0 || end < start {
		t.Fatalf("no example in the help:\n%s", help)
	}
	var file strings.Builder
	for _, l := range strings.Split(help[start:end], "\n") {
		file.WriteString(strings.TrimPrefix(l, "  ") + "\n")
	}
	dir := policyDir(t, map[string]string{"teams.yaml": "@../../../examples/teams.yaml", "teams_test.yaml": file.String()})
	out, errs, code := run(t, "test", dir)
	if code != 0 || !strings.Contains(out, "2 passed, 0 failed") {
		t.Fatalf("exit %d\n%s%s\nfile:\n%s", code, out, errs, file.String())
	}
}

// Directories are searched for *_test.yaml only; a file named on the
// command line runs whatever its name; a directory without test files
// is an error.
func TestPolicyTestDiscovery(t *testing.T) {
	ok := "config: ../q.yaml\ncases:\n  - {name: a, user: sue, queue: root.test, expect: allowed}\n"
	dir := policyDir(t, map[string]string{"q.yaml": "@" + yunikornACL, "sub/a_test.yaml": ok, "sub/b_test.yml": ok,
		"sub/notes.yaml": "not: a test", "sub/.hidden/c_test.yaml": "broken: ["})
	out, errs, code := run(t, "test", dir)
	if code != 0 || !strings.Contains(out, "2 passed, 0 failed") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	named := filepath.Join(dir, "sub", "named.yaml")
	os.WriteFile(named, []byte(ok), 0o644)
	if out, errs, code = run(t, "test", named); code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	empty := t.TempDir()
	if _, errs, code = run(t, "test", empty); code != 2 || !strings.Contains(errs, "no policy test files (*_test.yaml) under") {
		t.Fatalf("exit %d %s", code, errs)
	}
}

// The runs shown in README.md are what the command prints: the shipped
// tests against the change proposed in examples/diff, a clean run of
// examples/, and a typo in a test file.
func TestPolicyTestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../../../examples")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(repo, p)
			files["examples/"+rel] = "@" + p
		}
		return err
	})
	files["examples/teams.yaml"] = "@" + filepath.Join(repo, "diff", "teams-next.yaml")
	dir := policyDir(t, files)
	t.Chdir(dir)
	out, _, code := run(t, "test", "examples/teams_test.yaml")
	want := fmt.Sprintf("$ usher test examples/teams_test.yaml; echo $?\n%s%d\n", out, code)
	if code != 1 || !strings.Contains(string(readme), want) {
		t.Errorf("README.md: the failing run is stale; the command prints:\n%s", want)
	}

	clean := policyDir(t, map[string]string{})
	os.CopyFS(filepath.Join(clean, "examples"), os.DirFS(repo))
	os.WriteFile(filepath.Join(clean, "examples", "typo_test.yaml"), []byte("config: teams.yaml\ncases:\n  - name: typo\n    user: maria\n    qeue: root.ml\n    expect: allowed\n"), 0o644)
	t.Chdir(clean)
	out, errs, code := run(t, "test", "examples/typo_test.yaml")
	want = fmt.Sprintf("$ usher test examples/typo_test.yaml; echo $?\n%s%s%d\n", out, errs, code)
	if code != 2 || !strings.Contains(string(readme), want) {
		t.Errorf("README.md: the typo run is stale; the command prints:\n%s", want)
	}
	os.Remove(filepath.Join(clean, "examples", "typo_test.yaml"))
	out, _, code = run(t, "test", "examples/")
	summary := out[strings.LastIndex(strings.TrimRight(out, "\n"), "\n")+1:]
	want = fmt.Sprintf("$ usher test examples/; echo $?\n…\n%s%d\n", summary, code)
	if code != 0 || !strings.Contains(string(readme), want) {
		t.Errorf("README.md: the clean run is stale; the command prints:\n%s", want)
	}
}

// examples/yarn/usher.yaml, which usher_test.yaml tests, is what usher
// import makes of the YARN and Spark files beside it.
func TestPolicyTestYARNExampleIsTheImport(t *testing.T) {
	dir := t.TempDir()
	t.Chdir("../../../examples/yarn")
	dst := filepath.Join(dir, "usher.yaml")
	if _, errs, code := run(t, "import", "yarn", "--fair-scheduler", "fair-scheduler.xml", "--yarn-site", "yarn-site.xml",
		"--spark-defaults", "spark-defaults.conf", "-o", dst); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	fresh, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("usher.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(fresh) != string(committed) {
		t.Fatalf("examples/yarn/usher.yaml is stale; regenerate it (examples/yarn/README.md). usher import writes:\n%s", fresh)
	}
}
