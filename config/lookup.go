package config

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/ldap"
	"github.com/usherhq/usher/internal/yamlnode"
)

// skipPrefixes reads skip: a list of name prefixes that are never looked
// up; an empty list looks everyone up.
func (p *parser) skipPrefixes(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "skip must be a list of name prefixes (default [\"system:\"]; [] looks everyone up), not %s", yamlnode.Kind(n))
		return nil
	}
	out := []string{}
	for _, e := range n.Content {
		s, ok := p.str(e, "skip prefix")
		if !ok {
			continue
		}
		if s == "" {
			p.errorf(e, "skip: an empty prefix would skip every user, so the resolver would never be asked; remove the resolver instead")
			continue
		}
		if err := acl.ValidName(s); err != nil {
			p.errorf(e, "skip: no user name starts with %q: %v", s, err)
			continue
		}
		for _, prev := range out {
			if strings.HasPrefix(s, prev) {
				p.warnf(e, "resolver", "skip: %q has no effect: names starting with it already start with %q", s, prev)
			}
		}
		out = append(out, s)
	}
	return out
}

// nameMapping reads namemapping: a list of {pattern, replacement}, tried
// in order, and lints rules that can never apply.
func (p *parser) nameMapping(n *yaml.Node, skip []string) []identity.MapRule {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "namemapping must be a list of rules {pattern: REGEXP, replacement: NAME}, not %s", yamlnode.Kind(n))
		return nil
	}
	type rule struct {
		identity.MapRule
		node    *yaml.Node
		pattern string
	}
	var rules []rule
	var out []identity.MapRule
	for i, e := range n.Content {
		var pat, repl string
		var patNode, replNode *yaml.Node
		before := p.errorCount()
		if !p.mapping(e, fmt.Sprintf("namemapping rule %d", i+1), map[string]func(k, v *yaml.Node){
			"pattern":     func(k, v *yaml.Node) { pat, _ = p.str(v, "pattern"); patNode = v },
			"replacement": func(k, v *yaml.Node) { repl, _ = p.str(v, "replacement"); replNode = v },
		}) || p.errorCount() > before {
			continue
		}
		if patNode == nil || replNode == nil {
			p.errorf(e, "namemapping rule %d needs pattern (a regular expression the whole authenticated name must match) and replacement (the directory name, with $1 for the first group)", i+1)
			continue
		}
		r, err := identity.NewMapRule(pat, repl)
		if err != nil {
			p.errorf(patNode, "namemapping rule %d: %v", i+1, err)
			continue
		}
		if msg := badTemplate(r.Pattern, repl); msg != "" {
			p.errorf(replNode, "namemapping rule %d: replacement %q %s", i+1, repl, msg)
			continue
		}
		if why := neverMatches(pat); why != "" {
			p.warnf(patNode, "resolver", "namemapping rule %d can never apply: %s", i+1, why)
		}
		if prefix, _ := r.Pattern.LiteralPrefix(); prefix != "" {
			for _, s := range skip {
				if strings.HasPrefix(prefix, s) {
					p.warnf(patNode, "resolver", "namemapping rule %d can never apply: every name it matches starts with %q, and skip says those users are not looked up", i+1, s)
				}
			}
		}
		for j, prev := range rules {
			if why := shadows(prev.MapRule, prev.pattern, r, pat); why != "" {
				p.warnf(patNode, "resolver", "namemapping rule %d can never apply: rule %d (line %d), tried first, %s", i+1, j+1, docLine(prev.node.Line), why)
				break
			}
		}
		rules = append(rules, rule{MapRule: r, node: e, pattern: pat})
		out = append(out, r)
	}
	return out
}

// templateRef matches a replacement's references as regexp.Expand reads
// them: $$, ${name} (group 2 empty when unclosed) and $name.
var templateRef = regexp.MustCompile(`\$(?:\$|\{([^}]*)(\}?)|(\w*))`)

// badTemplate says what is wrong with a replacement for re, or "": a
// reference to a group the pattern lacks (regexp expands it to nothing).
func badTemplate(re *regexp.Regexp, repl string) string {
	if repl == "" {
		return "is empty: the directory name would be empty"
	}
	names := re.SubexpNames()
	for _, m := range templateRef.FindAllStringSubmatch(repl, -1) {
		ref := m[1] + m[3]
		n, err := strconv.Atoi(ref)
		switch {
		case strings.HasPrefix(m[0], "${") && m[2] == "":
			return "has an unclosed ${"
		case ref == "":
		case err == nil && n >= len(names):
			return fmt.Sprintf("refers to group %d, but the pattern has %d", n, len(names)-1)
		case err != nil && !slices.Contains(names[1:], ref):
			return fmt.Sprintf("refers to the group %q, which the pattern does not name (write ${1}x, not $1x, to follow a group by letters)", ref)
		}
	}
	return ""
}

// neverMatches says why pattern matches no valid user name, or "".
func neverMatches(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	re = re.Simplify()
	if onlyEmpty(re) {
		return "it only matches the empty name"
	}
	for _, r := range mustRunes(re) {
		if err := acl.ValidName("a" + string(r)); err != nil {
			return fmt.Sprintf("every name it matches contains %q, which user names cannot contain", r)
		}
	}
	return ""
}

func onlyEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	case syntax.OpCapture, syntax.OpConcat:
		for _, s := range re.Sub {
			if !onlyEmpty(s) {
				return false
			}
		}
		return true
	}
	return false
}

// mustRunes are runes every match of re contains.
func mustRunes(re *syntax.Regexp) []rune {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return re.Rune
	case syntax.OpCharClass:
		// A class of one rune, or of runes that are all invalid.
		var all []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 64 {
				return nil
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if acl.ValidName("a"+string(r)) == nil {
					return nil
				}
				all = append(all, r)
			}
		}
		if len(all) > 0 {
			return all[:1]
		}
	case syntax.OpRepeat:
		if re.Min == 0 {
			return nil
		}
		fallthrough
	case syntax.OpCapture, syntax.OpPlus, syntax.OpConcat:
		var out []rune
		for _, s := range re.Sub {
			out = append(out, mustRunes(s)...)
		}
		return out
	}
	return nil
}

// shadows says how an earlier rule a (pattern apat) matches every name a
// later rule b (pattern bpat) matches, or "" when it cannot tell.
func shadows(a identity.MapRule, apat string, b identity.MapRule, bpat string) string {
	if apat == bpat {
		return "has the same pattern"
	}
	ar, err := syntax.Parse(apat, syntax.Perl)
	if err != nil {
		return ""
	}
	if matchesAll(ar.Simplify()) {
		return fmt.Sprintf("matches every name (%s)", apat)
	}
	if lit, complete := b.Pattern.LiteralPrefix(); complete {
		if a.Pattern.MatchString(lit) {
			return fmt.Sprintf("matches %q, the only name this rule matches", lit)
		}
		return ""
	}
	br, err := syntax.Parse(bpat, syntax.Perl)
	if err != nil || hasAlternation(br) {
		return ""
	}
	br = br.Simplify()
	var first string
	for _, fill := range []rune{'a', 'Z', '7', '-', '.', '_', '@', ':', 'é'} {
		for _, more := range []bool{false, true} {
			var sb strings.Builder
			if !sample(&sb, br, fill, more) {
				return ""
			}
			s := sb.String()
			if !b.Pattern.MatchString(s) {
				continue // the fill did not fit a class: not a sample
			}
			if !a.Pattern.MatchString(s) {
				return ""
			}
			if first == "" {
				first = s
			}
		}
	}
	if first == "" {
		return ""
	}
	return fmt.Sprintf("matches every name tried that this rule matches (such as %q)", first)
}

func matchesAll(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCapture:
		return matchesAll(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		// Names are never empty and hold no newline, so .+ and .* match
		// every name.
		s := re.Sub[0]
		return s.Op == syntax.OpAnyChar || s.Op == syntax.OpAnyCharNotNL
	}
	return false
}

func hasAlternation(re *syntax.Regexp) bool {
	return re.Op == syntax.OpAlternate || slices.ContainsFunc(re.Sub, hasAlternation)
}

// sample writes a string re matches: fill wherever re allows a choice and
// fill fits, repetitions at their minimum (or one more with more). It
// returns false for an expression it does not sample.
func sample(sb *strings.Builder, re *syntax.Regexp, fill rune, more bool) bool {
	switch re.Op {
	case syntax.OpLiteral:
		sb.WriteString(string(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		sb.WriteRune(fill)
	case syntax.OpCharClass:
		r := rune(-1)
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if fill >= re.Rune[i] && fill <= re.Rune[i+1] {
				r = fill
			}
		}
		if r < 0 && len(re.Rune) > 0 {
			r = re.Rune[0]
		}
		if r < 0 || !utf8.ValidRune(r) {
			return false
		}
		sb.WriteRune(r)
	case syntax.OpCapture:
		return sample(sb, re.Sub[0], fill, more)
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat, syntax.OpQuest:
		n := 0
		switch re.Op {
		case syntax.OpPlus:
			n = 1
		case syntax.OpRepeat:
			n = re.Min
		}
		if more && (re.Op != syntax.OpRepeat || re.Max < 0 || re.Max > n) && (re.Op != syntax.OpQuest || n == 0) {
			n++
		}
		for range n {
			if !sample(sb, re.Sub[0], fill, more) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !sample(sb, s, fill, more) {
				return false
			}
		}
	case syntax.OpEmptyMatch, syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine:
	default:
		return false
	}
	return true
}

// userGroups reads what (overrides, a test resolver's users): a mapping
// of user to groups, each mistake at its node.
func (p *parser) userGroups(n *yaml.Node, what string) map[string][]string {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must map each user to a list of groups, not %s", what, yamlnode.Kind(n))
		return nil
	}
	out := map[string][]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := acl.ValidName(k.Value); err != nil {
			p.errorf(k, "%s: user: %v", what, err)
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.errorf(k, "%s: user %q is repeated", what, k.Value)
			continue
		}
		var groups []string
		if v.Kind != yaml.SequenceNode && !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
			p.errorf(v, "%s: the groups of %s must be a list (an empty list: no groups), not %s", what, k.Value, yamlnode.Kind(v))
			continue
		}
		for _, g := range v.Content {
			s, ok := p.str(g, "group")
			if !ok {
				continue
			}
			if err := acl.ValidName(s); err != nil {
				p.errorf(g, "%s: groups of %s: %v", what, k.Value, err)
				continue
			}
			groups = append(groups, s)
			p.known[s] = true
		}
		out[k.Value] = groups
	}
	return out
}

// placeLDAPError reports an ldap.Config.Validate error at its key, else the block.
func (p *parser) placeLDAPError(n *yaml.Node, err error) {
	if fe, ok := errors.AsType[*ldap.FieldError](err); ok {
		key, index, _ := strings.Cut(fe.Field, "[")
		if v := yamlnode.Value(n, key); v != nil {
			if i, err := strconv.Atoi(strings.TrimSuffix(index, "]")); err == nil && v.Kind == yaml.SequenceNode && i < len(v.Content) {
				v = v.Content[i]
			}
			p.errorf(v, "%v", err)
			return
		}
	}
	p.errorf(n, "%v", err)
}
