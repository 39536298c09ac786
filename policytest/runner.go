// Package policytest runs policy tests (docs/policy-tests.md): files that
// name a configuration and list the decisions, placements and admission
// reviews expected of it. Each case is decided by the code usher serve
// runs, and a failing one explained from the same generation (package
// answer), with the usher command that shows it.
package policytest

import (
	"bytes"
	"cmp"
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
	"regexp"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/serving"
)

// Find returns the files named by roots: a file as it is, a directory's
// *_test.yaml and *_test.yml files, recursively, in lexical order.
func Find(roots []string) ([]string, error) {
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
			switch {
			case err != nil:
				return err
			case d.IsDir() && path != root && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			case !d.IsDir() && (strings.HasSuffix(path, "_test.yaml") || strings.HasSuffix(path, "_test.yml")):
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

// Report is the outcome of a run; its JSON form is usher test -o json.
type Report struct {
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	Files  []FileReport `json:"files"`
}

type FileReport struct {
	File   string       `json:"file"`
	Config string       `json:"config"`
	Cases  []CaseReport `json:"cases"`
}

type CaseReport struct {
	Name      string   `json:"name"`
	Line      int      `json:"line"`
	Kind      string   `json:"kind"` // decision, application, placement or admission
	Passed    bool     `json:"passed"`
	Expected  string   `json:"expected"`
	Got       string   `json:"got"`
	Problems  []string `json:"problems,omitempty"`  // each expectation not met
	Reproduce string   `json:"reproduce,omitempty"` // the usher command that shows the same decision
	// Trail is what the reproducing command prints, or the admission
	// response and audit record; only for failures.
	Trail   string        `json:"trail,omitempty"`
	Elapsed time.Duration `json:"-"`
	// args is the reproducing command; explain writes its trail from the
	// generation the case was decided with.
	args    []string
	explain func(io.Writer)
}

// Run loads the file's configuration once, as usher serve does (with the
// variables lookup reads) but Strict, and decides every case with what
// serves it. An error means the configuration did not load.
func Run(ctx context.Context, f *File, lookup func(string) (string, bool)) (FileReport, error) {
	fr := FileReport{File: f.path, Config: f.configPath}
	cfg, err := config.Load(f.configPath, config.Strict(), config.WithEnv(lookup))
	if err != nil {
		return fr, fmt.Errorf("%s: config %s does not load:\n%v", f.path, f.config, err)
	}
	logs := &bytes.Buffer{}
	e, err := serving.Build(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		return fr, fmt.Errorf("%s: config %s: %v", f.path, f.config, err)
	}
	defer e.Close()
	r := &caseRunner{e: e, configPath: f.configPath, logs: logs}
	r.handler = admission.NewHandler(func() *admission.State { return e.Admission },
		admission.WithAudit(func(rec admission.Record) { r.audit = append(r.audit, rec) }))
	for i, c := range f.cases {
		start := time.Now()
		cr := r.run(ctx, i, c)
		cr.Name, cr.Line, cr.Elapsed = c.Name, c.line, time.Since(start)
		cr.Passed = len(cr.Problems) == 0
		switch {
		case cr.Passed:
			cr.Trail = ""
		case cr.explain != nil:
			var b strings.Builder
			cr.explain(&b)
			cr.Reproduce, cr.Trail = "usher "+shellJoin(cr.args), b.String()
		}
		fr.Cases = append(fr.Cases, cr)
	}
	return fr, nil
}

type caseRunner struct {
	e          *serving.State
	configPath string
	handler    *admission.Handler
	audit      []admission.Record
	logs       *bytes.Buffer
}

func (r *caseRunner) run(ctx context.Context, i int, c testCase) CaseReport {
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
func (cr *CaseReport) want(what string, want, got any) {
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
	if !strings.EqualFold(c.Partition, policy.DefaultPartition) {
		args = append(args, "--partition", c.Partition)
	}
	args = append(args, "--user", c.User)
	if len(c.Groups) > 0 {
		args = append(args, "--groups", strings.Join(c.Groups, ","))
	}
	if c.Queue != "" {
		args = append(args, "--queue", c.Queue)
	}
	return args
}

// lookupError writes a failed decision, with the nearest names of an
// unknown partition or queue, as the commands print it.
func (r *caseRunner) lookupError(w io.Writer, partition, queue string, err error) {
	fmt.Fprintln(w, err)
	if hint := r.e.Config().Suggest(partition, queue, err); hint != "" {
		fmt.Fprintln(w, hint)
	}
}

func (r *caseRunner) decision(ctx context.Context, c testCase) CaseReport {
	cr := CaseReport{Kind: c.kind, Expected: c.Expect}
	action, _ := policy.ParseAction(c.Action)
	req := engine.Request{Partition: c.Partition, Queue: c.Queue, User: c.User, Groups: c.Groups, Action: action}
	res, err := r.e.Check(ctx, req)
	cr.args = r.baseArgs("explain", c)
	if c.Action != "submit" {
		cr.args = append(cr.args, "--action", c.Action)
	}
	cr.explain = func(w io.Writer) {
		res, steps, err := r.e.Explain(ctx, req)
		if err != nil {
			r.lookupError(w, c.Partition, c.Queue, err)
			return
		}
		answer.Explain(w, res, steps)
	}
	if !cr.settle(c.Expect, res.Allowed, err) {
		return cr
	}
	if c.decided != nil {
		r.checkDecided(&cr, c.decided, res.By.Queue, string(res.By.ACL), res.By.Match, "")
	}
	return cr
}

func (r *caseRunner) checkDecided(cr *CaseReport, d *decidedBy, queue, aclName string, m acl.Match, rule string) {
	if d.Rule != "" && d.Rule != rule {
		cr.want("decidedBy.rule", d.Rule, cmp.Or(rule, "(none)"))
	}
	if d.Queue != "" && !strings.EqualFold(d.Queue, queue) {
		cr.want("decidedBy.queue", d.Queue, cmp.Or(queue, "(none)"))
	}
	if d.ACL != "" && d.ACL != aclName {
		cr.want("decidedBy.acl", d.ACL, cmp.Or(aclName, "(none)"))
	}
	if d.Kind != "" && d.Kind != m.Kind.String() {
		cr.want("decidedBy.kind", d.Kind, m.Kind)
	}
	if d.Entry != "" && d.Entry != m.Name {
		cr.want("decidedBy.entry", fmt.Sprintf("%q", d.Entry), fmt.Sprintf("%q", m.Name))
	}
}

func (r *caseRunner) application(ctx context.Context, c testCase) CaseReport {
	cr := CaseReport{Kind: c.kind, Expected: c.Expect}
	action, _ := application.ParseAction(c.Action)
	app := application.Application{ID: c.app.ID, Owner: c.app.Owner, Queue: c.app.Queue}
	args := append(r.baseArgs("app", c), "--owner", c.app.Owner, "--action", c.Action)
	for _, f := range []struct {
		flag string
		v    string
	}{{"--queue", c.app.Queue}, {"--id", c.app.ID}, {"--target-queue", c.app.TargetQueue}} {
		if f.v != "" {
			args = append(args, f.flag, f.v)
		}
	}
	for _, f := range []struct {
		flag string
		text *string
		dst  **acl.ACL
	}{{"--view-acl", c.app.ViewACL, &app.ViewACL}, {"--modify-acl", c.app.ModifyACL, &app.ModifyACL}} {
		if f.text == nil {
			continue
		}
		args = append(args, f.flag, *f.text)
		a, _, err := acl.Parse(*f.text, acl.YARN)
		if err != nil {
			cr.Got = fmt.Sprintf("error: %s: %v", f.flag, err)
			cr.want("decision", c.Expect, cr.Got)
			return cr
		}
		*f.dst = &a
	}
	cr.args = append(args, "--explain")
	d, in, err := r.e.DecideApplication(ctx, engine.AppRequest{Partition: c.Partition, User: c.User, Groups: c.Groups,
		App: app, Action: action, Target: c.app.TargetQueue})
	cr.explain = func(w io.Writer) {
		if err != nil {
			r.lookupError(w, c.Partition, c.app.Queue, err)
			return
		}
		answer.App(w, d, in, app, true)
	}
	if !cr.settle(c.Expect, d.Allowed, err) {
		return cr
	}
	if c.decided != nil {
		s, _ := d.By()
		r.checkDecided(&cr, c.decided, s.Grant.Queue, string(s.Grant.ACL), s.Match, s.Rule.String())
	}
	return cr
}

func (r *caseRunner) place(ctx context.Context, c testCase) CaseReport {
	cr := CaseReport{Kind: c.kind, Expected: c.Expect}
	cr.args = r.baseArgs("place", c)
	for _, k := range slices.Sorted(maps.Keys(c.Tags)) {
		cr.args = append(cr.args, "--tag", k+"="+c.Tags[k])
	}
	res, err := r.e.Place(ctx, engine.PlaceRequest{Partition: c.Partition, Queue: c.Queue, Tags: c.Tags, User: c.User, Groups: c.Groups, Explain: true})
	cr.explain = func(w io.Writer) {
		if err != nil {
			r.lookupError(w, c.Partition, c.Queue, err)
			return
		}
		answer.Place(w, &res)
	}
	if err != nil {
		cr.Got = "error: " + err.Error()
		cr.want("placement", c.Expect, cr.Got)
		return cr
	}
	cr.Got = "rejected"
	if res.Placed {
		cr.Got = res.Queue
	}
	if !strings.EqualFold(cr.Got, c.Expect) {
		cr.want("placement", c.Expect, cr.Got)
	}
	return cr
}

// admission reviews the case's object through the webhook handler usher
// serve mounts at /mutate and /validate, over an in-process HTTP request.
func (r *caseRunner) admission(ctx context.Context, i int, c testCase) CaseReport {
	cr := CaseReport{Kind: c.kind, Expected: c.Expect}
	spec := c.review
	body := spec.review
	if body == nil {
		var err error
		if body, err = buildReview(i, c); err != nil {
			cr.Got = "error: " + err.Error()
			cr.want("admission", c.Expect, cr.Got)
			return cr
		}
	}
	h := r.handler.MutateHTTP()
	if spec.Hook == "validate" {
		h = r.handler.ValidateHTTP()
	}
	r.audit = r.audit[:0]
	r.logs.Reset()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/"+spec.Hook, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var trail strings.Builder
	fmt.Fprintf(&trail, "%s: HTTP %d\n", spec.Hook, w.Code)
	var rv admissionv1.AdmissionReview
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &rv) != nil || rv.Response == nil {
		cr.Got = fmt.Sprintf("HTTP %d: %s", w.Code, strings.TrimSpace(w.Body.String()))
		cr.want("admission", c.Expect, cr.Got)
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
	if cr.Got != c.Expect {
		cr.want("admission", c.Expect, cr.Got)
	}
	if spec.code != 0 && int32(spec.code) != code {
		cr.want("code", spec.code, code)
	}
	if spec.Message != "" && !strings.Contains(msg, spec.Message) {
		cr.want("message", fmt.Sprintf("to contain %q", spec.Message), fmt.Sprintf("%q", msg))
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
			cr.want("stamped", fmt.Sprintf("%s %v", s.User, s.Groups), "no user.info in the patch")
		case got.User != s.User || !slices.Equal(got.Groups, s.Groups):
			cr.want("stamped", fmt.Sprintf("%s %v", s.User, s.Groups), fmt.Sprintf("%s %v", got.User, got.Groups))
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
	gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind)
	ns := cmp.Or(spec.Namespace, meta.Metadata.Namespace)
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID(fmt.Sprintf("usher-test-%d", i+1)),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"},
		Name:      meta.Metadata.Name,
		Namespace: ns,
		Operation: admissionv1.Operation(spec.Operation),
		UserInfo:  authenticationv1.UserInfo{Username: c.User, Groups: c.Groups},
	}
	req.RequestKind, req.RequestResource = &req.Kind, &req.Resource
	if spec.Operation == "DELETE" && spec.oldObject == nil {
		// The API server sends the object being deleted as oldObject.
		req.OldObject = runtime.RawExtension{Raw: spec.object}
	} else {
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

// stampedIdentity reads the user.info annotation a JSON patch sets, if any.
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
		var s string
		switch {
		case op.Op != "add" && op.Op != "replace":
			continue
		case strings.HasSuffix(op.Path, "/annotations/"+key):
			if err := json.Unmarshal(op.Value, &s); err != nil {
				return nil, err
			}
		case strings.HasSuffix(op.Path, "/annotations"):
			var m map[string]string
			if err := json.Unmarshal(op.Value, &m); err != nil {
				return nil, err
			}
			var ok bool
			if s, ok = m[admission.UserInfoAnnotation]; !ok {
				continue
			}
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

// Add counts the cases of fr and adds it to r.
func (r *Report) Add(fr FileReport) {
	r.Files = append(r.Files, fr)
	for _, c := range fr.Cases {
		if c.Passed {
			r.Passed++
		} else {
			r.Failed++
		}
	}
}

// WriteText writes one line per case, with a failure's problems,
// reproducing command and trail, then the summary "N passed, M failed".
func (rep Report) WriteText(w io.Writer) {
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

// shellSafe are the arguments a POSIX shell takes as they are.
var shellSafe = regexp.MustCompile(`^[-a-zA-Z0-9_.,:/=@+]+$`)

// shellJoin quotes args for a POSIX shell where they need it.
func shellJoin(args []string) string {
	out := slices.Clone(args)
	for i, a := range out {
		if !shellSafe.MatchString(a) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// settle records a decision case's verdict, or its error, against the
// expectation; it reports whether what decided is worth checking.
func (cr *CaseReport) settle(expect string, allowed bool, err error) bool {
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
