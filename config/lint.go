package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/identity/ldap"
)

// strict decodes n into target (a pointer to a struct with yaml tags),
// reporting unknown keys at their position first.
func (p *parser) strict(n *yaml.Node, what string, target any) bool {
	before := p.errorCount()
	p.checkKeys(n, what, reflect.TypeOf(target).Elem())
	if p.errorCount() > before {
		return false
	}
	if err := n.Decode(target); err != nil {
		var ne *settings.NodeError
		if errors.As(err, &ne) {
			p.add(ne.Line, ne.Column, Error, what+": "+ne.Msg)
		} else {
			p.decodeError(n, what, err)
		}
		return false
	}
	return true
}

func (p *parser) checkKeys(n *yaml.Node, what string, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t.String() != "time.Time":
		if n.Kind != yaml.MappingNode {
			if !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
				p.errorf(n, "%s must be a mapping, not %s", what, kindName(n))
			}
			return
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fields[name] = f.Type
		}
		keys := map[string]func(k, v *yaml.Node){}
		for name, ft := range fields {
			keys[name] = func(k, v *yaml.Node) { p.checkKeys(v, what+"."+name, ft) }
		}
		p.mapping(n, what, keys)
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			p.checkKeys(c, fmt.Sprintf("%s[%d]", what, i), t.Elem())
		}
	}
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
		p.warnf(n, "%s", w)
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
			p.upgrade(mapValue(n, f.key), "ldap %s: not a regular file of at most %d bytes", f.key, f.limit)
		}
	}
	return &c
}

// lint adds the warnings that need the whole file: ACLs whose leading space
// YAML dropped, names differing only in case, names YuniKorn's ACL parser
// drops, and leaf queues nobody can submit to.
func (p *parser) lint(c *Config) {
	p.lintUsersAsGroups()
	p.lintCase()
	p.lintYuniKornNames()
	if c.Snapshot == nil {
		return
	}
	for _, pname := range c.Snapshot.Partitions() {
		part, _ := c.Snapshot.Partition(pname)
		for _, q := range part.NobodyMaySubmit() {
			p.warnf(p.queueNode[pname+"/"+q], "leaf queue %s: nobody can submit to it: no submitacl or adminacl on it or its parents allows anyone", q)
		}
	}
}

// lintUsersAsGroups warns about an ACL of users only that names a group
// of another ACL or of a resolver: a group-only ACL whose leading space
// YAML dropped. The groups are collected only when such an ACL exists.
func (p *parser) lintUsersAsGroups() {
	var groups map[string]bool
	for _, u := range p.acls {
		r := u.rule
		if u.node.Style != 0 || u.trap || r.All() || len(r.Groups()) != 0 {
			continue
		}
		if groups == nil {
			groups = make(map[string]bool, len(p.known))
			for g := range p.known {
				groups[g] = true
			}
			for _, u := range p.acls {
				for _, g := range u.rule.Groups() {
					groups[g] = true
				}
			}
		}
		for _, name := range r.Users() {
			if groups[name] {
				p.warnf(u.node, "%s %q lists %s as a user, but %s is a group elsewhere in this configuration: "+
					"a group-only ACL needs a leading space, which YAML keeps only inside quotes: %s: \" %s\"",
					u.what, u.node.Value, name, name, u.what, u.node.Value)
				break
			}
		}
	}
}

// lintCase warns about names that differ only in case from a name of the
// same kind written before. Two such names differ from their lower case
// in one of them at least, so only the lower case forms of names that
// have upper case letters are tracked, and nothing when no name has one.
func (p *parser) lintCase() {
	type key struct {
		group bool
		lower string
	}
	var folded map[key]bool
	for _, u := range p.acls {
		for gi, names := range [2][]string{u.rule.Users(), u.rule.Groups()} {
			for _, name := range names {
				if lower := strings.ToLower(name); lower != name {
					if folded == nil {
						folded = map[key]bool{}
					}
					folded[key{gi == 1, lower}] = true
				}
			}
		}
	}
	if folded == nil {
		return
	}
	type first struct {
		name string
		line int
	}
	seen := map[key]first{}
	for _, u := range p.acls {
		for gi, names := range [2][]string{u.rule.Users(), u.rule.Groups()} {
			kind := "user"
			if gi == 1 {
				kind = "group"
			}
			for _, name := range names {
				k := key{gi == 1, strings.ToLower(name)}
				if !folded[k] {
					continue
				}
				f, ok := seen[k]
				switch {
				case !ok:
					seen[k] = first{name, docLine(u.node.Line)}
				case f.name != name:
					p.warnf(u.node, "%s %q: %s %q differs from %q (line %d) only in case; names are case sensitive, so they are different %ss",
						u.what, u.node.Value, kind, name, f.name, f.line, kind)
				}
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

// lintYuniKornNames warns about each ACL entry YuniKorn's ACL parser
// drops: usher grants what it says, YuniKorn's ACL check and placement
// grant nothing by it, so a workload only it admits is admitted by usher
// and refused by the scheduler.
func (p *parser) lintYuniKornNames() {
	for _, u := range p.acls {
		for gi, names := range [2][]string{u.rule.Users(), u.rule.Groups()} {
			kind, keep := "user", yunikornACLUser
			if gi == 1 {
				kind, keep = "group", yunikornACLGroup
			}
			for _, name := range names {
				if !keep.MatchString(name) {
					p.warnf(u.node, "%s %q: YuniKorn's ACL parser drops %s %q (it keeps only %s), so in YuniKorn this entry grants nothing: "+
						"usher admits whom only it lets in and YuniKorn refuses them (docs/yunikorn.md)", u.what, u.node.Value, kind, name, keep)
				}
			}
		}
	}
}

var lineRef = regexp.MustCompile(`^\s*line (\d+): (.*)$`)

// decodeError reports a YAML type error at the line it names.
func (p *parser) decodeError(n *yaml.Node, what string, err error) {
	for _, msg := range strings.Split(err.Error(), "\n") {
		if msg == "yaml: unmarshal errors:" || strings.TrimSpace(msg) == "" {
			continue
		}
		if m := lineRef.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			p.add(line, 1, Error, what+": "+m[2])
			continue
		}
		p.errorf(n, "%s: %s", what, strings.TrimPrefix(msg, "yaml: "))
	}
}
