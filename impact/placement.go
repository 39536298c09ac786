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
	// Placed is false when the request is rejected.
	Placed bool `json:"placed"`
	// Queue is the queue it is placed in ("" when rejected). For a member
	// of a group, a user rule's part is shown as <user>.
	Queue string `json:"queue,omitempty"`
	// Create is true when the queue does not exist and would be created.
	Create bool `json:"create,omitempty"`
	// Rule is the rule that placed or failed, or the root.default
	// fallback.
	Rule string `json:"rule"`
	// Reason says why, in one sentence.
	Reason string `json:"reason"`
}

// String renders the placement: the queue, "(created)" after a queue to
// create, or "rejected".
func (p Placement) String() string {
	switch {
	case !p.Placed:
		return "rejected"
	case p.Create:
		return p.Queue + " (created)"
	}
	return p.Queue
}

// PlacementChange is a subject whose placement differs: it is placed in
// another queue, or placed under one configuration and rejected under
// the other.
type PlacementChange struct {
	Kind Kind `json:"kind"`
	// Name is the user or group name, "*" for everyone.
	Name string `json:"name"`
	// Groups are a given subject's groups.
	Groups []string  `json:"groups,omitempty"`
	Old    Placement `json:"old"`
	New    Placement `json:"new"`
}

// Subject renders who the change is about, as Change.Subject does.
func (c PlacementChange) Subject() string {
	return Change{Kind: c.Kind, Name: c.Name, Groups: c.Groups}.Subject()
}

// RulesFunc returns a partition's placement rules, nil when there is no
// such partition.
type RulesFunc func(partition string) *placement.Rules

// RulesOf returns the placement rules of c's partitions (the implicit
// provided rule where a partition configures none).
func RulesOf(c *config.Config) RulesFunc {
	return func(name string) *placement.Rules {
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
}

// DiffConfigs is Diff of two configurations: their compiled policies,
// and where a request that names no queue is placed by each one's
// placement rules. Either may be nil, meaning no partitions.
func DiffConfigs(old, new *config.Config, opts Options) *Result {
	opts.OldRules, opts.NewRules = RulesOf(old), RulesOf(new)
	var so, sn *policy.Snapshot
	if old != nil {
		so = old.Snapshot
	}
	if new != nil {
		sn = new.Snapshot
	}
	return Diff(so, sn, opts)
}

// memberName is the user name a member of a group is placed as: a name
// no rule or ACL is expected to single out. A user rule's part made of
// it is shown as <user>.
const memberName = "usher-diff-member"

// diffPlacement places a request that names no queue (with the given
// tags) for every key, under the old and the new rules, and returns the
// keys whose placement differs. It costs keys × rules: the rules look up
// queues by name, never walk the tree.
func diffPlacement(po, pn *policy.CompiledPartition, ro, rn *placement.Rules, keys []keyInfo, tags map[string]string) []PlacementChange {
	// Users named only by a filter are compared too.
	named := map[string]bool{}
	for _, k := range keys {
		if k.kind == User || k.kind == Group {
			named[string(k.kind)+" "+k.name] = true
		}
	}
	for _, rs := range []*placement.Rules{ro, rn} {
		us, gs := rs.Names()
		for _, u := range us {
			if !named["user "+u] {
				named["user "+u] = true
				keys = append(keys, keyInfo{kind: User, name: u})
			}
		}
		for _, g := range gs {
			if !named["group "+g] {
				named["group "+g] = true
				keys = append(keys, keyInfo{kind: Group, name: g})
			}
		}
	}
	out := []PlacementChange{}
	memberPart := "." + memberName
	place := func(rs *placement.Rules, cp *policy.CompiledPartition, sub *acl.Subject) Placement {
		r := rs.Place(cp, placement.Request{Subject: sub, Tags: tags})
		p := Placement{Placed: r.Placed, Queue: r.Queue, Create: r.Create, Rule: rs.Describe(r.Rule), Reason: r.Reason()}
		if strings.Contains(p.Queue, memberPart) {
			p.Queue = strings.ReplaceAll(p.Queue, memberPart, ".<user>")
			p.Reason = strings.ReplaceAll(p.Reason, memberPart, ".<user>")
		}
		return p
	}
	for _, k := range keys {
		var sub *acl.Subject
		c := PlacementChange{Kind: k.kind, Name: k.name}
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
			c.Groups = k.given.Groups
		}
		c.Old, c.New = place(ro, po, sub), place(rn, pn, sub)
		if c.Old.Placed != c.New.Placed || c.Old.Queue != c.New.Queue {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b PlacementChange) int {
		if c := cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)); c != 0 {
			return c
		}
		if a.Kind == GivenSubject {
			return 0 // as given
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}
