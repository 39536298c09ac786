package decision

import "strings"

// TreeLabel draws queue i of a depth-first list as a branch of a tree
// ("│   ├── batch"), for usher access and kubectl usher queues.
func TreeLabel(qs []QueueRights, i int) string {
	q := qs[i].Queue
	d := strings.Count(q, ".")
	var b strings.Builder
	for level := 1; level <= d; level++ {
		// By whether level is q's own and whether a sibling follows at level.
		b.WriteString(branch[[2]bool{level == d, laterSibling(qs, i, level)}])
	}
	return b.String() + q[strings.LastIndexByte(q, '.')+1:]
}

var branch = map[[2]bool]string{{false, false}: "    ", {false, true}: "│   ", {true, false}: "└── ", {true, true}: "├── "}

// laterSibling reports whether the ancestor of qs[i] at depth level (or
// qs[i] itself) has a sibling after it.
func laterSibling(qs []QueueRights, i, level int) bool {
	for _, q := range qs[i+1:] {
		switch d := strings.Count(q.Queue, "."); {
		case d < level:
			return false
		case d == level:
			return true
		}
	}
	return false
}
