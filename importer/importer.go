// Package importer turns the access control settings of a YARN cluster
// (fair-scheduler.xml or capacity-scheduler.xml, and yarn-site.xml) and of
// Spark (spark-defaults.conf) into usher's YAML configuration.
//
// Rules this package enforces:
//   - The queue hierarchy is kept; submit and administer ACLs become
//     submitacl and adminacl, read in the YARN dialect. An ACL YARN's
//     second-space rule truncates is imported truncated, with a warning.
//   - YARN's defaults are applied as Hadoop applies them, and each that
//     grants something is a warning: root's unset ACLs are "*", other
//     queues' grant nothing; an unset yarn.admin.acl is "*"; yarn.acl.enable
//     unset or false turns checks off (root's ACLs "*"). Without
//     yarn-site.xml ACLs are taken as enabled, with no cluster admin ACL.
//   - Spark's admin, view and modify ACLs become applicationacls;
//     spark.acls.enable unset or false makes everyone an application
//     admin, with a warning.
//   - Queue limits become YuniKorn's queues.yaml keys (limits.go); what
//     YuniKorn cannot express, or is written otherwise, is a warning.
//   - Input YARN or Spark would refuse is an error; every diagnostic is at
//     FILE:LINE:COL, all errors at once.
//   - The YAML written is deterministic, loads with config.Parse (checked)
//     and says beside each ACL where it came from.
package importer

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/internal/safefile"
	"github.com/usherhq/usher/internal/yamlnode"
	"github.com/usherhq/usher/policy"
)

// MaxFileSize is the largest input file accepted.
const MaxFileSize = 64 << 20

// Source is an input file: its name, used in diagnostics, and its content.
type Source struct {
	Name string
	Data []byte
}

// ReadSource reads the regular file at path, of at most MaxFileSize bytes.
func ReadSource(path string) (Source, error) {
	data, _, err := safefile.Read(path, MaxFileSize, 0)
	return Source{Name: path, Data: data}, err
}

// Setting is an imported ACL with where it came from.
type Setting struct {
	ACL  acl.ACL
	From string // the comment beside the ACL: FILE:LINE, or the default
}

// Queue is an imported queue. Submit and Admin are nil when not set.
type Queue struct {
	Name          string
	Submit, Admin *Setting
	Children      []*Queue
	Parent        bool // a queue without children written as parent: true
	limits
}

// ApplicationACLs are a partition's applicationacls; nil is not set.
type ApplicationACLs struct {
	Admin, View, Modify *Setting
}

// Config is an imported configuration: one partition.
type Config struct {
	Partition    string   // "default" when empty
	Sources      []string // the files read, for the header comment
	Root         *Queue
	AdminACL     *Setting // yarn.admin.acl
	Applications ApplicationACLs
	Placement    []Rule              // from YARN's placement policy or queue mappings
	Warnings     []config.Diagnostic // what was not carried over exactly, or defaulted
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
	s := text[:min(max(off, 0), len(text))]
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		p.line, p.col, s = p.line+strings.Count(s, "\n"), 1, s[i+1:]
	}
	p.col += len(s)
	return p
}

// diags collects positioned errors and warnings across files.
type diags struct{ list []config.Diagnostic }

func (d *diags) add(sev config.Severity, at pos, format string, args ...any) {
	d.list = append(d.list, config.Diagnostic{File: at.file, Line: at.line, Col: at.col, Severity: sev, Msg: fmt.Sprintf(format, args...)})
}

func (d *diags) errorf(at pos, format string, args ...any) { d.add(config.Error, at, format, args...) }
func (d *diags) warnf(at pos, format string, args ...any)  { d.add(config.Warning, at, format, args...) }

// of returns the diagnostics of one severity, in file order.
func (d *diags) of(sev config.Severity) []config.Diagnostic {
	return slices.DeleteFunc(slices.Clone(config.Sort(d.list)), func(x config.Diagnostic) bool { return x.Severity != sev })
}

// err returns a *config.InvalidError listing every error, or nil.
func (d *diags) err() error {
	if errs := d.of(config.Error); len(errs) > 0 {
		return &config.InvalidError{Diagnostics: errs, Warnings: d.of(config.Warning)}
	}
	return nil
}

// yarnACL parses the YARN ACL text of setting what at at; nil if invalid.
func (d *diags) yarnACL(text string, at pos, what string) *Setting {
	a, warns, err := acl.Parse(text, acl.YARN)
	if err != nil {
		if se, ok := err.(*acl.SyntaxError); ok {
			d.errorf(at.advance(text, se.Offset), "%s %q: %s", what, text, se.Msg)
		} else {
			d.errorf(at, "%s %q: %v", what, text, err)
		}
		return nil
	}
	cut := -1
	for _, w := range warns {
		if w.Kind == acl.Ignored {
			cut = w.Offset
		}
	}
	for _, w := range warns {
		if w.Offset == cut && w.Kind == acl.Empty {
			continue // "u g1, g2": the empty entry is the truncation's doing
		}
		if w.Kind != acl.Ignored {
			d.warnf(at.advance(text, w.Offset), "%s %q: %s", what, text, w.Msg)
			continue
		}
		d.warnf(at.advance(text, w.Offset), "%s %q: YARN ignores everything after the second space: %q is dropped and the ACL imported as %q%s",
			what, text, text[w.Offset:], a.String(), hadoopReading(text, a))
	}
	return &Setting{ACL: a, From: at.String()}
}

// hadoopReading says how Hadoop's AccessControlList reads the groups of
// text when that differs from the documented second-space rule: it splits
// at the first space and trims each entry, so "u g1, g2" grants g2.
func hadoopReading(text string, a acl.ACL) string {
	_, groups, ok := strings.Cut(text, " ")
	if !ok || a.All() {
		return ""
	}
	var names, quoted []string
	for _, g := range strings.Split(groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			names, quoted = append(names, g), append(quoted, strconv.Quote(g))
		}
	}
	if slices.Equal(names, a.Groups()) {
		return ""
	}
	return fmt.Sprintf(" (check it: Hadoop's own parser reads the groups as [%s])", strings.Join(quoted, ", "))
}

// YAML renders the configuration as usher YAML and checks that it loads.
func (c *Config) YAML() ([]byte, error) {
	if c.Root == nil {
		return nil, fmt.Errorf("importer: nothing imported: no root queue")
	}
	part := mapping("name", plain(cmp.Or(c.Partition, policy.DefaultPartition)), "adminacl", setting(c.AdminACL),
		"applicationacls", c.Applications.node(), "placementrules", rulesNode(c.Placement), "queues", sequence(c.Root.node()))
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping("partitions", sequence(part))}}
	doc.HeadComment = fmt.Sprintf("Imported by usher import from %s.\n"+
		"YARN's and Spark's ACLs are written in usher's syntax; the comment beside each\n"+
		"one says where it came from. Review the warnings printed with this file, then\n"+
		"check it with: usher lint FILE", strings.Join(c.Sources, ", "))
	out := yamlnode.Encode(doc)
	if _, err := config.Parse("<imported>", out); err != nil {
		return nil, fmt.Errorf("importer: the configuration written does not load (a bug): %v", err)
	}
	return out, nil
}

func (a ApplicationACLs) node() *yaml.Node {
	return mapping("admin", setting(a.Admin), "view", setting(a.View), "modify", setting(a.Modify))
}

func (q *Queue) node() *yaml.Node {
	kids := sequence()
	for _, c := range q.Children {
		kids.Content = append(kids.Content, c.node())
	}
	kv := []any{"name", plain(q.Name), "submitacl", setting(q.Submit), "adminacl", setting(q.Admin),
		"parent", flag(q.Parent && len(q.Children) == 0)}
	kv = append(kv, q.limits.pairs()...)
	return mapping(append(kv, "queues", kids)...)
}

func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// flag writes true as a YAML bool; false is nil, left out.
func flag(b bool) *yaml.Node {
	if !b {
		return nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
}

// commented gives n the line comment "# from", none when from is "".
func commented(n *yaml.Node, from string) *yaml.Node {
	if from != "" {
		n.LineComment = "# " + from
	}
	return n
}

func setting(s *Setting) *yaml.Node {
	if s == nil {
		return nil
	}
	return commented(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.ACL.String(), Style: yaml.DoubleQuotedStyle}, s.From)
}

// mapping writes keys (strings or nodes) and values in order, leaving out
// each value that is nil or empty (no text, no items).
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		k, ok := kv[i].(*yaml.Node)
		if !ok {
			k = plain(kv[i].(string))
		}
		if v := kv[i+1].(*yaml.Node); v != nil && (v.Value != "" || len(v.Content) > 0) {
			n.Content = append(n.Content, k, v)
		}
	}
	return n
}

func sequence(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

// MergeApplicationACLs returns base with the applicationacls of partition
// ("" is the default) set to apps; the rest is kept, comments included.
// Load base with config.Load first: it is not validated here.
func MergeApplicationACLs(base Source, partition string, apps ApplicationACLs) ([]byte, error) {
	partition = cmp.Or(partition, policy.DefaultPartition)
	var doc yaml.Node
	if err := yaml.Unmarshal(base.Data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", base.Name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not an usher configuration: want a mapping with a partitions list", base.Name)
	}
	parts := yamlnode.Value(doc.Content[0], "partitions")
	if parts == nil || parts.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: not an usher configuration: no partitions list", base.Name)
	}
	var target *yaml.Node
	for _, p := range parts.Content {
		if n := yamlnode.Value(p, "name"); n != nil && strings.EqualFold(n.Value, partition) {
			target = p
		}
	}
	if target == nil {
		return nil, fmt.Errorf("%s: no partition %q to add the application ACLs to", base.Name, partition)
	}
	node := apps.node()
	check := mapping("name", plain("check"), "applicationacls", node, "queues", sequence(mapping("name", plain("root"))))
	out := yamlnode.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping("partitions", sequence(check))}})
	if _, err := config.Parse("<applicationacls>", out); err != nil {
		return nil, fmt.Errorf("importer: the applicationacls written do not load (a bug): %v", err)
	}
	at, replaced := len(target.Content), false
	for i := 0; i+1 < len(target.Content); i += 2 {
		switch target.Content[i].Value {
		case "applicationacls":
			target.Content[i+1], replaced = node, true
		case "queues":
			at = i
		}
	}
	if !replaced {
		target.Content = slices.Insert(target.Content, at, plain("applicationacls"), node)
	}
	return yamlnode.Encode(&doc), nil
}
