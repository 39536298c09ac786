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
// the type, no match its opposite. Regular expressions match unanchored,
// as YuniKorn's do.
type filter struct {
	allow          bool
	empty          bool
	names          *acl.ACL // the users and groups listed by name
	userRE, grpRE  *regexp.Regexp
	userN, groupsN []string // as configured, for String
}

// allows reports whether the filter lets sub through. Every match returns
// the type, so the order of the checks does not change the answer.
func (f *filter) allows(sub *acl.Subject) bool {
	if f.empty {
		return f.allow
	}
	if f.names != nil && f.names.Allows(sub) || f.userRE != nil && f.userRE.MatchString(sub.User()) ||
		f.grpRE != nil && slices.ContainsFunc(sub.Groups(), f.grpRE.MatchString) {
		return f.allow
	}
	return !f.allow
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
	f := filter{empty: true, allow: true}
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
	users, groups := map[string]bool{}, map[string]bool{}
	f.userRE = c.names(s.Users, depth, "filter.users", "user", UserPattern, users)
	f.grpRE = c.names(s.Groups, depth, "filter.groups", "group", GroupPattern, groups)
	f.userN, f.groupsN = slices.Clone(s.Users), slices.Clone(s.Groups)
	if len(users)+len(groups) > 0 {
		us, gs := slices.Sorted(maps.Keys(users)), slices.Sorted(maps.Keys(groups))
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
func (c *compiler) names(list []string, depth int, field, what string, valid *regexp.Regexp, into map[string]bool) *regexp.Regexp {
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
			return re
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
