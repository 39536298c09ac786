package identity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/usherhq/usher/acl"
)

// A partition's lookup policy (Policy) says who is looked up and under
// which name:
//   - ACLs always match the authenticated name (Info.User); a mapping rule
//     only changes the name the resolver is asked for.
//   - A user with a Skip prefix is never looked up: only the supplied
//     groups count, whatever the mode.
//   - A static override replaces the resolver's answer, also for a
//     skipped user.
//   - "No such user" denies unless the policy is UnknownGivenGroups; any
//     other resolver failure always denies.

// SourceOverride marks groups from a static override.
const SourceOverride Source = "override"

// DefaultSkip is the Skip of a partition that configures none: service
// accounts, nodes and the other system: users are not looked up.
var DefaultSkip = []string{"system:"}

// Unknown is what a lookup that answers "no such user" does.
type Unknown int

const (
	UnknownDeny        Unknown = iota // fails the lookup (the default)
	UnknownGivenGroups                // decides on the supplied groups alone
)

var unknownNames = [...]string{UnknownDeny: "deny", UnknownGivenGroups: "given-groups"}

func (u Unknown) String() string {
	if int(u) >= 0 && int(u) < len(unknownNames) {
		return unknownNames[u]
	}
	return fmt.Sprintf("Unknown(%d)", int(u))
}

// ParseUnknown parses "deny" or "given-groups"; "" is UnknownDeny.
func ParseUnknown(s string) (Unknown, error) {
	if u := slices.Index(unknownNames[:], cmp.Or(s, unknownNames[UnknownDeny])); u >= 0 {
		return Unknown(u), nil
	}
	return 0, fmt.Errorf("unknownuser %q: want deny or given-groups", s)
}

// Outcome says how the resolver was consulted for an identity.
type Outcome string

const (
	OutcomeAsked        Outcome = "" // asked, or the mode needed no lookup
	OutcomeSkipped      Outcome = "skipped"
	OutcomeOverride     Outcome = "override"
	OutcomeUnknownGiven Outcome = "unknown-user-given-groups"
)

// Lookup says how the groups of an identity were found; the zero value is
// "the resolver was asked for the user's name".
type Lookup struct {
	Name    string // the name a mapping rule gave; "" when none did
	Rule    int    // that mapping rule, from 1
	Outcome Outcome
	Detail  string // the skip prefix, or the resolver's "no such user" answer
}

// String renders the lookup for people and audit records; "" for the plain case.
func (l Lookup) String() string {
	var parts []string
	if l.Name != "" {
		parts = append(parts, fmt.Sprintf("directory name %q (mapping rule %d)", l.Name, l.Rule))
	}
	switch l.Outcome {
	case OutcomeSkipped:
		parts = append(parts, fmt.Sprintf("not looked up (skip %q): the given groups only", l.Detail))
	case OutcomeOverride:
		parts = append(parts, "static override, the resolver was not asked")
	case OutcomeUnknownGiven:
		parts = append(parts, "the resolver does not know the user; decided on the given groups alone (unknownuser given-groups)")
	}
	return strings.Join(parts, "; ")
}

// MapRule is one name-mapping rule: a name the whole of Pattern matches is
// looked up as Replacement, with $1, ${name} and so on expanded as by
// regexp.Regexp.Expand.
type MapRule struct {
	Pattern     *regexp.Regexp
	Replacement string
}

// NewMapRule compiles pattern, anchored at both ends, with replacement.
func NewMapRule(pattern, replacement string) (MapRule, error) {
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return MapRule{}, fmt.Errorf("pattern %q: %v", pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return MapRule{Pattern: re, Replacement: replacement}, nil
}

// Policy is a partition's lookup policy. The zero value looks everyone up
// under their own name and denies on "no such user".
type Policy struct {
	Skip      []string // name prefixes never looked up
	Unknown   Unknown
	Mapping   []MapRule           // tried in order: the first rule that matches gives the directory name
	Overrides map[string][]string // authenticated name -> the groups that replace the resolver's
}

// DirectoryName returns the name the resolver is asked for user and the rule
// (from 1) that gave it, 0 when none matched; an invalid mapped name is an error.
func (p *Policy) DirectoryName(user string) (string, int, error) {
	for i, r := range p.Mapping {
		m := r.Pattern.FindStringSubmatchIndex(user)
		if m == nil {
			continue
		}
		name := string(r.Pattern.ExpandString(nil, r.Replacement, user, m))
		if err := acl.ValidName(name); err != nil {
			return "", i + 1, fmt.Errorf("mapping rule %d turned %q into an invalid name: %w", i+1, user, err)
		}
		return name, i + 1, nil
	}
	return user, 0, nil
}

// Skipped returns the Skip prefix user starts with, if any.
func (p *Policy) Skipped(user string) (string, bool) {
	if i := slices.IndexFunc(p.Skip, func(s string) bool { return strings.HasPrefix(user, s) }); i >= 0 {
		return p.Skip[i], true
	}
	return "", false
}

// Complete returns the identity of user under the policy, combining the
// supplied groups with r's as mode says; a nil r is an error only when it
// is needed. A nil p is the zero Policy.
func (p *Policy) Complete(ctx context.Context, mode Mode, r Resolver, user string, groups []string) (Info, error) {
	if p == nil {
		p = &Policy{}
	}
	if mode == ModeGiven && len(groups) > 0 {
		return Given(user, groups), nil
	}
	var resolved Info
	var lookup Lookup
	if gs, ok := p.Overrides[user]; ok {
		resolved, lookup.Outcome = newInfo(user, slices.Clone(gs), SourceOverride), OutcomeOverride
	} else if prefix, ok := p.Skipped(user); ok {
		in := Given(user, groups)
		in.Lookup = Lookup{Outcome: OutcomeSkipped, Detail: prefix}
		return in, nil
	} else {
		name, rule, err := p.DirectoryName(user)
		if err != nil {
			return Info{}, err
		}
		if rule > 0 {
			lookup.Name, lookup.Rule = name, rule
		}
		if r == nil {
			return Info{}, fmt.Errorf("groups of %q: no resolver configured", name)
		}
		resolved, err = r.Resolve(ctx, name)
		switch {
		case p.Unknown == UnknownGivenGroups && errors.Is(err, ErrUnknownUser):
			resolved, mode = Info{}, ModeMerge // the given groups alone
			lookup.Outcome, lookup.Detail = OutcomeUnknownGiven, err.Error()
		case err != nil:
			return Info{}, err
		}
	}
	in := resolved
	if mode == ModeMerge {
		in = Given(user, groups)
		in.add(resolved.Groups, resolved.SourceOf)
	}
	in.User, in.Lookup = user, lookup
	return in, nil
}
