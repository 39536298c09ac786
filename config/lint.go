package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/identity/ldap"
)

// strict decodes n into target (a pointer to a struct with yaml tags),
// reporting unknown keys at their position first.
func (p *parser) strict(n *yaml.Node, what string, target any) bool {
	before := len(p.errors())
	p.checkKeys(n, what, reflect.TypeOf(target).Elem())
	if len(p.errors()) > before {
		return false
	}
	if err := n.Decode(target); err != nil {
		var ne *admission.NodeError
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
	return &c
}

// lint adds the warnings that need the whole file: ACLs whose leading space
// YAML dropped, names differing only in case, and leaf queues nobody can
// submit to.
func (p *parser) lint(c *Config) {
	groups := map[string]bool{}
	for g := range p.known {
		groups[g] = true
	}
	for _, u := range p.acls {
		for _, g := range u.rule.Groups() {
			groups[g] = true
		}
	}
	type first struct {
		name string
		line int
	}
	seen := map[string]first{}
	for _, u := range p.acls {
		r := u.rule
		if u.node.Style == 0 && !u.trap && !r.All() && len(r.Groups()) == 0 {
			for _, name := range r.Users() {
				if groups[name] {
					p.warnf(u.node, "%s %q lists %s as a user, but %s is a group elsewhere in this configuration: "+
						"a group-only ACL needs a leading space, which YAML keeps only inside quotes: %s: \" %s\"",
						u.what, u.node.Value, name, name, u.what, u.node.Value)
					break
				}
			}
		}
		for _, l := range []struct {
			kind  string
			names []string
		}{{"user", r.Users()}, {"group", r.Groups()}} {
			for _, name := range l.names {
				key := l.kind + "\x00" + strings.ToLower(name)
				f, ok := seen[key]
				switch {
				case !ok:
					seen[key] = first{name, u.node.Line}
				case f.name != name:
					p.warnf(u.node, "%s %q: %s %q differs from %q (line %d) only in case; names are case sensitive, so they are different %ss",
						u.what, u.node.Value, l.kind, name, f.name, f.line, l.kind)
				}
			}
		}
	}
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
