package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/serving"
)

const testHelp = `Runs policy tests: files that name a configuration and list the decisions
expected of it, so a change to the queue ACLs, the placement rules or the
admission settings is checked in CI before it is rolled out. Directories
are searched, recursively, for files named *_test.yaml; a file given by
name is run whatever its name. The format is in docs/policy-tests.md.

Each case is decided by the code usher serve runs, on the configuration
read as serve reads it (ADMISSION_CONTROLLER_* variables applied):
submit and admin as usher explain, view, modify, kill and move as usher
app, place as usher place, and admission cases by the admission webhook
handler itself (an AdmissionReview in, the response checked).

One line per case, PASS or FAIL; a failure shows what was expected, what
came out, the command that reproduces it and its trail. The last line is
"N passed, M failed".

Exit status: 0 every case passed, 1 a case failed, 2 bad usage or a bad
test file (FILE:LINE:COL: message on stderr; nothing is run) or a
configuration that does not load.

Example: a test file beside examples/teams.yaml (examples/*_test.yaml has more)
  config: teams.yaml
  cases:
    - name: data scientists submit to their team's queue
      user: maria
      groups: [ml]
      queue: root.ml.training
      expect: allowed
      decidedBy: {queue: root.ml, acl: submitacl, kind: group, entry: ml}
    - name: contractors are not platform admins
      user: eve
      groups: [contractors]
      queue: root.analytics
      action: admin
      expect: denied

  usher test examples/                 # every *_test.yaml under examples/
  usher test -o junit examples/ > policy-tests.xml
`

func newTestCommand(env *Env) *cobra.Command {
	var format string
	cmd, fs := newCommand(env, groupConfig, "test [DIR|FILE]... [flags]",
		"run policy tests: expected decisions, placements and admission reviews (*_test.yaml)", testHelp)
	cmd.Args = cobra.ArbitraryArgs
	// Flags may come before or after the paths: usher test examples/ -o junit.
	fs.StringVarP(&format, "output", "o", "text", "output `FORMAT`: text, json or junit (JUnit XML, for CI systems)")
	return setBody(env, cmd, func(ctx context.Context, roots []string) int { return runTest(ctx, env, format, roots) })
}

func runTest(ctx context.Context, env *Env, format string, roots []string) int {
	if !slices.Contains([]string{"text", "json", "junit"}, format) {
		env.errorf("-o: want text, json or junit, not %q", format)
		return ExitUsage
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	paths, err := findTestFiles(roots)
	if err != nil {
		env.errorf("%v", err)
		return ExitUsage
	}
	var files []*testFile
	bad := false
	for _, p := range paths {
		f, err := loadTestFile(p)
		if err != nil {
			fmt.Fprintln(env.Stderr, err)
			bad = true
			continue
		}
		files = append(files, f)
	}
	if bad {
		return ExitUsage
	}
	rep := testReport{}
	for _, f := range files {
		fr, err := runTestFile(ctx, env, f)
		if err != nil {
			fmt.Fprintln(env.Stderr, err)
			return ExitUsage
		}
		rep.Files = append(rep.Files, fr)
		for _, c := range fr.Cases {
			if c.Passed {
				rep.Passed++
			} else {
				rep.Failed++
			}
		}
	}
	switch format {
	case "json":
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	case "junit":
		writeJUnit(env.Stdout, rep)
	default:
		writeTestText(env.Stdout, rep)
	}
	if rep.Failed > 0 {
		return ExitDenied
	}
	return ExitOK
}

// findTestFiles returns the files named by roots: a file as it is, a
// directory's *_test.yaml and *_test.yml files, recursively, in lexical
// order.
func findTestFiles(roots []string) ([]string, error) {
	var out []string
	for _, root := range roots {
		st, err := os.Stat(root)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, root)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if !d.IsDir() && isTestFileName(d.Name()) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, fmt.Errorf("no policy test files (*_test.yaml) under %s", root)
		}
	}
	return out, nil
}

func isTestFileName(name string) bool {
	return strings.HasSuffix(name, "_test.yaml") || strings.HasSuffix(name, "_test.yml")
}

// testReport is the outcome of a run; its JSON form is usher test -o json.
type testReport struct {
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	Files  []fileReport `json:"files"`
}

type fileReport struct {
	File   string       `json:"file"`
	Config string       `json:"config"`
	Cases  []caseReport `json:"cases"`
}

type caseReport struct {
	Name string `json:"name"`
	Line int    `json:"line"`
	// Kind is decision, application, placement or admission.
	Kind     string `json:"kind"`
	Passed   bool   `json:"passed"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	// Problems lists each expectation not met; empty when Passed.
	Problems []string `json:"problems,omitempty"`
	// Reproduce is the usher command that shows the same decision (not
	// for admission cases).
	Reproduce string `json:"reproduce,omitempty"`
	// Trail is the explanation: the reproducing command's output, or the
	// admission response and audit record. Only for failures.
	Trail   string        `json:"trail,omitempty"`
	Elapsed time.Duration `json:"-"`
	// args is the usher command that shows the decision with its trail.
	args []string
}

// runTestFile loads the file's configuration once, as usher serve does
// but Strict, and decides every case. An error means the configuration
// did not load.
func runTestFile(ctx context.Context, env *Env, f *testFile) (fileReport, error) {
	fr := fileReport{File: f.path, Config: f.configPath}
	cfg, err := loadConfig(env, f.configPath, config.Strict())
	if err != nil {
		return fr, fmt.Errorf("%s: config %s does not load:\n%v", f.path, f.config, err)
	}
	logs := &bytes.Buffer{}
	e, err := serving.Build(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		return fr, fmt.Errorf("%s: config %s: %v", f.path, f.config, err)
	}
	defer e.Close()
	r := &caseRunner{env: env, e: e, configPath: f.configPath, logs: logs}
	r.handler = admission.NewHandler(nil, admission.WithState(func() *admission.State { return e.Admission }),
		admission.WithAudit(func(rec admission.Record) { r.audit = append(r.audit, rec) }))
	for i, c := range f.cases {
		start := time.Now()
		cr := r.run(ctx, i, c)
		cr.Name, cr.Line, cr.Elapsed = c.name, c.line, time.Since(start)
		cr.Passed = len(cr.Problems) == 0
		switch {
		case cr.Passed:
			cr.Trail = ""
		case cr.args != nil:
			r.explainWith(ctx, &cr, cr.args)
		}
		fr.Cases = append(fr.Cases, cr)
	}
	return fr, nil
}

type caseRunner struct {
	env        *Env
	e          *serving.State
	configPath string
	handler    *admission.Handler
	audit      []admission.Record
	logs       *bytes.Buffer
}

func (r *caseRunner) run(ctx context.Context, i int, c testCase) caseReport {
	switch c.kind {
	case caseDecision:
		return r.decision(ctx, c)
	case caseApplication:
		return r.application(ctx, c)
	case casePlace:
		return r.place(ctx, c)
	default:
		return r.admission(ctx, i, c)
	}
}

// want records a mismatch.
func (cr *caseReport) want(what string, want, got any) {
	cr.Problems = append(cr.Problems, fmt.Sprintf("%s: want %v, got %v", what, want, got))
}

func verdictOf(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

// baseArgs are the flags every reproducing command takes.
func (r *caseRunner) baseArgs(cmd string, c testCase) []string {
	args := []string{cmd, "--config", r.configPath}
	if !strings.EqualFold(c.partition, policy.DefaultPartition) {
		args = append(args, "--partition", c.partition)
	}
	args = append(args, "--user", c.user)
	if len(c.groups) > 0 {
		args = append(args, "--groups", strings.Join(c.groups, ","))
	}
	return args
}

// explainWith runs the usher command args, which shows the same decision
// with its trail, and records it as the case's reproduction and trail.
func (r *caseRunner) explainWith(ctx context.Context, cr *caseReport, args []string) {
	cr.Reproduce = "usher " + shellJoin(args)
	var out bytes.Buffer
	sub := &Env{Stdout: &out, Stderr: &out, Getenv: r.env.Getenv, LookupEnv: r.env.LookupEnv}
	Run(ctx, sub, args)
	cr.Trail = out.String()
}

func (r *caseRunner) decision(ctx context.Context, c testCase) caseReport {
	cr := caseReport{Kind: "decision", Expected: c.expect}
	action, _ := policy.ParseAction(c.action)
	res, err := r.e.Check(ctx, engine.Request{Partition: c.partition, Queue: c.queue, User: c.user, Groups: c.groups, Action: action})
	args := r.baseArgs("explain", c)
	if c.queue != "" {
		args = append(args, "--queue", c.queue)
	}
	if c.action != "submit" {
		args = append(args, "--action", c.action)
	}
	cr.args = args
	if !cr.settle(c.expect, res.Allowed, err) {
		return cr
	}
	if d := c.decided; d != nil {
		by := res.By
		r.checkDecided(&cr, d, by.Queue, string(by.ACL), by.Match, "")
	}
	return cr
}

func (r *caseRunner) checkDecided(cr *caseReport, d *decidedBy, queue, aclName string, m acl.Match, rule string) {
	if d.rule != "" && d.rule != rule {
		cr.want("decidedBy.rule", d.rule, orNone(rule))
	}
	if d.queue != "" && !strings.EqualFold(d.queue, queue) {
		cr.want("decidedBy.queue", d.queue, orNone(queue))
	}
	if d.acl != "" && d.acl != aclName {
		cr.want("decidedBy.acl", d.acl, orNone(aclName))
	}
	if d.kind != "" && d.kind != m.Kind.String() {
		cr.want("decidedBy.kind", d.kind, m.Kind)
	}
	if d.entry != "" && d.entry != m.Name {
		cr.want("decidedBy.entry", fmt.Sprintf("%q", d.entry), fmt.Sprintf("%q", m.Name))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func (r *caseRunner) application(ctx context.Context, c testCase) caseReport {
	cr := caseReport{Kind: "application", Expected: c.expect}
	action, _ := application.ParseAction(c.action)
	app := application.Application{ID: c.app.id, Owner: c.app.owner, Queue: c.app.queue}
	args := r.baseArgs("app", c)
	args = append(args, "--owner", c.app.owner, "--action", c.action)
	for _, f := range []struct {
		flag string
		v    string
	}{{"--queue", c.app.queue}, {"--id", c.app.id}, {"--target-queue", c.app.targetQueue}} {
		if f.v != "" {
			args = append(args, f.flag, f.v)
		}
	}
	for _, f := range []struct {
		flag string
		text *string
		dst  **acl.ACL
	}{{"--view-acl", c.app.viewACL, &app.ViewACL}, {"--modify-acl", c.app.modifyACL, &app.ModifyACL}} {
		if f.text == nil {
			continue
		}
		args = append(args, f.flag, *f.text)
		a, _, err := acl.Parse(*f.text, acl.YARN)
		if err != nil {
			cr.Got = fmt.Sprintf("error: %s: %v", f.flag, err)
			cr.want("decision", c.expect, cr.Got)
			return cr
		}
		*f.dst = &a
	}
	args = append(args, "--explain")
	cr.args = args
	d, _, err := r.e.DecideApplication(ctx, engine.AppRequest{Partition: c.partition, User: c.user, Groups: c.groups,
		App: app, Action: action, Target: c.app.targetQueue})
	if !cr.settle(c.expect, d.Allowed, err) {
		return cr
	}
	if c.decided != nil {
		s, _ := d.By()
		r.checkDecided(&cr, c.decided, s.Grant.Queue, string(s.Grant.ACL), s.Match, s.Rule.String())
	}
	return cr
}

func (r *caseRunner) place(ctx context.Context, c testCase) caseReport {
	cr := caseReport{Kind: "placement", Expected: c.expect}
	args := r.baseArgs("place", c)
	if c.queue != "" {
		args = append(args, "--queue", c.queue)
	}
	for _, k := range slices.Sorted(maps.Keys(c.tags)) {
		args = append(args, "--tag", k+"="+c.tags[k])
	}
	cr.args = args
	// The engine places as usher place does: the partition's rules, or the
	// implicit provided rule, for the user identified as check identifies.
	res, err := r.e.Place(ctx, engine.PlaceRequest{Partition: c.partition, Queue: c.queue, Tags: c.tags, User: c.user, Groups: c.groups})
	if err != nil {
		cr.Got = "error: " + err.Error()
		cr.want("placement", c.expect, cr.Got)
		return cr
	}
	cr.Got = "rejected"
	if res.Placed {
		cr.Got = res.Queue
	}
	if !strings.EqualFold(cr.Got, c.expect) {
		cr.want("placement", c.expect, cr.Got)
	}
	return cr
}

// admission reviews the case's object through the webhook handler usher
// serve mounts at /mutate and /validate, over an in-process HTTP request.
func (r *caseRunner) admission(ctx context.Context, i int, c testCase) caseReport {
	cr := caseReport{Kind: "admission", Expected: c.expect}
	spec := c.review
	body := spec.review
	if body == nil {
		var err error
		if body, err = buildReview(i, c); err != nil {
			cr.Got = "error: " + err.Error()
			cr.want("admission", c.expect, cr.Got)
			return cr
		}
	}
	h := r.handler.MutateHTTP()
	if spec.hook == "validate" {
		h = r.handler.ValidateHTTP()
	}
	r.audit = r.audit[:0]
	r.logs.Reset()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/"+spec.hook, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var trail strings.Builder
	fmt.Fprintf(&trail, "%s: HTTP %d\n", spec.hook, w.Code)
	var rv admissionv1.AdmissionReview
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &rv) != nil || rv.Response == nil {
		cr.Got = fmt.Sprintf("HTTP %d: %s", w.Code, strings.TrimSpace(w.Body.String()))
		cr.want("admission", c.expect, cr.Got)
		cr.Trail = trail.String() + w.Body.String()
		return cr
	}
	resp := rv.Response
	code, msg := int32(http.StatusOK), ""
	if resp.Result != nil {
		msg = resp.Result.Message
		if resp.Result.Code != 0 {
			code = resp.Result.Code
		}
	}
	cr.Got = verdictOf(resp.Allowed)
	fmt.Fprintf(&trail, "response: %s, code %d\n", cr.Got, code)
	if msg != "" {
		fmt.Fprintf(&trail, "message: %s\n", msg)
	}
	if len(resp.Patch) > 0 {
		fmt.Fprintf(&trail, "patch: %s\n", resp.Patch)
	}
	for _, rec := range r.audit {
		var attrs []string
		for _, a := range rec.AppendAttrs(nil) {
			attrs = append(attrs, a.String())
		}
		fmt.Fprintf(&trail, "audit: %s\n", strings.Join(attrs, " "))
	}
	if r.logs.Len() > 0 {
		fmt.Fprintf(&trail, "log: %s", r.logs.String())
	}
	cr.Trail = trail.String()
	if cr.Got != c.expect {
		cr.want("admission", c.expect, cr.Got)
	}
	if spec.code != 0 && int32(spec.code) != code {
		cr.want("code", spec.code, code)
	}
	if spec.message != "" && !strings.Contains(msg, spec.message) {
		cr.want("message", fmt.Sprintf("to contain %q", spec.message), fmt.Sprintf("%q", msg))
	}
	if spec.patched != nil && *spec.patched != (len(resp.Patch) > 0) {
		cr.want("patched", *spec.patched, len(resp.Patch) > 0)
	}
	if s := spec.stamped; s != nil {
		got, err := stampedIdentity(resp.Patch)
		switch {
		case err != nil:
			cr.Problems = append(cr.Problems, "stamped: "+err.Error())
		case got == nil:
			cr.want("stamped", fmt.Sprintf("%s %v", s.user, s.groups), "no user.info in the patch")
		case got.User != s.user || !slices.Equal(got.Groups, s.groups):
			cr.want("stamped", fmt.Sprintf("%s %v", s.user, s.groups), fmt.Sprintf("%s %v", got.User, got.Groups))
		}
	}
	return cr
}

// buildReview wraps a manifest in the AdmissionReview the API server
// would send for the case's user and operation.
func buildReview(i int, c testCase) ([]byte, error) {
	spec := c.review
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
		} `json:"metadata"`
	}
	if err := json.Unmarshal(spec.object, &meta); err != nil {
		return nil, err
	}
	if meta.APIVersion == "" || meta.Kind == "" {
		return nil, fmt.Errorf("the object needs apiVersion and kind")
	}
	gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind)
	ns := spec.namespace
	if ns == "" {
		ns = meta.Metadata.Namespace
	}
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID(fmt.Sprintf("usher-test-%d", i+1)),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"},
		Name:      meta.Metadata.Name,
		Namespace: ns,
		Operation: admissionv1.Operation(spec.operation),
		UserInfo:  authenticationv1.UserInfo{Username: c.user, Groups: c.groups},
	}
	req.RequestKind, req.RequestResource = &req.Kind, &req.Resource
	switch {
	case spec.operation == "DELETE" && spec.oldObject == nil:
		// The API server sends the object being deleted as oldObject.
		req.OldObject = runtime.RawExtension{Raw: spec.object}
	default:
		req.Object = runtime.RawExtension{Raw: spec.object}
		if spec.oldObject != nil {
			req.OldObject = runtime.RawExtension{Raw: spec.oldObject}
		}
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

// stampedIdentity reads the user.info annotation a JSON patch sets; nil
// when it sets none.
func stampedIdentity(patch []byte) (*admission.UserInfo, error) {
	if len(patch) == 0 {
		return nil, nil
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("the patch is not a JSON patch: %v", err)
	}
	key := strings.ReplaceAll(admission.UserInfoAnnotation, "/", "~1")
	for _, op := range ops {
		if op.Op != "add" && op.Op != "replace" {
			continue
		}
		var s string
		switch {
		case strings.HasSuffix(op.Path, "/annotations/"+key):
			if err := json.Unmarshal(op.Value, &s); err != nil {
				return nil, err
			}
		case strings.HasSuffix(op.Path, "/annotations"):
			var m map[string]string
			if err := json.Unmarshal(op.Value, &m); err != nil {
				return nil, err
			}
			v, ok := m[admission.UserInfoAnnotation]
			if !ok {
				continue
			}
			s = v
		default:
			continue
		}
		u, err := admission.ParseUserInfo(s)
		if err != nil {
			return nil, err
		}
		return &u, nil
	}
	return nil, nil
}

// writeTestText writes one line per case and the summary.
func writeTestText(w io.Writer, rep testReport) {
	for _, f := range rep.Files {
		fmt.Fprintf(w, "%s (config %s)\n", f.File, f.Config)
		for _, c := range f.Cases {
			if c.Passed {
				fmt.Fprintf(w, "  PASS  %s\n", c.Name)
				continue
			}
			fmt.Fprintf(w, "  FAIL  %s  (%s:%d)\n", c.Name, f.File, c.Line)
			for _, p := range c.Problems {
				fmt.Fprintf(w, "          %s\n", p)
			}
			if c.Reproduce != "" {
				fmt.Fprintf(w, "          $ %s\n", c.Reproduce)
			}
			for _, l := range strings.Split(strings.TrimRight(c.Trail, "\n"), "\n") {
				fmt.Fprintf(w, "          | %s\n", l)
			}
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed\n", rep.Passed, rep.Failed)
}

// shellJoin quotes args for a POSIX shell where they need it.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/=@+", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// settle records the verdict of a decision case: the error, or allowed or
// denied against the expectation. It reports whether the case may go on
// to check what decided.
func (cr *caseReport) settle(expect string, allowed bool, err error) bool {
	if err != nil {
		cr.Got = "error: " + err.Error()
		cr.want("decision", expect, cr.Got)
		return false
	}
	cr.Got = verdictOf(allowed)
	if cr.Got != expect {
		cr.want("decision", expect, cr.Got)
		return false
	}
	return true
}
