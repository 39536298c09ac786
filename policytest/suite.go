package policytest

// The policy test file format of usher test (docs/policy-tests.md). A file
// is read into yaml.v3 nodes and each mapping decoded by decode, not by
// yaml.v3's KnownFields, so that every problem is reported at FILE:LINE:COL
// and an unknown key with the keys known there.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/internal/yamlnode"
	"github.com/usherhq/usher/policy"
)

// File is one parsed policy test file.
type File struct {
	path string
	// config is the configuration's path as written, configPath resolved
	// against the test file's directory.
	config, configPath string
	cases              []testCase
}

// testCase is one expectation: a decision (submit, admin), an
// application action (view, modify, kill, move), a placement (place) or
// an admission review (admission). The tagged fields are its keys.
type testCase struct {
	Name      string            `yaml:"name"`
	Partition string            `yaml:"partition"`
	Queue     string            `yaml:"queue"`
	User      string            `yaml:"user"`
	Groups    []string          `yaml:"groups"`
	Action    string            `yaml:"action"` // the decision's or the application's
	Tags      map[string]string `yaml:"tags"`
	// Expect is allowed or denied; for place, rejected or a queue path.
	Expect      string     `yaml:"expect"`
	Application *yaml.Node `yaml:"application"`
	DecidedBy   *yaml.Node `yaml:"decidedBy"`
	Admission   *yaml.Node `yaml:"admission"`

	line    int
	kind    string
	app     appSpec
	decided *decidedBy
	review  *reviewSpec
}

// A case's kind, as CaseReport.Kind names it.
const (
	caseDecision    = "decision"
	caseApplication = "application"
	casePlace       = "placement"
	caseAdmission   = "admission"
)

// appSpec is the application block: what usher app takes as flags.
type appSpec struct {
	ID          string  `yaml:"id"`
	Owner       string  `yaml:"owner"`
	Queue       string  `yaml:"queue"`
	TargetQueue string  `yaml:"targetQueue"`
	ViewACL     *string `yaml:"viewACL"`
	ModifyACL   *string `yaml:"modifyACL"`
}

// decidedBy is the optional expectation of who decided; "" is not checked.
type decidedBy struct {
	Queue string `yaml:"queue"`
	ACL   string `yaml:"acl"`
	Kind  string `yaml:"kind"`
	Entry string `yaml:"entry"`
	Rule  string `yaml:"rule"`
}

// reviewSpec is an admission case. The tagged fields are its keys; code 0
// and message "" are not checked.
type reviewSpec struct {
	Hook       string     `yaml:"hook"` // mutate or validate
	Review     *yaml.Node `yaml:"review"`
	ReviewFile *yaml.Node `yaml:"reviewFile"`
	Object     *yaml.Node `yaml:"object"`
	ObjectFile *yaml.Node `yaml:"objectFile"`
	OldObject  *yaml.Node `yaml:"oldObject"`
	Operation  string     `yaml:"operation"`
	Namespace  string     `yaml:"namespace"`
	Code       *yaml.Node `yaml:"code"`
	Message    string     `yaml:"message"`
	Patched    *yaml.Node `yaml:"patched"`
	Stamped    *yaml.Node `yaml:"stamped"`

	// review is a whole AdmissionReview (JSON); when nil the request is
	// built from object, oldObject, operation, user and groups.
	review, object, oldObject []byte
	code                      int
	patched                   *bool
	stamped                   *stampedSpec
}

type stampedSpec struct {
	User   string   `yaml:"user"`
	Groups []string `yaml:"groups"`
}

// posError is a problem in a test file, at FILE:LINE:COL.
type posError struct {
	file      string
	line, col int
	msg       string
}

func (e *posError) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.file, e.line, e.col, e.msg) }

type fileParser struct{ path string }

func (p fileParser) errAt(n *yaml.Node, format string, args ...any) error {
	return &posError{p.path, n.Line, n.Column, fmt.Sprintf(format, args...)}
}

// Read reads and checks a policy test file, every case; the error is one
// or more *posError joined.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &posError{path, 1, 1, err.Error()}
	}
	p := fileParser{path}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		line, msg := yamlnode.SyntaxLine(err)
		return nil, &posError{path, max(line, 1), 1, msg}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errAt(&extra, "a test file holds one YAML document; found a second")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &posError{path, 1, 1, "empty test file: want config and cases"}
	}
	root := doc.Content[0]
	f := &File{path: path}
	var top struct {
		Config string     `yaml:"config"`
		Cases  *yaml.Node `yaml:"cases"`
	}
	at, err := p.decode(root, "", &top)
	if err != nil {
		return nil, err
	}
	cfgNode, casesNode := at["config"], top.Cases
	if cfgNode == nil {
		return nil, p.errAt(root, "missing config: the configuration file or ConfigMap manifest, relative to this file")
	}
	if f.config = top.Config; f.config == "" {
		return nil, p.errAt(cfgNode, "config is empty")
	}
	f.configPath = f.config
	if !filepath.IsAbs(f.configPath) {
		f.configPath = filepath.Join(filepath.Dir(path), f.configPath)
	}
	if _, err := os.Stat(f.configPath); err != nil {
		return nil, p.errAt(cfgNode, "config: %v", err)
	}
	if casesNode == nil || casesNode.Kind != yaml.SequenceNode || len(casesNode.Content) == 0 {
		return nil, p.errAt(cmp.Or(casesNode, root), "cases: want a list of one or more cases")
	}
	names := map[string]int{}
	var errs []error
	for _, n := range casesNode.Content {
		c, err := p.testCase(n)
		if prev, dup := names[c.Name]; dup && err == nil {
			err = p.errAt(n, "case %q repeats the name of the case at line %d", c.Name, prev)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		names[c.Name] = c.line
		f.cases = append(f.cases, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// decode checks that n is a mapping whose keys are the yaml tags of the
// struct dst points to and sets each field from its key's value; it
// returns each given key's value node, for positions.
func (p fileParser) decode(n *yaml.Node, prefix string, dst any) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, "want a mapping, got %s", yamlnode.Kind(n))
	}
	st := reflect.ValueOf(dst).Elem()
	fields := map[string]any{}
	for i := range st.NumField() {
		if tag := st.Type().Field(i).Tag.Get("yaml"); tag != "" {
			fields[tag] = st.Field(i).Addr().Interface()
		}
	}
	at := map[string]*yaml.Node{}
	var bad []error // unknown and repeated keys, all of them
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field, ok := fields[k.Value]
		if !ok {
			bad = append(bad, p.errAt(k, "unknown key %q (known: %s)", k.Value, strings.Join(slices.Sorted(maps.Keys(fields)), ", ")))
			continue
		}
		if at[k.Value] != nil {
			bad = append(bad, p.errAt(k, "key %q repeated", k.Value))
			continue
		}
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias // an anchored object or list used again
		}
		at[k.Value] = v
		what := prefix + k.Value
		var err error
		switch field := field.(type) {
		case **yaml.Node:
			*field = v
		case *string:
			*field, err = p.str(v, what)
		case **string:
			var s string
			s, err = p.str(v, what)
			*field = &s
		case *[]string:
			*field, err = p.strList(v, what)
		case *map[string]string:
			*field, err = p.strMap(v, what)
		}
		if err != nil {
			bad = append(bad, err)
		}
	}
	return at, errors.Join(bad...)
}

func (p fileParser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errAt(n, "%s: want a string, got %s", what, yamlnode.Kind(n))
	}
	return n.Value, nil
}

func (p fileParser) strMap(n *yaml.Node, what string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, "%s: want a mapping of NAME: VALUE, got %s", what, yamlnode.Kind(n))
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		v, err := p.str(n.Content[i+1], "tag "+n.Content[i].Value)
		if err != nil {
			return nil, err
		}
		out[n.Content[i].Value] = v
	}
	return out, nil
}

func (p fileParser) strList(n *yaml.Node, what string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, "%s: want a list of names, got %s", what, yamlnode.Kind(n))
	}
	out := []string{}
	for _, e := range n.Content {
		s, err := p.str(e, what)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// object decodes a YAML subtree (a manifest, an AdmissionReview) to JSON.
func (p fileParser) object(n *yaml.Node, what string) ([]byte, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, "%s: want an object, got %s", what, yamlnode.Kind(n))
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, p.errAt(n, "%s: %v", what, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, p.errAt(n, "%s: %v", what, err)
	}
	return b, nil
}

// objectFile reads a JSON or YAML file named relative to the test file.
func (p fileParser) objectFile(n *yaml.Node, what string) ([]byte, error) {
	name, err := p.str(n, what)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(p.path), name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, p.errAt(n, "%s: %v", what, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		if err == nil {
			err = errors.New("empty")
		}
		return nil, p.errAt(n, "%s: %s: %v", what, name, err)
	}
	return fileParser{name}.object(doc.Content[0], name)
}

func (p fileParser) testCase(n *yaml.Node) (testCase, error) {
	c := testCase{line: n.Line}
	at, err := p.decode(n, "", &c)
	if err != nil {
		return c, err
	}
	if at["name"] == nil {
		return c, p.errAt(n, "a case needs a name")
	}
	c.Partition = cmp.Or(c.Partition, policy.DefaultPartition)
	for i, g := range c.Groups {
		if err := acl.ValidName(g); err != nil {
			return c, p.errAt(at["groups"].Content[i], "groups: %q: %v", g, err)
		}
	}
	expect := at["expect"]
	if expect == nil {
		return c, p.errAt(n, "case %q: missing expect", c.Name)
	}
	if c.Admission != nil {
		c.kind = caseAdmission
		if at["action"] != nil || at["queue"] != nil || at["tags"] != nil || c.Application != nil || c.DecidedBy != nil || at["partition"] != nil {
			return c, p.errAt(n, "case %q: an admission case takes name, user, groups, admission and expect", c.Name)
		}
		if c.review, err = p.reviewSpec(c.Admission); err != nil {
			return c, err
		}
		if c.review.review != nil && (at["user"] != nil || at["groups"] != nil) {
			return c, p.errAt(n, "case %q: a whole review names its requesting user in request.userInfo; user and groups go with object", c.Name)
		}
		if c.review.review == nil && c.User == "" {
			return c, p.errAt(c.Admission, "an admission case with an object needs the requesting user")
		}
		if c.Expect != "allowed" && c.Expect != "denied" {
			return c, p.errAt(expect, "expect: an admission case is allowed or denied, not %q", c.Expect)
		}
		return c, nil
	}
	c.Action = cmp.Or(c.Action, "submit")
	if c.User == "" {
		return c, p.errAt(n, "case %q needs a user", c.Name)
	}
	switch {
	case slices.Contains([]string{"submit", "admin"}, c.Action):
		c.kind = caseDecision
	case slices.Contains([]string{"view", "modify", "kill", "move"}, c.Action):
		c.kind = caseApplication
	case c.Action == "place":
		c.kind = casePlace
	default:
		return c, p.errAt(at["action"], "action: %q is not submit, admin, view, modify, kill, move or place", c.Action)
	}
	if c.Tags != nil && c.kind != casePlace {
		return c, p.errAt(at["tags"], "tags are placement inputs: only with action place")
	}
	if app := c.Application; app != nil && c.kind != caseApplication {
		return c, p.errAt(app, "an application block goes with action view, modify, kill or move")
	}
	if c.kind == caseApplication {
		app := c.Application
		if app == nil {
			return c, p.errAt(n, "case %q: action %s needs an application block (owner, and queue, id, viewACL, modifyACL, targetQueue)", c.Name, c.Action)
		}
		if c.Queue != "" {
			return c, p.errAt(at["queue"], "the application's queue goes in its application block")
		}
		if _, err := p.decode(app, "", &c.app); err != nil {
			return c, err
		}
		if c.app.Owner == "" {
			return c, p.errAt(app, "application: owner is required: the user who submitted it")
		}
		if a, _ := application.ParseAction(c.Action); a == application.Move && c.app.TargetQueue == "" {
			return c, p.errAt(app, "action move needs targetQueue")
		} else if a != application.Move && c.app.TargetQueue != "" {
			return c, p.errAt(app, "targetQueue is only used with action move")
		}
	}
	if c.kind == casePlace {
		if c.Expect != "rejected" && !strings.Contains(c.Expect, ".") && !strings.EqualFold(c.Expect, "root") {
			return c, p.errAt(expect, "expect: a placement case expects rejected or the queue it is placed in (root.a.b), not %q", c.Expect)
		}
	} else if c.Expect != "allowed" && c.Expect != "denied" {
		return c, p.errAt(expect, "expect: want allowed or denied, not %q", c.Expect)
	}
	if c.DecidedBy != nil {
		if c.kind == casePlace {
			return c, p.errAt(c.DecidedBy, "decidedBy is for decisions and application actions")
		}
		if c.Expect != "allowed" {
			return c, p.errAt(c.DecidedBy, "decidedBy names the entry that allowed: only with expect allowed")
		}
		if c.decided, err = p.decidedBy(c.DecidedBy, c.kind); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (p fileParser) decidedBy(n *yaml.Node, kind string) (*decidedBy, error) {
	d := &decidedBy{}
	at, err := p.decode(n, "decidedBy.", d)
	if err != nil {
		return nil, err
	}
	if d.ACL != "" && !slices.Contains([]string{string(policy.SubmitACL), string(policy.AdminACL), string(policy.ClusterAdminACL)}, d.ACL) {
		return nil, p.errAt(at["acl"], "decidedBy.acl: want submitacl, adminacl or %q, not %q", policy.ClusterAdminACL, d.ACL)
	}
	if d.Kind != "" && !slices.Contains([]string{"user", "group", "wildcard"}, d.Kind) {
		return nil, p.errAt(at["kind"], "decidedBy.kind: want user, group or wildcard, not %q", d.Kind)
	}
	if d.Rule != "" {
		if kind != caseApplication {
			return nil, p.errAt(at["rule"], "decidedBy.rule is for application actions")
		}
		if !slices.Contains(appRuleNames(), d.Rule) {
			return nil, p.errAt(at["rule"], "decidedBy.rule: want one of %s, not %q", strings.Join(appRuleNames(), ", "), d.Rule)
		}
	}
	return d, nil
}

func appRuleNames() []string {
	var out []string
	for r := application.Owner; r <= application.QueueSubmit; r++ {
		out = append(out, r.String())
	}
	return out
}

func (p fileParser) reviewSpec(n *yaml.Node) (*reviewSpec, error) {
	r := &reviewSpec{}
	at, err := p.decode(n, "", r)
	if err != nil {
		return nil, err
	}
	r.Hook = cmp.Or(r.Hook, "mutate")
	if r.Hook != "mutate" && r.Hook != "validate" {
		return nil, p.errAt(at["hook"], "hook: want mutate or validate, not %q", r.Hook)
	}
	var src *yaml.Node
	sources := 0
	for _, s := range []*yaml.Node{r.Review, r.ReviewFile, r.Object, r.ObjectFile} {
		if s != nil {
			src = cmp.Or(src, s)
			sources++
		}
	}
	if sources != 1 {
		return nil, p.errAt(n, "admission: give exactly one of review, reviewFile, object or objectFile")
	}
	switch src {
	case r.Review:
		r.review, err = p.object(src, "review")
	case r.ReviewFile:
		r.review, err = p.objectFile(src, "reviewFile")
	case r.Object:
		r.object, err = p.object(src, "object")
	default:
		r.object, err = p.objectFile(src, "objectFile")
	}
	if err != nil {
		return nil, err
	}
	var head struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Request    json.RawMessage `json:"request"`
	}
	if r.review != nil {
		if json.Unmarshal(r.review, &head) != nil || head.Kind != "AdmissionReview" || len(head.Request) == 0 {
			return nil, p.errAt(src, "admission: want an AdmissionReview with a request")
		}
	} else if json.Unmarshal(r.object, &head) != nil || head.APIVersion == "" || head.Kind == "" {
		return nil, p.errAt(src, "admission: the object needs apiVersion and kind")
	}
	if r.review != nil && (r.OldObject != nil || at["operation"] != nil || at["namespace"] != nil) {
		return nil, p.errAt(n, "admission: oldObject, operation and namespace go with object, not with a whole review")
	}
	if r.OldObject != nil {
		if r.oldObject, err = p.object(r.OldObject, "oldObject"); err != nil {
			return nil, err
		}
	}
	r.Operation = cmp.Or(r.Operation, "CREATE")
	if !slices.Contains([]string{"CREATE", "UPDATE", "DELETE", "CONNECT"}, r.Operation) {
		return nil, p.errAt(at["operation"], "operation: want CREATE, UPDATE, DELETE or CONNECT, not %q", r.Operation)
	}
	if code := r.Code; code != nil {
		if code.Kind != yaml.ScalarNode || code.Tag != "!!int" {
			return nil, p.errAt(code, "code: want an HTTP status code, got %s", yamlnode.Kind(code))
		}
		if err := code.Decode(&r.code); err != nil || r.code < 100 || r.code > 599 {
			return nil, p.errAt(code, "code: want an HTTP status code, got %s", code.Value)
		}
	}
	if patched := r.Patched; patched != nil {
		var b bool
		if patched.Kind != yaml.ScalarNode || patched.Tag != "!!bool" || patched.Decode(&b) != nil {
			return nil, p.errAt(patched, "patched: want true or false, got %s", yamlnode.Kind(patched))
		}
		r.patched = &b
	}
	if r.Stamped != nil {
		r.stamped = &stampedSpec{Groups: []string{}}
		at, err := p.decode(r.Stamped, "stamped.", r.stamped)
		if err != nil {
			return nil, err
		}
		if at["user"] == nil {
			return nil, p.errAt(r.Stamped, "stamped.user: want a string, got nothing")
		}
	}
	return r, nil
}
