package placement

import (
	"strings"

	"github.com/usherhq/usher/policy"
)

// Check validates the rules against the queues of cp as YuniKorn's
// validator does: the fixed part of each rule chain must name a leaf
// queue when nothing follows it, a parent when a rule follows, and exist
// unless the rule creates queues. Every problem is an error.
func (rs *Rules) Check(cp *policy.CompiledPartition) []Problem {
	var out []Problem
	for i, r := range rs.rules {
		var chain []*rule
		for c := r; c != nil; c = c.parent {
			chain = append([]*rule{c}, chain...)
		}
		path, dynamic, depth := "", false, -1
		for j, c := range chain {
			if c.kind != Fixed {
				dynamic = true
				break
			}
			if c.qualified {
				path = c.value
			} else {
				if path == "" {
					path = "root"
				}
				path += "." + c.value
			}
			depth = len(chain) - 1 - j
		}
		if depth < 0 || !strings.HasPrefix(path, "root") {
			continue
		}
		if msg := checkPath(cp, path, r.create, dynamic); msg != "" {
			out = append(out, Problem{Rule: i, Depth: depth, Field: "value", Entry: -1, Msg: msg})
		}
	}
	return out
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
