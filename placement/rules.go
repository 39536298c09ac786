// Package placement evaluates YuniKorn's placement rules: given who
// submits an application, the queue it names and its tags, which queue
// does the scheduler put it in, and by which rule?
//
// It follows yunikorn-core's scheduler code (pkg/scheduler/placement),
// not its design page. Rules this package enforces:
//   - Rules run in order: provided, user, fixed and tag, each with an
//     optional filter, an optional parent rule that makes the parent
//     queue, and a create flag. An empty rule list is one provided rule
//     without create.
//   - A rule produces a queue name, or nothing (filtered out, no queue
//     provided, no such tag, the queue does not exist and create is
//     false). A name built from a user, a provided queue or a tag that does
//     not start with "root." has each "." replaced by "_dot_" and is put
//     under the parent rule's queue (or root); it must then match
//     ^[a-zA-Z0-9_:#/@-]{1,64}$. Queue names are compared in lower case.
//   - A produced queue that exists must be a leaf the user may submit to
//     (submit or admin ACL of the queue or any ancestor); a queue that
//     does not exist (create) is judged by the ACLs of its nearest
//     existing ancestor. Otherwise the next rule runs.
//   - A rule error (an invalid name, a parent rule that lands on a leaf)
//     stops placement: the application is rejected.
//   - After the last rule, root.default is tried when it exists, with the
//     same checks; then the application is rejected.
//
// Where usher differs from YuniKorn's code, and why, is listed in
// docs/placement.md.
package placement

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/usherhq/usher/policy"
)

// Kind is a rule type.
type Kind string

// The rule types of YuniKorn's scheduler.
const (
	Provided Kind = "provided" // the queue the application names
	User     Kind = "user"
	Fixed    Kind = "fixed" // the rule's value
	Tag      Kind = "tag"   // the value of the tag the rule's value names

	// PrimaryGroup and SecondaryGroup are usher's, YARN Fair Scheduler's
	// primaryGroup (the first group) and secondaryGroupExistingQueue (the
	// first other group naming an existing queue; it never creates one).
	PrimaryGroup   Kind = "primarygroup"
	SecondaryGroup Kind = "secondarygroup"
)

// Names YuniKorn uses for placement.
const (
	DefaultQueue = "root.default" // tried after the last rule
	// RecoveryQueue is YuniKorn's queue for applications recovered at
	// restart; no ACL check ever passes on it.
	RecoveryQueue  = "root.@recovery@"
	DotReplacement = "_dot_" // replaces each "." of a name a rule builds
)

// Patterns of YuniKorn's configuration validator.
var (
	// UserPattern is yunikorn-core's UserRegExp, what a user entry of a
	// filter or a limit must match.
	UserPattern  = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9:#/_.@-]*[$]?$`)
	GroupPattern = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9:_.-]*$`)
	// specialPattern finds what makes a single filter entry a regular
	// expression.
	specialPattern  = regexp.MustCompile(`[\^$*+?()\[{}|]`)
	ruleNamePattern = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9_]*$`)
)

// Spec is a placement rule as configured (YuniKorn's PlacementRule).
type Spec struct {
	Name   string
	Create bool
	Value  string
	Filter FilterSpec
	Parent *Spec
}

// FilterSpec is a rule's filter as configured: Type is "", allow or deny;
// a list of one entry is a regular expression when it holds one of
// ^$*+?()[{}|, a name otherwise.
type FilterSpec struct {
	Type   string
	Users  []string
	Groups []string
}

// Rules is a compiled, immutable list of placement rules, safe for
// concurrent use.
type Rules struct {
	rules    []*rule
	implicit bool // the rule list of a partition that configures none
}

type rule struct {
	kind      Kind
	create    bool
	value     string // fixed: the queue, lower case; tag: the tag name, lower case
	qualified bool   // fixed: value starts with "root"
	filter    filter
	parent    *rule
}

// Implicit returns the rules of a partition that configures none: one
// provided rule without create.
func Implicit() *Rules {
	return &Rules{rules: []*rule{{kind: Provided, filter: filter{allow: true, empty: true}}}, implicit: true}
}

// Len returns the number of rules.
func (rs *Rules) Len() int { return len(rs.rules) }

// IsImplicit reports whether the rules are the implicit provided rule of
// a partition that configures none.
func (rs *Rules) IsImplicit() bool { return rs.implicit }

// ReadsTags reports whether a rule (or a parent rule) is a tag rule (on
// tag name, when given, in lower case): only then do the application's
// tags (that tag) matter.
func (rs *Rules) ReadsTags(name ...string) bool {
	for _, r := range rs.rules {
		for ; r != nil; r = r.parent {
			if r.kind == Tag && (len(name) == 0 || r.value == name[0]) {
				return true
			}
		}
	}
	return false
}

// Describe renders rule i (0-based) in one line, such as
// `user create under (fixed "root.users")`.
func (rs *Rules) Describe(i int) string {
	if i < 0 || i >= len(rs.rules) {
		return fmt.Sprintf("the %s fallback", DefaultQueue)
	}
	s := rs.rules[i].String()
	if rs.implicit {
		s += " (implicit: the partition has no placementrules)"
	}
	return s
}

// String renders the rule in one line.
func (r *rule) String() string {
	var b strings.Builder
	b.WriteString(string(r.kind))
	if r.kind == Fixed || r.kind == Tag {
		fmt.Fprintf(&b, " %q", r.value)
	}
	if r.create {
		b.WriteString(" create")
	}
	if !r.filter.empty {
		b.WriteString(" filter(" + r.filter.String() + ")")
	}
	if r.parent != nil {
		b.WriteString(" under (" + r.parent.String() + ")")
	}
	return b.String()
}

// Problem is a mistake (or, with Warning set, a likely mistake) in a rule
// list, located so that a configuration parser can point at it.
type Problem struct {
	Rule  int // the index of the top-level rule
	Depth int // 0 for the rule itself, 1 for its parent rule, and so on
	// Field is "" (the whole rule), "name", "value", "create",
	// "filter.type", "filter.users" or "filter.groups".
	Field   string
	Entry   int // the index in filter.users or filter.groups, -1 otherwise
	Warning bool
	Msg     string
}

func (p Problem) Error() string {
	where := fmt.Sprintf("placement rule %d", p.Rule+1)
	for range p.Depth {
		where += " parent"
	}
	if p.Field != "" {
		where += " " + p.Field
	}
	return where + ": " + p.Msg
}

// Compile validates specs as YuniKorn's configuration validator and rule
// constructors do, and compiles them; Rules is nil when any Problem is an
// error. An empty list compiles to Implicit().
func Compile(specs []Spec) (*Rules, []Problem) {
	if len(specs) == 0 {
		return Implicit(), nil
	}
	c := compiler{}
	rs := &Rules{}
	for i := range specs {
		c.rule = i
		if r := c.compile(&specs[i], 0); r != nil {
			rs.rules = append(rs.rules, r)
		}
	}
	if hasError(c.problems) {
		return nil, c.problems
	}
	return rs, c.problems
}

func hasError(ps []Problem) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return !p.Warning })
}

type compiler struct {
	rule     int
	problems []Problem
}

func (c *compiler) add(depth int, field string, entry int, warning bool, format string, args ...any) {
	c.problems = append(c.problems, Problem{Rule: c.rule, Depth: depth, Field: field, Entry: entry, Warning: warning, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) compile(s *Spec, depth int) *rule {
	before := len(c.problems)
	if !ruleNamePattern.MatchString(s.Name) {
		c.add(depth, "name", -1, false, "invalid rule name %q: want provided, user, fixed or tag (or usher's primaryGroup or secondaryGroup)", s.Name)
		return nil
	}
	r := &rule{kind: Kind(strings.ToLower(s.Name)), create: s.Create}
	switch r.kind {
	case PrimaryGroup, SecondaryGroup:
		c.add(depth, "name", -1, true, "%s is an usher extension (YARN Fair Scheduler's rule), not a YuniKorn rule: YuniKorn's scheduler cannot build it (a new partition then rejects every application, a reload is refused)", s.Name)
		if r.kind == SecondaryGroup && s.Create {
			r.create = false
			c.add(depth, "create", -1, true, "the secondaryGroup rule only uses existing queues: create is ignored")
		}
		if s.Value != "" {
			c.add(depth, "value", -1, true, "the %s rule does not use a value; %q is ignored", s.Name, s.Value)
		}
	case Provided, User:
		if s.Value != "" {
			c.add(depth, "value", -1, true, "the %s rule does not use a value; %q is ignored", r.kind, s.Value)
		}
	case Fixed:
		r.value = strings.ToLower(s.Value)
		if r.value == "" {
			c.add(depth, "value", -1, false, "a fixed rule needs a value: the queue")
			break
		}
		for _, part := range strings.Split(r.value, ".") {
			if !policy.ValidQueueName(part) {
				c.add(depth, "value", -1, false, "fixed queue %q: %q is not a valid queue name (1 to 64 of a-z 0-9 _ : # / @ -)", s.Value, part)
				break
			}
		}
		// YuniKorn tests the prefix "root", not "root.".
		r.qualified = strings.HasPrefix(r.value, "root")
		if r.qualified && s.Parent != nil {
			c.add(depth, "value", -1, false, "fixed queue %q is a full path (it starts with root), so the rule cannot have a parent rule", s.Value)
		}
		if r.qualified && r.value != "root" && !strings.HasPrefix(r.value, "root.") {
			if s.Create {
				c.add(depth, "value", -1, false, "fixed queue %q starts with \"root\" but not \"root.\": YuniKorn takes it for a full path and its scheduler fails on it when create is true; write root.%s", s.Value, r.value)
			} else {
				c.add(depth, "value", -1, true, "fixed queue %q starts with \"root\" but not \"root.\": YuniKorn takes it for a full path, so the rule never matches; write root.%s", s.Value, r.value)
			}
		}
	case Tag:
		r.value = strings.ToLower(s.Value)
		if r.value == "" {
			c.add(depth, "value", -1, false, "a tag rule needs a value: the tag name, such as namespace")
		}
	case "recovery":
		c.add(depth, "name", -1, false, "the recovery rule is internal to YuniKorn and cannot be configured")
		return nil
	default:
		c.add(depth, "name", -1, false, "unknown rule %q: want provided, user, fixed or tag (or usher's primaryGroup or secondaryGroup)", s.Name)
		return nil
	}
	r.filter = c.filter(s.Filter, depth)
	if s.Parent != nil {
		r.parent = c.compile(s.Parent, depth+1)
	}
	if hasError(c.problems[before:]) {
		return nil
	}
	return r
}

// Names returns the user and group names the rules' filters (parent rules
// included) list by name, not by a regular expression; sorted, unique.
func (rs *Rules) Names() (users, groups []string) {
	for _, r := range rs.rules {
		for ; r != nil; r = r.parent {
			if r.filter.names != nil {
				users = append(users, r.filter.names.Users()...)
				groups = append(groups, r.filter.names.Groups()...)
			}
		}
	}
	slices.Sort(users)
	slices.Sort(groups)
	return slices.Compact(users), slices.Compact(groups)
}
