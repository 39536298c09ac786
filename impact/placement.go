package impact

import (
	"cmp"
	"slices"
	"strings"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// Placement is where a request that names no queue goes under one
// configuration.
type Placement struct {
	Placed bool `json:"placed"` // false: rejected
	// Queue is where it is placed; for a member of a group, a user rule's
	// part is shown as <user>.
	Queue  string `json:"queue,omitempty"`
	Create bool   `json:"create,omitempty"` // the queue would be created
	Rule   string `json:"rule"`             // the rule that placed or failed
	Reason string `json:"reason"`
}

// String renders the queue, "(created)" after it, or "rejected".
func (p Placement) String() string {
	switch {
	case !p.Placed:
		return "rejected"
	case p.Create:
		return p.Queue + " (created)"
	}
	return p.Queue
}

// PlacementChange is a subject placed in another queue, or placed on one
// side and rejected on the other.
type PlacementChange struct {
	Kind   Kind      `json:"kind"`
	Name   string    `json:"name"` // "*" for everyone
	Groups []string  `json:"groups,omitempty"`
	Old    Placement `json:"old"`
	New    Placement `json:"new"`
}

// Subject renders who the change is about, as Change.Subject does.
func (c PlacementChange) Subject() string {
	return Change{Kind: c.Kind, Name: c.Name, Groups: c.Groups}.Subject()
}

// rulesOf returns the placement rules of c's partition name (the implicit
// provided rule where it configures none), nil when there is none.
func rulesOf(c *config.Config, name string) *placement.Rules {
	if c == nil {
		return nil
	}
	for i := range c.Partitions {
		if strings.EqualFold(c.Partitions[i].Name, name) {
			return c.Partitions[i].PlacementRules()
		}
	}
	return nil
}

// DiffConfigs compares the rights and the placement of two
// configurations; nil has no partitions.
func DiffConfigs(old, new *config.Config, opts Options) *Result {
	var so, sn *policy.Snapshot
	if old != nil {
		so = old.Snapshot
	}
	if new != nil {
		sn = new.Snapshot
	}
	return diff(so, sn, old, new, opts)
}

// memberName is the user name a member of a group is placed as: a name
// no rule or ACL is expected to single out. A user rule's part made of
// it is shown as <user>.
const memberName = "usher-diff-member"

// diffPlacement places a request naming no queue for every key under the
// old and the new rules and returns the keys placed differently.
func diffPlacement(po, pn *policy.CompiledPartition, ro, rn *placement.Rules, keys []keyInfo, tags map[string]string) []PlacementChange {
	if po == pn && ro == rn {
		return nil // the same partition and rules place everyone alike
	}
	// Users and groups named only by a filter are compared too.
	keys = withFilterNames(keys, ro, rn)
	out := []PlacementChange{}
	memberPart := "." + memberName
	// Only a change is rendered: the reasons cost allocations.
	render := func(rs *placement.Rules, r placement.Result, who string) Placement {
		p := Placement{Placed: r.Placed, Queue: r.Queue, Create: r.Create, Rule: rs.Describe(r.Rule), Reason: r.Reason()}
		p.Queue = strings.ReplaceAll(p.Queue, memberPart, ".<user>")
		p.Reason = strings.ReplaceAll(strings.ReplaceAll(p.Reason, memberPart, ".<user>"), memberName, who)
		return p
	}
	for _, k := range keys {
		var sub *acl.Subject
		switch k.kind {
		case Everyone:
			// Anyone no ACL or filter names, with no groups.
			sub = acl.NewSubject(memberName, nil)
		case User:
			sub = acl.NewSubject(k.name, nil)
		case Group:
			sub = acl.NewSubject(memberName, []string{k.name})
		case GivenSubject:
			sub = acl.NewSubject(k.given.User, k.given.Groups)
		}
		req := placement.Request{Subject: sub, Tags: tags}
		a, b := ro.Place(po, req), rn.Place(pn, req)
		if a.Placed == b.Placed && a.Queue == b.Queue {
			continue
		}
		who := "a member of " + k.name
		if k.kind == Everyone {
			who = "a user no ACL names"
		}
		c := PlacementChange{Kind: k.kind, Name: k.name, Old: render(ro, a, who), New: render(rn, b, who)}
		if k.given != nil {
			c.Groups = k.given.Groups
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b PlacementChange) int {
		byName := 0
		if a.Kind != GivenSubject { // given subjects stay as given
			byName = cmp.Compare(a.Name, b.Name)
		}
		return cmp.Or(cmp.Compare(slices.Index(kinds, a.Kind), slices.Index(kinds, b.Kind)), byName)
	})
	return out
}

// withFilterNames appends to keys the users and groups that the rules'
// filters name and no key does.
func withFilterNames(keys []keyInfo, rules ...*placement.Rules) []keyInfo {
	var fu, fg []string
	for _, rs := range rules {
		us, gs := rs.Names()
		fu, fg = append(fu, us...), append(fg, gs...)
	}
	if len(fu)+len(fg) == 0 {
		return keys
	}
	// The filters name few: look the keys up in them, not the other way.
	missing := map[Kind]map[string]bool{User: {}, Group: {}}
	for _, u := range fu {
		missing[User][u] = true
	}
	for _, g := range fg {
		missing[Group][g] = true
	}
	for _, k := range keys {
		delete(missing[k.kind], k.name)
	}
	add := func(kind Kind, names []string) {
		for _, n := range names {
			if missing[kind][n] {
				delete(missing[kind], n)
				keys = append(keys, keyInfo{kind: kind, name: n})
			}
		}
	}
	add(User, fu)
	add(Group, fg)
	return keys
}
