// Package importer turns the access control settings of a YARN cluster
// (fair-scheduler.xml or capacity-scheduler.xml, and yarn-site.xml) and of
// Spark (spark-defaults.conf) into usher's YAML configuration.
//
// Rules this package enforces:
//   - The queue hierarchy is kept: every queue becomes an usher queue with
//     the same name and place; its submit and administer ACLs become
//     submitacl and adminacl. YARN's ACLs are read in the YARN dialect
//     (acl.YARN) and written in usher's; an ACL that YARN's second-space
//     rule truncates is imported truncated, with a warning naming the queue
//     and the dropped text.
//   - YARN's defaults are applied as Hadoop applies them, and every default
//     that grants something is reported as a warning, never applied
//     silently: the root queue's unset ACLs are "*" (both schedulers;
//     Hadoop's AllocationFileQueueParser and CapacitySchedulerConfiguration
//     default root to "*" and every other queue to " "), any other unset
//     queue ACL grants nothing; an unset yarn.admin.acl is "*" (every user a
//     cluster admin); an unset or false yarn.acl.enable turns all ACL
//     checks off, imported as "*" for the root queue's submitacl and
//     adminacl. Without a yarn-site.xml nothing is assumed about it: ACLs
//     are taken as enabled and there is no cluster admin ACL (warned).
//   - Spark's spark.admin.acls(.groups), spark.ui.view.acls(.groups) and
//     spark.modify.acls(.groups) become the partition's applicationacls
//     admin, view and modify; spark.acls.enable unset or false (Spark's
//     default) makes everyone an application admin, with a warning.
//   - Queue limits become the keys of YuniKorn's queues.yaml (limits.go):
//     minimum and maximum resources resources, running application limits
//     maxapplications, user limits the root queue's limits, scheduling
//     policies and preemption opt-outs properties. A setting YuniKorn
//     cannot express is a warning at its position; the values written are
//     the ones YARN enforces, in a form YuniKorn's validator accepts, and
//     each that differs from the file is a warning.
//   - Input that YARN or Spark would refuse, and names usher cannot hold,
//     are errors; every error and warning is positioned FILE:LINE:COL, and
//     all errors are reported at once.
//   - The YAML written is deterministic, loads with config.Parse (checked
//     before it is returned) and says in a comment beside each ACL where
//     it came from.
package importer

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/policy"
)

// MaxFileSize is the largest input file accepted.
const MaxFileSize = 64 << 20

// Source is an input file: its name, used in diagnostics, and its content.
type Source struct {
	Name string
	Data []byte
}

// ReadSource reads the file at path, refusing files larger than
// MaxFileSize.
func ReadSource(path string) (Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return Source{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Source{}, err
	}
	if st.Size() > MaxFileSize {
		return Source{}, fmt.Errorf("%s: %d bytes: larger than the %d byte limit", path, st.Size(), MaxFileSize)
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && st.Size() > 0 {
		return Source{}, fmt.Errorf("%s: %w", path, err)
	}
	return Source{Name: path, Data: data}, nil
}

// Setting is an imported ACL with where it came from.
type Setting struct {
	ACL acl.ACL
	// From is written as a comment beside the ACL: FILE:LINE of the value,
	// or the default that supplied it.
	From string
}

// Queue is an imported queue. Submit and Admin are nil when not set.
type Queue struct {
	Name          string
	Submit, Admin *Setting
	Children      []*Queue
	// Parent marks a queue without children as a parent queue (parent:
	// true): placement rules make queues inside it.
	Parent bool
	limits
}

// ApplicationACLs are a partition's application ACL defaults (the
// applicationacls key). Nil members are not set.
type ApplicationACLs struct {
	Admin, View, Modify *Setting
}

// Empty reports whether no member is set.
func (a ApplicationACLs) Empty() bool { return a.Admin == nil && a.View == nil && a.Modify == nil }

// Config is an imported configuration: one partition.
type Config struct {
	// Partition is the partition's name ("default" when empty).
	Partition string
	// Sources are the names of the files read, for the header comment.
	Sources []string
	Root    *Queue
	// AdminACL is the partition adminacl (yarn.admin.acl); nil when not set.
	AdminACL     *Setting
	Applications ApplicationACLs
	// Placement are the placement rules translated from YARN's placement
	// policy or queue mappings, in order; nil when it has none.
	Placement []Rule
	// Warnings are what the import could not carry over exactly or
	// defaulted, positioned, in the order found.
	Warnings []config.Diagnostic
}

// pos is a position in an input file; line 0 means the whole file.
type pos struct {
	file      string
	line, col int
}

func (p pos) String() string {
	if p.line == 0 {
		return p.file
	}
	return fmt.Sprintf("%s:%d", p.file, p.line)
}

// advance returns the position of byte offset off of text that starts at p.
func (p pos) advance(text string, off int) pos {
	if p.line == 0 {
		return p
	}
	off = min(max(off, 0), len(text))
	for i := 0; i < off; i++ {
		if text[i] == '\n' {
			p.line, p.col = p.line+1, 1
		} else {
			p.col++
		}
	}
	return p
}

// diags collects positioned errors and warnings across files.
type diags struct{ list []config.Diagnostic }

func (d *diags) add(sev config.Severity, at pos, format string, args ...any) {
	d.list = append(d.list, config.Diagnostic{File: at.file, Line: at.line, Col: at.col, Severity: sev, Msg: fmt.Sprintf(format, args...)})
}

func (d *diags) errorf(at pos, format string, args ...any) { d.add(config.Error, at, format, args...) }
func (d *diags) warnf(at pos, format string, args ...any)  { d.add(config.Warning, at, format, args...) }

// of returns the diagnostics of one severity, in file order: by file as
// first reported, then by line and column.
func (d *diags) of(sev config.Severity) []config.Diagnostic {
	files := map[string]int{}
	var out []config.Diagnostic
	for _, x := range d.list {
		if _, ok := files[x.File]; !ok {
			files[x.File] = len(files)
		}
		if x.Severity == sev {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b config.Diagnostic) int {
		return cmp.Or(cmp.Compare(files[a.File], files[b.File]), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return out
}

// err returns a *config.InvalidError listing every error, or nil.
func (d *diags) err() error {
	if errs := d.of(config.Error); len(errs) > 0 {
		return &config.InvalidError{Diagnostics: errs, Warnings: d.of(config.Warning)}
	}
	return nil
}

// yarnACL parses a YARN ACL found at `at` (the start of text), reporting
// errors and warnings at their position. what names the setting in
// messages: `queue root.a: aclSubmitApps`.
func (d *diags) yarnACL(text string, at pos, what string) (acl.ACL, bool) {
	a, warns, err := acl.Parse(text, acl.YARN)
	if err != nil {
		if se, ok := err.(*acl.SyntaxError); ok {
			d.errorf(at.advance(text, se.Offset), "%s %q: %s", what, text, se.Msg)
		} else {
			d.errorf(at, "%s %q: %v", what, text, err)
		}
		return acl.ACL{}, false
	}
	cut := -1
	for _, w := range warns {
		if strings.Contains(w.Msg, "second space") {
			cut = w.Offset
		}
	}
	for _, w := range warns {
		if w.Offset == cut && strings.HasPrefix(w.Msg, "empty ") {
			continue // "u g1, g2": the empty entry is the truncation's doing
		}
		if !strings.Contains(w.Msg, "second space") {
			d.warnf(at.advance(text, w.Offset), "%s %q: %s", what, text, w.Msg)
			continue
		}
		d.warnf(at.advance(text, w.Offset), "%s %q: YARN ignores everything after the second space: %q is dropped and the ACL imported as %q%s",
			what, text, text[w.Offset:], a.String(), hadoopReading(text, a))
	}
	return a, true
}

// hadoopReading explains how Hadoop's AccessControlList reads the group
// list of text, when that differs from the documented second-space rule
// that produced a: Hadoop splits at the first space only and trims each
// comma separated entry, so "u g1, g2" grants g2 and "u g1 g2" names one
// group "g1 g2".
func hadoopReading(text string, a acl.ACL) string {
	_, groups, ok := strings.Cut(text, " ")
	if !ok || a.All() {
		return ""
	}
	var names []string
	for _, g := range strings.Split(groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			names = append(names, g)
		}
	}
	if slices.Equal(names, a.Groups()) {
		return ""
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return fmt.Sprintf(" (check it: Hadoop's own parser reads the groups as [%s])", strings.Join(quoted, ", "))
}

// YAML renders the configuration as usher YAML and checks that it loads.
func (c *Config) YAML() ([]byte, error) {
	if c.Root == nil {
		return nil, fmt.Errorf("importer: nothing imported: no root queue")
	}
	name := c.Partition
	if name == "" {
		name = policy.DefaultPartition
	}
	part := mapping("name", plain(name))
	if c.AdminACL != nil {
		part.Content = append(part.Content, plain("adminacl"), setting(c.AdminACL))
	}
	if !c.Applications.Empty() {
		part.Content = append(part.Content, plain("applicationacls"), c.Applications.node())
	}
	if len(c.Placement) > 0 {
		part.Content = append(part.Content, plain("placementrules"), rulesNode(c.Placement))
	}
	part.Content = append(part.Content, plain("queues"), sequence(c.Root.node()))
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping("partitions", sequence(part))}}
	doc.HeadComment = fmt.Sprintf("Imported by usher import from %s.\n"+
		"YARN's and Spark's ACLs are written in usher's syntax; the comment beside each\n"+
		"one says where it came from. Review the warnings printed with this file, then\n"+
		"check it with: usher lint FILE", strings.Join(c.Sources, ", "))
	out, err := encode(doc)
	if err != nil {
		return nil, err
	}
	if _, err := config.Parse("<imported>", out); err != nil {
		return nil, fmt.Errorf("importer: the configuration written does not load (a bug): %v", err)
	}
	return out, nil
}

func (a ApplicationACLs) node() *yaml.Node {
	n := mapping()
	for _, m := range []struct {
		key string
		s   *Setting
	}{{"admin", a.Admin}, {"view", a.View}, {"modify", a.Modify}} {
		if m.s != nil {
			n.Content = append(n.Content, plain(m.key), setting(m.s))
		}
	}
	return n
}

func (q *Queue) node() *yaml.Node {
	n := mapping("name", plain(q.Name))
	if q.Submit != nil {
		n.Content = append(n.Content, plain("submitacl"), setting(q.Submit))
	}
	if q.Admin != nil {
		n.Content = append(n.Content, plain("adminacl"), setting(q.Admin))
	}
	if q.Parent && len(q.Children) == 0 {
		n.Content = append(n.Content, plain("parent"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	n.Content = append(n.Content, q.limits.nodes()...)
	if len(q.Children) > 0 {
		kids := sequence()
		for _, c := range q.Children {
			kids.Content = append(kids.Content, c.node())
		}
		n.Content = append(n.Content, plain("queues"), kids)
	}
	return n
}

func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func setting(s *Setting) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.ACL.String(), Style: yaml.DoubleQuotedStyle}
	if s.From != "" {
		n.LineComment = "# " + s.From
	}
	return n
}

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, plain(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func sequence(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

func encode(doc *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(doc); err != nil {
		return nil, fmt.Errorf("importer: writing YAML: %w", err)
	}
	if err := e.Close(); err != nil {
		return nil, fmt.Errorf("importer: writing YAML: %w", err)
	}
	return b.Bytes(), nil
}

// MergeApplicationACLs returns the usher configuration base with the
// applicationacls of partition ("" is the default partition) set to apps,
// replacing any there. The rest of base is kept, comments included,
// though its layout is normalised. base is not validated here beyond
// being YAML with that partition: load it with config.Load first.
func MergeApplicationACLs(base Source, partition string, apps ApplicationACLs) ([]byte, error) {
	if partition == "" {
		partition = policy.DefaultPartition
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(base.Data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", base.Name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not an usher configuration: want a mapping with a partitions list", base.Name)
	}
	parts := value(doc.Content[0], "partitions")
	if parts == nil || parts.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: not an usher configuration: no partitions list", base.Name)
	}
	var target *yaml.Node
	for _, p := range parts.Content {
		if n := value(p, "name"); n != nil && strings.EqualFold(n.Value, partition) {
			target = p
		}
	}
	if target == nil {
		return nil, fmt.Errorf("%s: no partition %q to add the application ACLs to", base.Name, partition)
	}
	node := apps.node()
	if err := checkApplicationACLs(node); err != nil {
		return nil, err
	}
	replaced := false
	for i := 0; i+1 < len(target.Content); i += 2 {
		if target.Content[i].Value == "applicationacls" {
			target.Content[i+1], replaced = node, true
		}
	}
	if !replaced {
		at := len(target.Content)
		for i := 0; i+1 < len(target.Content); i += 2 {
			if target.Content[i].Value == "queues" {
				at = i
			}
		}
		target.Content = append(target.Content[:at], append([]*yaml.Node{plain("applicationacls"), node}, target.Content[at:]...)...)
	}
	return encode(&doc)
}

// checkApplicationACLs loads an applicationacls block in a minimal
// configuration, to be sure what is written loads.
func checkApplicationACLs(node *yaml.Node) error {
	part := mapping("name", plain("check"), "applicationacls", node, "queues", sequence(mapping("name", plain("root"))))
	out, err := encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping("partitions", sequence(part))}})
	if err != nil {
		return err
	}
	if _, err := config.Parse("<applicationacls>", out); err != nil {
		return fmt.Errorf("importer: the applicationacls written do not load (a bug): %v", err)
	}
	return nil
}

func value(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
