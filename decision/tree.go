package decision

import "strings"

// TreeLabel draws queue i of a depth-first list as a branch of a tree
// ("│   ├── batch"), for usher access and kubectl usher queues.
func TreeLabel(qs []QueueRights, i int) string {
	q := qs[i].Queue
	name := q[strings.LastIndexByte(q, '.')+1:]
	d := strings.Count(q, ".")
	if d == 0 {
		return name
	}
	var b strings.Builder
	for level := 1; level < d; level++ {
		if laterSibling(qs, i, level) {
			b.WriteString("│   ")
		} else {
			b.WriteString("    ")
		}
	}
	if laterSibling(qs, i, d) {
		b.WriteString("├── ")
	} else {
		b.WriteString("└── ")
	}
	return b.String() + name
}

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
