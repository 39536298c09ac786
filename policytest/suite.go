package policytest

// The policy test file format of usher test (docs/policy-tests.md). A file
// is read into yaml.v3 nodes and walked by hand, so that every problem,
// an unknown key included, is reported at FILE:LINE:COL.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
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
// an admission review (admission).
type testCase struct {
	name      string
	line, col int
	kind      caseKind

	partition, queue, user string
	groups                 []string
	// action is the decision's or the application's action.
	action string
	tags   map[string]string
	app    appSpec
	// expect is allowed or denied; for place, rejected or a queue path.
	expect  string
	decided *decidedBy

	review *reviewSpec
}

type caseKind uint8

const (
	caseDecision caseKind = iota + 1
	caseApplication
	casePlace
	caseAdmission
)

// appSpec is the application block: what usher app takes as flags.
type appSpec struct {
	id, owner, queue, targetQueue string
	viewACL, modifyACL            *string
}

// decidedBy is the optional expectation of who decided. Empty fields are
// not checked.
type decidedBy struct {
	queue, acl, kind, entry, rule string
}

// reviewSpec is an admission case.
type reviewSpec struct {
	// hook is mutate or validate.
	hook string
	// review is a whole AdmissionReview (JSON); when nil the request is
	// built from object, oldObject, operation, user and groups.
	review            []byte
	object, oldObject []byte
	operation         string
	namespace         string
	// expected outcome; code 0 and message "" are not checked.
	code    int
	message string
	patched *bool
	stamped *stampedSpec
}

type stampedSpec struct {
	user   string
	groups []string
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

// Read reads and checks a policy test file. Every error is a
// *posError.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &posError{path, 1, 1, err.Error()}
	}
	p := fileParser{path}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, p.yamlError(err)
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
	var cfgNode, casesNode *yaml.Node
	if err := p.fields(root, map[string]**yaml.Node{"config": &cfgNode, "cases": &casesNode}); err != nil {
		return nil, err
	}
	if cfgNode == nil {
		return nil, p.errAt(root, "missing config: the configuration file or ConfigMap manifest, relative to this file")
	}
	if f.config, err = p.str(cfgNode, "config"); err != nil {
		return nil, err
	}
	if f.config == "" {
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
		at := root
		if casesNode != nil {
			at = casesNode
		}
		return nil, p.errAt(at, "cases: want a list of one or more cases")
	}
	names := map[string]int{}
	for _, n := range casesNode.Content {
		c, err := p.testCase(n)
		if err != nil {
			return nil, err
		}
		if prev, dup := names[c.name]; dup {
			return nil, p.errAt(n, "case %q repeats the name of the case at line %d", c.name, prev)
		}
		names[c.name] = c.line
		f.cases = append(f.cases, c)
	}
	return f, nil
}

// yamlError turns a yaml.v3 syntax error ("yaml: line N: ...") into a
// positioned one.
func (p fileParser) yamlError(err error) error {
	msg := err.Error()
	line := 1
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if _, e := fmt.Sscanf(n, "%d", &line); e == nil {
				msg = tail
			}
		}
	}
	return &posError{p.path, line, 1, strings.TrimPrefix(msg, "yaml: ")}
}

// fields checks that n is a mapping whose keys are all in want, and
// points each want entry at its value.
func (p fileParser) fields(n *yaml.Node, want map[string]**yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "want a mapping, got %s", kindName(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		dst, ok := want[k.Value]
		if !ok {
			known := make([]string, 0, len(want))
			for name := range want {
				known = append(known, name)
			}
			return p.errAt(k, "unknown key %q (known: %s)", k.Value, strings.Join(slices.Sorted(slices.Values(known)), ", "))
		}
		if *dst != nil {
			return p.errAt(k, "key %q repeated", k.Value)
		}
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias // an anchored object or list used again
		}
		*dst = v
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

func (p fileParser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errAt(n, "%s: want a string, got %s", what, kindName(n))
	}
	return n.Value, nil
}

func (p fileParser) optStr(n *yaml.Node, what string) (string, error) {
	if n == nil {
		return "", nil
	}
	return p.str(n, what)
}

func (p fileParser) strList(n *yaml.Node, what string) ([]string, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errAt(n, "%s: want a list of names, got %s", what, kindName(n))
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
		return nil, p.errAt(n, "%s: want an object, got %s", what, kindName(n))
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

var (
	decisionActions = []string{"submit", "admin"}
	appActions      = []string{"view", "modify", "kill", "move"}
)

func (p fileParser) testCase(n *yaml.Node) (testCase, error) {
	c := testCase{line: n.Line, col: n.Column}
	var name, partition, queue, user, groups, action, tags, app, expect, decided, adm *yaml.Node
	if err := p.fields(n, map[string]**yaml.Node{
		"name": &name, "partition": &partition, "queue": &queue, "user": &user, "groups": &groups,
		"action": &action, "tags": &tags, "application": &app, "expect": &expect, "decidedBy": &decided,
		"admission": &adm,
	}); err != nil {
		return c, err
	}
	var err error
	if name == nil {
		return c, p.errAt(n, "a case needs a name")
	}
	if c.name, err = p.str(name, "name"); err != nil {
		return c, err
	}
	if c.partition, err = p.optStr(partition, "partition"); err != nil {
		return c, err
	}
	if c.partition == "" {
		c.partition = policy.DefaultPartition
	}
	if c.queue, err = p.optStr(queue, "queue"); err != nil {
		return c, err
	}
	if c.user, err = p.optStr(user, "user"); err != nil {
		return c, err
	}
	if c.groups, err = p.strList(groups, "groups"); err != nil {
		return c, err
	}
	for i, g := range c.groups {
		if err := acl.ValidName(g); err != nil || strings.Contains(g, ",") {
			if err == nil {
				err = errors.New("a comma separates names")
			}
			return c, p.errAt(groups.Content[i], "groups: %q: %v", g, err)
		}
	}
	if expect == nil {
		return c, p.errAt(n, "case %q: missing expect", c.name)
	}
	if c.expect, err = p.str(expect, "expect"); err != nil {
		return c, err
	}
	if c.action, err = p.optStr(action, "action"); err != nil {
		return c, err
	}
	if adm != nil {
		c.kind = caseAdmission
		if action != nil || queue != nil || tags != nil || app != nil || decided != nil || partition != nil {
			return c, p.errAt(n, "case %q: an admission case takes name, user, groups, admission and expect", c.name)
		}
		if c.review, err = p.reviewSpec(adm); err != nil {
			return c, err
		}
		if c.review.review != nil && (user != nil || groups != nil) {
			return c, p.errAt(n, "case %q: a whole review names its requesting user in request.userInfo; user and groups go with object", c.name)
		}
		if c.review.review == nil && c.user == "" {
			return c, p.errAt(adm, "an admission case with an object needs the requesting user")
		}
		if c.expect != "allowed" && c.expect != "denied" {
			return c, p.errAt(expect, "expect: an admission case is allowed or denied, not %q", c.expect)
		}
		return c, nil
	}
	if c.action == "" {
		c.action = "submit"
	}
	if c.user == "" {
		return c, p.errAt(n, "case %q needs a user", c.name)
	}
	switch {
	case slices.Contains(decisionActions, c.action):
		c.kind = caseDecision
	case slices.Contains(appActions, c.action):
		c.kind = caseApplication
	case c.action == "place":
		c.kind = casePlace
	default:
		return c, p.errAt(action, "action: %q is not submit, admin, view, modify, kill, move or place", c.action)
	}
	if tags != nil {
		if c.kind != casePlace {
			return c, p.errAt(tags, "tags are placement inputs: only with action place")
		}
		if tags.Kind != yaml.MappingNode {
			return c, p.errAt(tags, "tags: want a mapping of NAME: VALUE, got %s", kindName(tags))
		}
		c.tags = map[string]string{}
		for i := 0; i+1 < len(tags.Content); i += 2 {
			v, err := p.str(tags.Content[i+1], "tag "+tags.Content[i].Value)
			if err != nil {
				return c, err
			}
			c.tags[tags.Content[i].Value] = v
		}
	}
	if app != nil && c.kind != caseApplication {
		return c, p.errAt(app, "an application block goes with action view, modify, kill or move")
	}
	if c.kind == caseApplication {
		if app == nil {
			return c, p.errAt(n, "case %q: action %s needs an application block (owner, and queue, id, viewACL, modifyACL, targetQueue)", c.name, c.action)
		}
		if c.queue != "" {
			return c, p.errAt(queue, "the application's queue goes in its application block")
		}
		if c.app, err = p.appSpec(app); err != nil {
			return c, err
		}
		if a, _ := application.ParseAction(c.action); a == application.Move && c.app.targetQueue == "" {
			return c, p.errAt(app, "action move needs targetQueue")
		} else if a != application.Move && c.app.targetQueue != "" {
			return c, p.errAt(app, "targetQueue is only used with action move")
		}
	}
	switch c.kind {
	case casePlace:
		if c.expect != "rejected" && !strings.Contains(c.expect, ".") && !strings.EqualFold(c.expect, "root") {
			return c, p.errAt(expect, "expect: a placement case expects rejected or the queue it is placed in (root.a.b), not %q", c.expect)
		}
	default:
		if c.expect != "allowed" && c.expect != "denied" {
			return c, p.errAt(expect, "expect: want allowed or denied, not %q", c.expect)
		}
	}
	if decided != nil {
		if c.kind == casePlace {
			return c, p.errAt(decided, "decidedBy is for decisions and application actions")
		}
		if c.expect != "allowed" {
			return c, p.errAt(decided, "decidedBy names the entry that allowed: only with expect allowed")
		}
		if c.decided, err = p.decidedBy(decided, c.kind); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (p fileParser) appSpec(n *yaml.Node) (appSpec, error) {
	var a appSpec
	var id, owner, queue, target, view, modify *yaml.Node
	if err := p.fields(n, map[string]**yaml.Node{"id": &id, "owner": &owner, "queue": &queue,
		"targetQueue": &target, "viewACL": &view, "modifyACL": &modify}); err != nil {
		return a, err
	}
	var err error
	for _, f := range []struct {
		n    *yaml.Node
		name string
		dst  *string
	}{{id, "id", &a.id}, {owner, "owner", &a.owner}, {queue, "queue", &a.queue}, {target, "targetQueue", &a.targetQueue}} {
		if *f.dst, err = p.optStr(f.n, f.name); err != nil {
			return a, err
		}
	}
	if a.owner == "" {
		return a, p.errAt(n, "application: owner is required: the user who submitted it")
	}
	for _, f := range []struct {
		n    *yaml.Node
		name string
		dst  **string
	}{{view, "viewACL", &a.viewACL}, {modify, "modifyACL", &a.modifyACL}} {
		if f.n == nil {
			continue
		}
		s, err := p.str(f.n, f.name)
		if err != nil {
			return a, err
		}
		*f.dst = &s
	}
	return a, nil
}

func (p fileParser) decidedBy(n *yaml.Node, kind caseKind) (*decidedBy, error) {
	d := &decidedBy{}
	var queue, aclN, kindN, entry, rule *yaml.Node
	if err := p.fields(n, map[string]**yaml.Node{"queue": &queue, "acl": &aclN, "kind": &kindN, "entry": &entry, "rule": &rule}); err != nil {
		return nil, err
	}
	var err error
	for _, f := range []struct {
		n    *yaml.Node
		name string
		dst  *string
	}{{queue, "queue", &d.queue}, {aclN, "acl", &d.acl}, {kindN, "kind", &d.kind}, {entry, "entry", &d.entry}, {rule, "rule", &d.rule}} {
		if *f.dst, err = p.optStr(f.n, "decidedBy."+f.name); err != nil {
			return nil, err
		}
	}
	if d.acl != "" && !slices.Contains([]string{string(policy.SubmitACL), string(policy.AdminACL), string(policy.ClusterAdminACL)}, d.acl) {
		return nil, p.errAt(aclN, "decidedBy.acl: want submitacl, adminacl or %q, not %q", policy.ClusterAdminACL, d.acl)
	}
	if d.kind != "" && !slices.Contains([]string{"user", "group", "wildcard"}, d.kind) {
		return nil, p.errAt(kindN, "decidedBy.kind: want user, group or wildcard, not %q", d.kind)
	}
	if d.rule != "" {
		if kind != caseApplication {
			return nil, p.errAt(rule, "decidedBy.rule is for application actions")
		}
		if !slices.Contains(appRuleNames(), d.rule) {
			return nil, p.errAt(rule, "decidedBy.rule: want one of %s, not %q", strings.Join(appRuleNames(), ", "), d.rule)
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
	var hook, review, reviewFile, object, objectFile, oldObject, operation, namespace, code, message, patched, stamped *yaml.Node
	if err := p.fields(n, map[string]**yaml.Node{"hook": &hook, "review": &review, "reviewFile": &reviewFile,
		"object": &object, "objectFile": &objectFile, "oldObject": &oldObject, "operation": &operation,
		"namespace": &namespace, "code": &code, "message": &message, "patched": &patched, "stamped": &stamped}); err != nil {
		return nil, err
	}
	var err error
	if r.hook, err = p.optStr(hook, "hook"); err != nil {
		return nil, err
	}
	if r.hook == "" {
		r.hook = "mutate"
	}
	if r.hook != "mutate" && r.hook != "validate" {
		return nil, p.errAt(hook, "hook: want mutate or validate, not %q", r.hook)
	}
	sources := 0
	for _, s := range []*yaml.Node{review, reviewFile, object, objectFile} {
		if s != nil {
			sources++
		}
	}
	if sources != 1 {
		return nil, p.errAt(n, "admission: give exactly one of review, reviewFile, object or objectFile")
	}
	switch {
	case review != nil:
		r.review, err = p.object(review, "review")
	case reviewFile != nil:
		r.review, err = p.objectFile(reviewFile, "reviewFile")
	case object != nil:
		r.object, err = p.object(object, "object")
	default:
		r.object, err = p.objectFile(objectFile, "objectFile")
	}
	if err != nil {
		return nil, err
	}
	var head struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Request    json.RawMessage `json:"request"`
	}
	src := firstNonNil(review, reviewFile, object, objectFile)
	if r.review != nil {
		if json.Unmarshal(r.review, &head) != nil || head.Kind != "AdmissionReview" || len(head.Request) == 0 {
			return nil, p.errAt(src, "admission: want an AdmissionReview with a request")
		}
	} else if json.Unmarshal(r.object, &head) != nil || head.APIVersion == "" || head.Kind == "" {
		return nil, p.errAt(src, "admission: the object needs apiVersion and kind")
	}
	if r.review != nil && (oldObject != nil || operation != nil || namespace != nil) {
		return nil, p.errAt(n, "admission: oldObject, operation and namespace go with object, not with a whole review")
	}
	if oldObject != nil {
		if r.oldObject, err = p.object(oldObject, "oldObject"); err != nil {
			return nil, err
		}
	}
	if r.operation, err = p.optStr(operation, "operation"); err != nil {
		return nil, err
	}
	if r.operation == "" {
		r.operation = "CREATE"
	}
	if !slices.Contains([]string{"CREATE", "UPDATE", "DELETE", "CONNECT"}, r.operation) {
		return nil, p.errAt(operation, "operation: want CREATE, UPDATE, DELETE or CONNECT, not %q", r.operation)
	}
	if r.namespace, err = p.optStr(namespace, "namespace"); err != nil {
		return nil, err
	}
	if code != nil {
		if code.Kind != yaml.ScalarNode || code.Tag != "!!int" {
			return nil, p.errAt(code, "code: want an HTTP status code, got %s", kindName(code))
		}
		if err := code.Decode(&r.code); err != nil || r.code < 100 || r.code > 599 {
			return nil, p.errAt(code, "code: want an HTTP status code, got %s", code.Value)
		}
	}
	if r.message, err = p.optStr(message, "message"); err != nil {
		return nil, err
	}
	if patched != nil {
		var b bool
		if patched.Kind != yaml.ScalarNode || patched.Tag != "!!bool" || patched.Decode(&b) != nil {
			return nil, p.errAt(patched, "patched: want true or false, got %s", kindName(patched))
		}
		r.patched = &b
	}
	if stamped != nil {
		var user, groups *yaml.Node
		if err := p.fields(stamped, map[string]**yaml.Node{"user": &user, "groups": &groups}); err != nil {
			return nil, err
		}
		s := &stampedSpec{}
		if s.user, err = p.str(orEmpty(user, stamped), "stamped.user"); err != nil {
			return nil, err
		}
		if s.groups, err = p.strList(groups, "stamped.groups"); err != nil {
			return nil, err
		}
		if s.groups == nil {
			s.groups = []string{}
		}
		r.stamped = s
	}
	return r, nil
}

// orEmpty returns n, or a null node at parent's position when n is nil,
// so that a missing required value is reported where it belongs.
func orEmpty(n, parent *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: parent.Line, Column: parent.Column}
}

func firstNonNil(ns ...*yaml.Node) *yaml.Node {
	for _, n := range ns {
		if n != nil {
			return n
		}
	}
	return nil
}
