package placement

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/policy"
)

// Check validates the rules against the queues of cp as YuniKorn's
// validator does: the fixed part of each rule chain must name a leaf
// queue when nothing follows it, a parent when a rule follows, and exist
// unless the rule creates queues; those problems are errors. Rules that
// can never place are warnings: under a fixed parent rule naming a queue
// that does not exist, without create; after a rule that places everyone.
func (rs *Rules) Check(cp *policy.CompiledPartition) []Problem {
	var out []Problem
	always, alwaysPath := -1, "" // the first rule that places every application
	for i, r := range rs.rules {
		if always >= 0 {
			out = append(out, Problem{Rule: i, Entry: -1, Warning: true, Msg: fmt.Sprintf(
				"never reached: placement rule %d before it places every application in %s (no filter, and everyone may submit there)", always+1, alwaysPath)})
		}
		var chain []*rule
		for c := r; c != nil; c = c.parent {
			chain = append([]*rule{c}, chain...)
		}
		path, dynamic, depth := "", false, -1
		var dead *Problem
		for j, c := range chain {
			if c.kind != Fixed {
				dynamic = true
				break
			}
			if c.qualified {
				path = c.value
			} else {
				path = cmp.Or(path, "root") + "." + c.value
			}
			depth = len(chain) - 1 - j
			if depth > 0 && !c.create && !cp.Has(path) && dead == nil {
				dead = &Problem{Rule: i, Depth: depth, Field: "value", Entry: -1, Warning: true, Msg: fmt.Sprintf(
					"never places: the parent rule's queue %s does not exist and the parent rule's create is false", path)}
			}
		}
		if depth < 0 || !strings.HasPrefix(path, "root") {
			continue
		}
		switch msg := checkPath(cp, path, r.create, dynamic); {
		case msg != "":
			out = append(out, Problem{Rule: i, Depth: depth, Field: "value", Entry: -1, Msg: msg})
		case dead != nil:
			out = append(out, *dead)
		case always < 0 && !dynamic && r.filter.empty && r.filter.allow && everyone(cp, path):
			always, alwaysPath = i, path
		}
	}
	return out
}

// everyone reports whether "*" may submit to the queue at path, or to
// its nearest existing ancestor where it would be created.
func everyone(cp *policy.CompiledPartition, path string) bool {
	for !cp.Has(path) {
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return false
		}
		path = path[:i]
	}
	ref, _ := cp.Lookup(path)
	return ref.Decide(acl.NewSubject("", nil), policy.Submit).Allowed
}

func checkPath(cp *policy.CompiledPartition, path string, create, dynamic bool) string {
	parts := strings.Split(path, ".")
	missing := path + " does not exist and create is false"
	if parts[0] != "root" {
		if create {
			return ""
		}
		return missing
	}
	prefix := "root"
	for _, part := range parts[1:] {
		next := prefix + "." + part
		if !cp.Has(next) {
			if ref, _ := cp.Lookup(prefix); ref.Leaf() {
				return path + " cannot be created: " + prefix + " is a leaf queue"
			}
			if !create {
				return missing
			}
			return ""
		}
		prefix = next
	}
	ref, _ := cp.Lookup(path)
	switch {
	case dynamic && ref.Leaf():
		return path + " is a leaf queue, but the rules under it make queues inside it: it must be a parent queue (parent: true)"
	case !dynamic && !ref.Leaf():
		return path + " is a parent queue: applications run in leaf queues only"
	}
	return ""
}
