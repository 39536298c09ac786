package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/identity/ldap"
	"github.com/usherhq/usher/internal/yamlnode"
)

// strict decodes n into target (a pointer to a struct with yaml tags),
// reporting each unknown key and each value of the wrong type at its node.
func (p *parser) strict(n *yaml.Node, what string, target any) bool {
	before := p.errorCount()
	p.checkKeys(n, what, what, reflect.TypeOf(target).Elem())
	if p.errorCount() > before {
		return false
	}
	if err := n.Decode(target); err != nil {
		p.errorf(n, "%s: %s", what, decodeMsg(n, err))
		return false
	}
	return true
}

// checkKeys walks n as yaml.v3 decodes it into t, down to each value it
// decodes alone, to place an error at its node; what names the key, top the block.
func (p *parser) checkKeys(n *yaml.Node, top, what string, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()):
		p.checkValue(n, top, t)
	case t.Kind() == reflect.Struct && t.String() != "time.Time":
		if n.Kind != yaml.MappingNode {
			if !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
				p.errorf(n, "%s must be a mapping, not %s", what, yamlnode.Kind(n))
			}
			return
		}
		keys := map[string]func(k, v *yaml.Node){}
		for name, ft := range yamlFields(t) {
			keys[name] = func(k, v *yaml.Node) { p.checkKeys(v, top, what+"."+name, ft) }
		}
		p.mapping(n, what, keys)
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			p.checkKeys(c, top, fmt.Sprintf("%s[%d]", what, i), t.Elem())
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			p.checkKeys(n.Content[i], top, what+"."+n.Content[i-1].Value, t.Elem())
		}
	default:
		p.checkValue(n, top, t)
	}
}

var fieldCache sync.Map // yamlFields' answers by type

// yamlFields maps the keys yaml.v3 decodes into the struct t to their
// fields' types: a field's yaml tag name, else its name in lower case.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && name != "-" {
			out[cmp.Or(name, strings.ToLower(f.Name))] = f.Type
		}
	}
	fieldCache.Store(t, out)
	return out
}

// checkValue reports why n does not decode into a t, at the node a NodeError names.
func (p *parser) checkValue(n *yaml.Node, top string, t reflect.Type) {
	err := n.Decode(reflect.New(t).Interface())
	if ne, ok := errors.AsType[*settings.NodeError](err); ok {
		p.add(ne.Line, ne.Column, Error, "", top+": "+ne.Msg)
	} else if err != nil {
		p.errorf(n, "%s: %s", top, decodeMsg(n, err))
	}
}

// decodeMsg is why yaml.v3 cannot decode n, less the "line N: " (it is placed at n).
func decodeMsg(n *yaml.Node, err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	return strings.TrimPrefix(strings.Join(te.Errors, "; "), fmt.Sprintf("line %d: ", n.Line))
}

// ldap decodes and validates an ldap resolver block.
func (p *parser) ldap(n *yaml.Node) *ldap.Config {
	var c ldap.Config
	if !p.strict(n, "ldap", &c) {
		return nil
	}
	if err := c.Validate(); err != nil {
		p.placeLDAPError(n, err)
		return nil
	}
	c = c.WithDefaults()
	for _, w := range c.Warnings() {
		p.warnf(n, "resolver", "%s", w)
	}
	// The resolver reads these files when it is built; what a later
	// release refuses of them is said here (unread; not at admission).
	for _, f := range []struct {
		key, path string
		limit     int64
	}{{"cafile", c.CAFile, ldap.MaxCAFile}, {"bindpasswordfile", c.BindPasswordFile, ldap.MaxPasswordFile}} {
		if p.o.request {
			break
		}
		if st, err := os.Stat(f.path); err == nil && (!st.Mode().IsRegular() || st.Size() > f.limit) {
			p.upgrade(yamlnode.Value(n, f.key), "ldap %s: not a regular file of at most %d bytes", f.key, f.limit)
		}
	}
	return &c
}

// lint adds the warnings that need the whole file.
func (p *parser) lint(c *Config) {
	p.lintUsersAsGroups()
	p.lintNames()
	if c.Snapshot == nil {
		return
	}
	for _, pname := range c.Snapshot.Partitions() {
		part, _ := c.Snapshot.Partition(pname)
		for _, q := range part.NobodyMaySubmit() {
			what := "leaf queue %s: nobody can submit to it"
			if ref, _ := part.Lookup(q); !ref.Leaf() {
				what = "parent queue %s has no child queues and nobody can submit to those placement creates in it"
			}
			p.warnf(p.queueNode[pname+"/"+q], "nobody-can-submit", what+": no submitacl or adminacl on it or its parents allows anyone", q)
		}
	}
}

// lintUsersAsGroups warns about an ACL of users only that names a group
// of another ACL or of a resolver: a group-only ACL whose leading space
// YAML dropped.
func (p *parser) lintUsersAsGroups() {
	groups := maps.Clone(p.known)
	for _, u := range p.acls {
		for _, g := range u.rule.Groups() {
			groups[g] = true
		}
	}
	for _, u := range p.acls {
		r := u.rule
		if u.node.Style != 0 || u.trap || r.All() || len(r.Groups()) != 0 {
			continue
		}
		for _, name := range r.Users() {
			if groups[name] {
				p.warnf(u.node, "acl-leading-space", "%s %q lists %s as a user, but %s is a group elsewhere in this configuration: "+
					"a group-only ACL needs a leading space, which YAML keeps only inside quotes: %s: \" %s\"",
					u.what, u.node.Value, name, name, u.what, u.node.Value)
				break
			}
		}
	}
}

// The names yunikorn-core's ACL parser keeps (pkg/common/security/acl.go,
// setUsers and setGroups); it drops any other without an error.
var (
	yunikornACLUser  = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?$`)
	yunikornACLGroup = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9_-]*$`)
)

// lintNames warns about each ACL name differing only in case from a name
// of the same kind written before, and each YuniKorn's ACL parser drops: a
// workload only it admits is admitted by usher and refused by the scheduler.
// One of two names differing only in case has upper case letters, so only
// those names' lower case forms are tracked, not every name.
func (p *parser) lintNames() {
	type key struct {
		group bool
		lower string
	}
	type first struct {
		name string
		line int
	}
	folded, seen := map[key]bool{}, map[key]first{}
	for _, u := range p.acls {
		for gi, names := range [2][]string{u.rule.Users(), u.rule.Groups()} {
			for _, name := range names {
				if lower := strings.ToLower(name); lower != name {
					folded[key{gi == 1, lower}] = true
				}
			}
		}
	}
	for _, u := range p.acls {
		for gi, names := range [2][]string{u.rule.Users(), u.rule.Groups()} {
			kind, keep := "user", yunikornACLUser
			if gi == 1 {
				kind, keep = "group", yunikornACLGroup
			}
			for _, name := range names {
				k := key{gi == 1, strings.ToLower(name)}
				switch f, ok := seen[k]; {
				case !folded[k]:
				case !ok:
					seen[k] = first{name, docLine(u.node.Line)}
				case f.name != name:
					p.warnf(u.node, "acl-name-case", "%s %q: %s %q differs from %q (line %d) only in case; names are case sensitive, so they are different %ss",
						u.what, u.node.Value, kind, name, f.name, f.line, kind)
				}
				if !keep.MatchString(name) {
					p.warnf(u.node, "yunikorn-acl-name", "%s %q: YuniKorn's ACL parser drops %s %q (it keeps only %s), so in YuniKorn this entry grants nothing: "+
						"usher admits whom only it lets in and YuniKorn refuses them (docs/yunikorn.md)", u.what, u.node.Value, kind, name, keep)
				}
			}
		}
	}
}
