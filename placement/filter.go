package placement

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/usherhq/usher/acl"
)

// filter is a compiled rule filter, with YuniKorn's semantics: an empty
// filter returns its type; else a match of the user or a group returns
// the type, no match its opposite.
type filter struct {
	allow          bool
	empty          bool
	users, groups  map[string]bool
	names          *acl.ACL // users and groups as one hashed set: no allocation, no map lookup per group
	userRE, grpRE  *pattern
	userN, groupsN []string // as configured, for String
}

// allows reports whether the filter lets sub through.
func (f *filter) allows(sub *acl.Subject) bool {
	if f.empty {
		return f.allow
	}
	// Every match returns the type, so the order of the checks does not
	// change the answer.
	if f.names != nil && f.names.Allows(sub) || f.userRE.match(sub.User()) {
		return f.allow
	}
	if f.grpRE != nil {
		for _, g := range sub.Groups() {
			if f.grpRE.match(g) {
				return f.allow
			}
		}
	}
	return !f.allow
}

// pattern is a filter's regular expression, matched unanchored as
// YuniKorn does; an anchored one's literal prefix is tested first.
type pattern struct {
	re     *regexp.Regexp
	prefix string
}

func newPattern(re *regexp.Regexp) *pattern {
	p := &pattern{re: re}
	if strings.HasPrefix(re.String(), "^") {
		p.prefix, _ = re.LiteralPrefix()
	}
	return p
}

func (p *pattern) match(s string) bool {
	return p != nil && strings.HasPrefix(s, p.prefix) && p.re.MatchString(s)
}

func (f *filter) String() string {
	parts := []string{"deny"}
	if f.allow {
		parts[0] = "allow"
	}
	if len(f.userN) > 0 {
		parts = append(parts, "users "+strings.Join(f.userN, ","))
	}
	if len(f.groupsN) > 0 {
		parts = append(parts, "groups "+strings.Join(f.groupsN, ","))
	}
	return strings.Join(parts, " ")
}

func (c *compiler) filter(s FilterSpec, depth int) filter {
	f := filter{users: map[string]bool{}, groups: map[string]bool{}, empty: true, allow: true}
	switch strings.ToLower(s.Type) {
	case "", "allow":
	case "deny":
		f.allow = false
		if s.Type != "deny" {
			c.add(depth, "filter.type", -1, true, "filter type %q: usher reads it as deny, but YuniKorn's scheduler compares with lower-case \"deny\" only and treats %q as allow (only the listed users and groups would pass); write deny", s.Type, s.Type)
		}
	default:
		c.add(depth, "filter.type", -1, false, "filter type %q: want allow or deny", s.Type)
	}
	f.userRE = c.names(s.Users, depth, "filter.users", "user", UserPattern, f.users)
	f.grpRE = c.names(s.Groups, depth, "filter.groups", "group", GroupPattern, f.groups)
	f.userN, f.groupsN = slices.Clone(s.Users), slices.Clone(s.Groups)
	if len(f.users)+len(f.groups) > 0 {
		us, gs := slices.Sorted(maps.Keys(f.users)), slices.Sorted(maps.Keys(f.groups))
		if a, err := acl.New(us, gs); err == nil {
			f.names = &a
		} else {
			c.add(depth, "filter", -1, false, "filter names: %v", err)
		}
	}
	if len(s.Users) > 0 || len(s.Groups) > 0 {
		f.empty = false
	} else if !f.allow {
		c.add(depth, "filter.type", -1, true, "a deny filter without users or groups lets nobody through: this rule never places an application")
	}
	return f
}

// names compiles a filter list: one entry is a regular expression when it
// holds a special character, else a name; in a longer list every entry is
// a name, and YuniKorn drops the ones its pattern refuses.
func (c *compiler) names(list []string, depth int, field, what string, valid *regexp.Regexp, into map[string]bool) *pattern {
	if len(list) == 1 {
		e := list[0]
		if specialPattern.MatchString(e) {
			re, err := regexp.Compile(e)
			if err != nil {
				c.add(depth, field, 0, false, "%q is not a valid regular expression: %v", e, err)
				return nil
			}
			if !strings.HasPrefix(e, "^") || !strings.HasSuffix(e, "$") {
				c.add(depth, field, 0, true, "regular expression %q is not anchored: it matches any %s name that contains a match (write ^...$ to match whole names)", e, what)
			}
			return newPattern(re)
		}
		if !valid.MatchString(e) {
			c.add(depth, field, 0, false, "%q is neither a valid %s name (%s) nor a regular expression", e, what, valid)
			return nil
		}
		into[e] = true
		return nil
	}
	for i, e := range list {
		if !valid.MatchString(e) {
			c.add(depth, field, i, true, "%q is not a valid %s name (%s): YuniKorn ignores it, so it never matches", e, what, valid)
			continue
		}
		into[e] = true
	}
	return nil
}
