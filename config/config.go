// Package config reads usher's configuration: YuniKorn's queues.yaml
// schema plus usher's own keys and the admission settings, into one
// immutable, compiled Config.
//
// Every command and usher serve read a configuration through one
// pipeline, Load: source, parse once, environment, validate, compile
// (docs/architecture.md). Errors are placed at FILE:LINE:COL with
// errors.As, but for a YAML syntax error's line (yamlError).
//
// Rules this package enforces:
//   - Every mistake is reported, all at once; a configuration with an
//     error is never used in part.
//   - Top-level queues that are not a single root get a root inserted
//     above them, as YuniKorn's validator does, with a warning.
//   - Unknown keys are errors, with a hint; keys of YuniKorn's schema that
//     only the scheduler uses are accepted; placementrules are checked.
//   - ACLs use the YuniKorn dialect. Warnings point out what is legal but
//     probably wrong (Codes lists them).
package config

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	_ "embed"
	"fmt"
	"hash"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/resolvers"
	"github.com/usherhq/usher/internal/suggest"
	"github.com/usherhq/usher/internal/yamlnode"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// MaxFileSize is the largest configuration file accepted.
const MaxFileSize = 64 << 20

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default, yunikorn-core's DefaultSchedulerConfig.
func DefaultYAML() []byte { return slices.Clone(defaultYAML) }

// Config is a parsed, validated and compiled configuration, immutable once returned.
type Config struct {
	File       string // the name used in diagnostics
	Partitions []Partition
	Snapshot   *policy.Snapshot
	Admission  *settings.Compiled // the admission settings, environment included
	Warnings   []Diagnostic       // in file order
	// MissingGroup is the group service.policyGroup names when the
	// ConfigMap lacks its key (the partitions are then YuniKorn's default).
	MissingGroup string
	// WebhookOnly lists, at each setting, what only the webhook does and
	// the native floor cannot (docs/native.md).
	WebhookOnly []Diagnostic
	// Digests hash each partition's (with its resolver's file) and queue's
	// own YAML, child queues left out, by "partition" and
	// "partition/queue.path" in lower case; "" the ConfigMap's other keys.
	Digests map[string][32]byte
}

// FloorStamps says whether c's native floor stamps CREATE: the admission
// partition stamps the groups the API server gives, which CEL can write.
func (c *Config) FloorStamps() bool {
	a := c.Admission // set in every configuration Load returns
	return a.StampGiven || slices.ContainsFunc(c.Partitions, func(p Partition) bool {
		return strings.EqualFold(p.Name, a.Partition) && p.Groups == identity.ModeGiven
	})
}

// Partition is one partition's policy and identity settings.
type Partition struct {
	policy.Partition
	Groups       identity.Mode        // how a request's groups combine with the resolver's (default given)
	Resolver     resolvers.Settings   // its usergroupresolver block, its users-to-groups file read
	Applications application.Defaults // the applicationacls block
	Placement    *placement.Rules     // the placementrules; nil when none (see PlacementRules)
}

// table returns the users-to-groups table c reads from file, and its
// digest; nil when c is nil or reads no such file.
func (c *Config) table(file string) (identity.Resolver, [32]byte) {
	if c != nil {
		for _, part := range c.Partitions {
			if r := part.Resolver; r.Type == resolvers.TypeFile && r.File == file && r.Table != nil {
				return r.Table, r.FileDigest
			}
		}
	}
	return nil, [32]byte{}
}

type aclUse struct {
	node *yaml.Node
	rule *acl.ACL
	what string
	trap bool // the value starts more than one space after the colon (warned already)
}

type parser struct {
	diags
	o         options
	src       *source
	acls      []aclUse
	queueNode map[string]*yaml.Node    // partition/queue path -> name node
	known     map[string]bool          // groups the resolvers know
	placement []placementUse           // placementrules to check against the queues
	partNodes map[string][2]*yaml.Node // lowercase partition name -> its groups and placementrules nodes
	reported  map[*yaml.Node]bool      // tagged values reported, which yunikornCheck skips
	digests   map[string][32]byte      // Config.Digests
	digested  int                      // YAML nodes digested through aliases
	hash      hash.Hash                // of digest, and its buffer
	buf       []byte
}

// maxNodes is the most YAML nodes a configuration may have: ten times
// those of 10,000 queues with 100,000 ACL entries (52,189).
var maxNodes = 500_000

// countNodes counts the nodes of the tree under n, up to just past limit
// (an alias counts once: its anchor is counted where it is written).
func countNodes(n *yaml.Node, limit int) int {
	count := 1
	for _, c := range n.Content {
		if count > limit {
			break
		}
		count += countNodes(c, limit-count)
	}
	return count
}

// NodeBound is an upper bound of the YAML nodes yaml.v3 builds for text,
// counted without parsing it: every node but the document's is written
// with a run of text between separators or with a flow indicator, and
// none of those makes more than three ("? " and "[:]").
func NodeBound(text string) int {
	units, run := 0, false
	for _, r := range text {
		switch r {
		case ' ', '\t', '\n', '\r', '\u0085', '\u2028', '\u2029', '\ufeff':
			run = false
			continue
		case ',', '[', ']', '{', '}':
			units++
		}
		if !run {
			units, run = units+1, true
		}
	}
	return 1 + 3*units
}

// document parses the usher YAML document (doc, or data when nil) and
// compiles its partitions; it returns the admissionController block.
func (p *parser) document(data []byte, doc *yaml.Node) (c *Config, adm *yaml.Node) {
	c = &Config{File: p.file}
	if doc == nil {
		doc = new(yaml.Node)
		if err := yaml.Unmarshal(data, doc); err != nil {
			p.yamlError(err, 0)
			return c, nil
		}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.errorf(nil, "empty configuration: it needs a partitions list")
		return c, nil
	}
	if root := doc.Content[0]; p.src.usher != nil && root.Kind == yaml.MappingNode {
		p.mergeUsher(root, p.src.usher.value) // counted below
	}
	if n := countNodes(doc, maxNodes); n > maxNodes {
		p.upgrade(doc.Content[0], "the configuration has more than %d YAML nodes (a configuration of 10,000 queues has about 52,000)", maxNodes)
		if p.o.strict {
			return c, nil
		}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "the configuration must be a mapping with a partitions key, not %s", yamlnode.Kind(root))
		return c, nil
	}
	var parts *yaml.Node
	p.mapping(root, "configuration", map[string]func(k, v *yaml.Node){
		"partitions":          func(k, v *yaml.Node) { parts = v },
		"admissionController": func(k, v *yaml.Node) { adm = v },
		"checksum":            nil,
	})
	if parts == nil {
		p.errorf(root, "missing partitions: at least one partition with a root queue is needed")
		return c, adm
	}
	if parts.Kind != yaml.SequenceNode {
		p.errorf(parts, "partitions must be a list, not %s", yamlnode.Kind(parts))
		return c, adm
	}
	seen := map[string]*yaml.Node{}
	for _, pn := range parts.Content {
		part, ok := p.partition(pn)
		if !ok {
			continue
		}
		lname := strings.ToLower(part.Name)
		if prev, dup := seen[lname]; dup {
			p.errorf(pn, "partition %q is defined twice (first at line %d)", part.Name, prev.Line)
			continue
		}
		seen[lname] = pn
		c.Partitions = append(c.Partitions, part)
		d := p.digest(pn) // and the resolver's file
		p.digests[lname] = sha256.Sum256(append(d[:], part.Resolver.FileDigest[:]...))
	}
	c.Digests = p.digests
	if p.src.yunikorn {
		p.yunikornCheck(root, reflect.TypeFor[ykConfig](), "")
	}
	if p.errorCount() > 0 {
		return c, adm
	}
	specs := make([]policy.Partition, len(c.Partitions))
	for i := range c.Partitions {
		specs[i] = c.Partitions[i].Partition
	}
	snap, err := policy.Compile(specs)
	if err != nil {
		p.errorf(parts, "%v", err)
		return c, adm
	}
	c.Snapshot = snap
	p.checkPlacement(snap)
	return c, adm
}

// mapping walks the keys of a mapping node. A nil handler accepts the key
// without reading it. Unknown and duplicate keys are errors.
func (p *parser) mapping(n *yaml.Node, what string, keys map[string]func(k, v *yaml.Node)) bool {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping, not %s", what, yamlnode.Kind(n))
		return false
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if first := seen[k.Value]; first != 0 {
			p.errorf(k, "%s: key %q is repeated (first at line %d)", what, k.Value, docLine(first))
			continue
		}
		seen[k.Value] = k.Line
		h, ok := keys[k.Value]
		if !ok {
			text, best := hint(k.Value, keys)
			p.report(k, Diagnostic{Severity: Error, Code: CodeUnknownKey, Suggestion: best, Msg: fmt.Sprintf("%s: unknown key %q%s", what, k.Value, text)})
			continue
		}
		if h != nil {
			h(k, v)
		}
	}
	return true
}

// hint says what an unknown key may have meant, and the closest key.
func hint(key string, keys map[string]func(k, v *yaml.Node)) (string, string) {
	best, bestDist := "", 3
	for k := range keys {
		if strings.EqualFold(k, key) {
			best, bestDist = k, -1
			break
		}
		if d := suggest.Distance(strings.ToLower(k), strings.ToLower(key)); d < bestDist || (d == bestDist && k < best) {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best), best
	}
	return " (known keys: " + strings.Join(slices.Sorted(maps.Keys(keys)), ", ") + ")", ""
}

// str reads a scalar string; null reads as "".
func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, "%s must be a string, not %s", what, yamlnode.Kind(n))
		return "", false
	}
	text := n.Value
	if n.Tag == "!!null" {
		text = ""
	}
	if n.Style&yaml.TaggedStyle != 0 && n.Tag != "!!str" {
		p.tagged(n, what, text)
	}
	return text, true
}

func (p *parser) partition(n *yaml.Node) (Partition, bool) {
	var part Partition
	var queues, nameNode, dqNode, rulesNode, groupsNode *yaml.Node
	ok := p.mapping(n, "partition", map[string]func(k, v *yaml.Node){
		"name":         func(k, v *yaml.Node) { part.Name, _ = p.str(v, "partition name"); nameNode = v },
		"queues":       func(k, v *yaml.Node) { queues = v },
		"adminacl":     func(k, v *yaml.Node) { part.AdminACL = p.acl(k, v, "partition adminacl") },
		"defaultqueue": func(k, v *yaml.Node) { part.DefaultQueue, _ = p.str(v, "defaultqueue"); dqNode = v },
		"groups": func(k, v *yaml.Node) {
			groupsNode = v
			if s, ok := p.str(v, "groups"); ok {
				m, err := identity.ParseMode(s)
				if err != nil {
					p.errorf(v, "%v", err)
				}
				part.Groups = m
			}
		},
		"usergroupresolver": func(k, v *yaml.Node) { part.Resolver = p.resolver(v) },
		"applicationacls": func(k, v *yaml.Node) {
			p.mapping(v, "applicationacls", map[string]func(k, v *yaml.Node){
				"admin":  func(k, v *yaml.Node) { part.Applications.Admin = p.acl(k, v, "applicationacls admin") },
				"view":   func(k, v *yaml.Node) { part.Applications.View = p.acl(k, v, "applicationacls view") },
				"modify": func(k, v *yaml.Node) { part.Applications.Modify = p.acl(k, v, "applicationacls modify") },
			})
		},
		// Keys of YuniKorn's schema that only the scheduler uses.
		"placementrules": func(k, v *yaml.Node) { rulesNode = v },
		"limits":         nil, "nodesortpolicy": nil, "preemption": nil, "statedumpfilepath": nil,
	})
	if !ok {
		return part, false
	}
	// YuniKorn's validator names a partition without a name default.
	if nameNode == nil || part.Name == "" {
		part.Name = policy.DefaultPartition
		p.warnf(cmp.Or(nameNode, n), "partition-name", "partition without a name: YuniKorn names it %s", policy.DefaultPartition)
	}
	if queues == nil || queues.Kind != yaml.SequenceNode || len(queues.Content) == 0 {
		p.errorf(cmp.Or(queues, n), "partition %s: queues must be a list holding the root queue", part.Name)
		return part, false
	}
	if rulesNode != nil {
		part.Placement = p.placementRules(part.Name, rulesNode)
	}
	prefix := strings.ToLower(part.Name) + "/"
	p.partNodes[strings.ToLower(part.Name)] = [2]*yaml.Node{groupsNode, rulesNode}
	part.Root = p.topQueues(part.Name, queues, prefix)
	if part.DefaultQueue != "" {
		if _, ok := p.queueNode[prefix+policy.NormalizeQueue(part.DefaultQueue)]; !ok {
			p.errorf(dqNode, "partition %s: defaultqueue %q is not a queue of this partition", part.Name, part.DefaultQueue)
		}
	}
	return part, part.Root != nil
}

// topQueues reads a partition's top-level queues as YuniKorn's
// checkQueuesStructure does: unless one root, a root is inserted above them.
func (p *parser) topQueues(partName string, queues *yaml.Node, prefix string) *policy.Queue {
	first := queues.Content[0]
	if len(queues.Content) == 1 {
		if name := yamlnode.Value(first, "name"); name == nil || strings.EqualFold(name.Value, policy.RootQueue) {
			root := p.queue(first, "", prefix)
			if root != nil {
				root.Parent = true
			}
			return root
		}
	}
	names := make([]string, 0, len(queues.Content))
	for _, qn := range queues.Content {
		if name := yamlnode.Value(qn, "name"); name != nil {
			names = append(names, name.Value)
		}
	}
	if len(names) == 1 {
		p.warnf(first, "root-inserted", "partition %s: the top-level queue is %s, not root: YuniKorn inserts a root queue above it, so its path is root.%s",
			partName, names[0], strings.ToLower(names[0]))
	} else {
		p.warnf(first, "root-inserted", "partition %s: %d top-level queues (%s): YuniKorn inserts a root queue above them, so their paths start with root.",
			partName, len(queues.Content), strings.Join(names, ", "))
	}
	root := &policy.Queue{Name: policy.RootQueue, Parent: true}
	p.queueNode[prefix+policy.RootQueue] = first
	for _, qn := range queues.Content {
		if c := p.queue(qn, policy.RootQueue, prefix); c != nil {
			root.Children = append(root.Children, c)
		}
	}
	return root
}

func (p *parser) queue(n *yaml.Node, parentPath, prefix string) *policy.Queue {
	q := &policy.Queue{}
	var children, nameNode, parentFlag *yaml.Node
	ok := p.mapping(n, "queue", map[string]func(k, v *yaml.Node){
		"name":   func(k, v *yaml.Node) { q.Name, _ = p.str(v, "queue name"); nameNode = v },
		"queues": func(k, v *yaml.Node) { children = v },
		"parent": func(k, v *yaml.Node) {
			parentFlag = v
			if err := v.Decode(&q.Parent); err != nil {
				p.errorf(v, "parent must be true or false, not %s", yamlnode.Kind(v))
			}
		},
		"submitacl": func(k, v *yaml.Node) { q.SubmitACL = p.acl(k, v, "submitacl") },
		"adminacl":  func(k, v *yaml.Node) { q.AdminACL = p.acl(k, v, "adminacl") },
		// Keys of YuniKorn's schema that only the scheduler uses.
		"resources":       func(k, v *yaml.Node) { p.resources(v) },
		"maxapplications": nil, "properties": nil, "childtemplate": nil, "limits": nil,
	})
	if !ok {
		return nil
	}
	if nameNode == nil {
		p.errorf(n, "queue without a name")
		return nil
	}
	if !policy.ValidQueueName(q.Name) {
		p.errorf(nameNode, "queue name %q is invalid: use 1 to 64 letters, digits, '_', ':', '#', '/', '@' or '-' (a '.' separates queues in a path)", q.Name)
		return nil
	}
	path := strings.ToLower(q.Name)
	if parentPath != "" {
		path = parentPath + "." + path
	}
	key := prefix + path
	if prev, dup := p.queueNode[key]; dup {
		p.errorf(nameNode, "queue %s is defined twice (first at line %d; queue names are not case sensitive)", path, prev.Line)
		return nil
	}
	p.queueNode[key] = nameNode
	p.digests[key] = p.digest(n)
	if children != nil {
		if children.Kind != yaml.SequenceNode {
			p.errorf(children, "queues of %s must be a list, not %s", path, yamlnode.Kind(children))
			return q
		}
		if parentFlag != nil && !q.Parent && len(children.Content) > 0 {
			p.errorf(parentFlag, "queue %s says parent: false but has child queues", path)
		}
		for _, cn := range children.Content {
			if c := p.queue(cn, path, prefix); c != nil {
				q.Children = append(q.Children, c)
			}
		}
	}
	return q
}

// resources checks the keys of a queue's resources block, which YuniKorn
// decodes strictly; their contents are the scheduler's.
func (p *parser) resources(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	p.mapping(n, "resources", map[string]func(k, v *yaml.Node){"guaranteed": nil, "max": nil})
}

// acl parses an ACL value (YuniKorn dialect), each problem at its place in the scalar.
func (p *parser) acl(k, n *yaml.Node, what string) *acl.ACL {
	text, ok := p.str(n, what)
	if !ok {
		return nil
	}
	// A plain scalar on its key's line more than one space after the colon:
	// YAML dropped the spaces, so an ACL meant as " group" reads as the user "group".
	trap := n.Style == 0 && k.Style == 0 && k.Line == n.Line && n.Column > k.Column+len(k.Value)+2
	a, warns, err := acl.Parse(text, acl.YuniKorn)
	if err != nil {
		if se, ok := err.(*acl.SyntaxError); ok {
			p.atOffset(n, se.Offset, Error, "", fmt.Sprintf("%s %q: %s", what, text, se.Msg))
		} else {
			p.errorf(n, "%s: %v", what, err)
		}
		return nil
	}
	for _, w := range warns {
		p.atOffset(n, w.Offset, Warning, "acl-entry", fmt.Sprintf("%s %q: %s", what, text, w.Msg))
	}
	if trap && !a.All() && len(a.Groups()) == 0 && len(a.Users()) > 0 {
		whom, as := "user", "group"
		if len(a.Users()) > 1 {
			whom, as = "users", "groups"
		}
		p.report(n, Diagnostic{Severity: Warning, Code: "acl-leading-space", Suggestion: fmt.Sprintf("%s: \" %s\"", k.Value, text),
			Msg: fmt.Sprintf("%s %q: the value starts %d spaces after the colon, but YAML drops leading spaces, so this lists the %s %s; for the %s %s write it quoted: %s: \" %s\"",
				what, text, n.Column-k.Column-len(k.Value)-1, whom, text, as, text, k.Value, text)})
	}
	p.acls = append(p.acls, aclUse{node: n, rule: &a, what: what, trap: trap})
	return &a
}

func (p *parser) resolver(n *yaml.Node) resolvers.Settings {
	var r resolvers.Settings
	var fileNode, usersNode, ldapNode, typeNode, unknownNode, mappingNode *yaml.Node
	r.Policy.Skip = slices.Clone(identity.DefaultSkip)
	keys := map[string]func(k, v *yaml.Node){
		"type":        func(k, v *yaml.Node) { r.Type, _ = p.str(v, "resolver type"); typeNode = v },
		"file":        func(k, v *yaml.Node) { r.File, _ = p.str(v, "file"); fileNode = v },
		"users":       func(k, v *yaml.Node) { usersNode = v },
		"ldap":        func(k, v *yaml.Node) { ldapNode = v },
		"skip":        func(k, v *yaml.Node) { r.Policy.Skip = p.skipPrefixes(v) },
		"namemapping": func(k, v *yaml.Node) { mappingNode = v }, // read below, against skip
		"overrides":   func(k, v *yaml.Node) { r.Policy.Overrides = p.userGroups(v, "overrides") },
		"unknownuser": func(k, v *yaml.Node) {
			unknownNode = v
			if s, ok := p.str(v, "unknownuser"); ok {
				u, err := identity.ParseUnknown(s)
				if err != nil {
					p.errorf(v, "%v", err)
				}
				r.Policy.Unknown = u
			}
		},
		"cache": func(k, v *yaml.Node) {
			if p.strict(v, "cache", &r.Cache) {
				c := r.Cache
				if c.PositiveTTL < 0 || c.NegativeTTL < 0 || c.StaleTTL < 0 || c.MaxEntries < 0 {
					p.errorf(v, "cache: lifetimes and maxentries must not be negative")
				}
				if c.NegativeTTL > 0 && c.PositiveTTL > 0 && c.NegativeTTL > c.PositiveTTL {
					p.warnf(v, "resolver", "cache: negativettl %v is longer than positivettl %v: failures would be remembered longer than answers", c.NegativeTTL, c.PositiveTTL)
				}
			}
		},
	}
	if !p.mapping(n, "usergroupresolver", keys) {
		return r
	}
	if mappingNode != nil {
		r.Policy.Mapping = p.nameMapping(mappingNode, r.Policy.Skip)
	}
	switch r.Type {
	case "", "none", "os":
	case "file":
		if r.File == "" {
			p.errorf(n, "usergroupresolver type file needs file: the path of a users-to-groups file")
			break
		}
		if !filepath.IsAbs(r.File) {
			r.File = filepath.Join(p.src.dir, r.File)
		}
		if p.o.request {
			r.Table, r.FileDigest = p.o.served.table(r.File)
			if r.Table == nil {
				p.warnf(fileNode, "resolver-unread", "usergroupresolver file %q: not checked at admission: usher opens no file a request names; it reads the file when it loads the configuration (run usher lint where the file is)", r.File)
				break
			}
		} else {
			data, broke, err := p.o.readFile(r.File, identity.MaxFileSize)
			if err != nil {
				p.errorf(fileNode, "usergroupresolver file: users-to-groups file: %v", err)
				break
			}
			if broke != nil {
				p.upgrade(fileNode, "usergroupresolver file: users-to-groups file: %v", broke)
			}
			if r.Table, err = identity.ParseFile(bytes.NewReader(data), r.File); err != nil {
				p.errorf(fileNode, "usergroupresolver file: %v", err)
				break
			}
			r.FileDigest = sha256.Sum256(data)
		}
		// Without namemapping, a user skip matches is never looked up.
		for _, e := range identity.FileEntries(r.Table) {
			for _, g := range e.Groups {
				p.known[g] = true
			}
			if s, ok := r.Policy.Skipped(e.User); ok && len(r.Policy.Mapping) == 0 {
				file, line, _ := p.pos(n.Line, n.Column)
				p.push(Diagnostic{File: r.File, Line: e.Line, Col: 1, Severity: Warning, Code: "resolver-unread", Msg: fmt.Sprintf(
					"user %q: this line is never read: skip %q of the usergroupresolver at %s:%d matches the name, so usher never looks it up and decides on the groups Kubernetes supplied",
					e.User, s, file, line)})
			}
		}
	case "test":
		if usersNode == nil {
			p.errorf(n, "usergroupresolver type test needs users: a mapping of user to groups")
			break
		}
		r.Users = p.userGroups(usersNode, "users")
	case "ldap":
		if ldapNode == nil {
			p.errorf(n, "usergroupresolver type ldap needs an ldap block")
			break
		}
		r.LDAP = p.ldap(ldapNode)
	default:
		p.errorf(typeNode, "unknown usergroupresolver type %q: want none, os, file, test or ldap", r.Type)
	}
	if unknownNode == nil && (r.Type == "file" || r.Type == "ldap" || r.Type == "os") {
		p.warnf(cmp.Or(typeNode, n), "unknownuser-default", "usergroupresolver type %s: unknownuser is not set, so a user the directory does not know is refused: "+
			"write unknownuser: deny to keep that, or unknownuser: given-groups to decide on the groups Kubernetes supplied", r.Type)
	}
	for _, extra := range []struct {
		node     *yaml.Node
		key, typ string
	}{{fileNode, "file", "file"}, {usersNode, "users", "test"}, {ldapNode, "ldap", "ldap"}} {
		if extra.node != nil && r.Type != extra.typ {
			p.errorf(extra.node, "usergroupresolver: %s is only used by type %s, but the type is %q", extra.key, extra.typ, r.Type)
		}
	}
	return r
}
