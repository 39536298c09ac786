package impact

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteText writes the result for people, like a diff (see Example).
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	if r.Old != "" || r.New != "" {
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", r.Old, r.New)
	}
	width := 0
	for _, p := range r.Partitions {
		for _, q := range p.Queues {
			for _, c := range q.Changes {
				width = max(width, len(c.Subject()))
			}
		}
		for _, c := range p.Placement {
			width = max(width, len(c.Subject()))
		}
	}
	width = min(width, 40)
	nq := 0
	for _, p := range r.Partitions {
		fmt.Fprintf(&b, "partition %s%s\n", p.Name, status(p.Status, "partition"))
		for _, q := range p.Queues {
			nq++
			fmt.Fprintf(&b, "  %s%s\n", q.Queue, status(q.Status, "queue"))
			for _, c := range q.Changes {
				line := fmt.Sprintf("%s   %-6s  %-*s  %s", c.sign(), c.Right, width, c.Subject(), scope(q, c))
				b.WriteString(strings.TrimRight(line, " "))
				b.WriteByte('\n')
			}
		}
		if len(p.Placement) > 0 {
			b.WriteString("  placement of a request that names no queue" + tagList(r.Tags) + "\n")
		}
		for _, c := range p.Placement {
			fmt.Fprintf(&b, "-   %-6s  %-*s  %s\n", "queue", width, c.Subject(), c.Old)
			fmt.Fprintf(&b, "+   %-6s  %-*s  %s\n", "queue", width, c.Subject(), c.New)
		}
	}
	switch {
	case r.Gained+r.Lost == 0 && r.Placements == 0:
		b.WriteString("no access changes\n")
	case r.Gained+r.Lost == 0:
		fmt.Fprintf(&b, "no access changes; %s changed\n", Plural(r.Placements, "placement"))
	default:
		fmt.Fprintf(&b, "%s gained, %s lost, starting in %s", Plural(r.Gained, "right"), Plural(r.Lost, "right"), Plural(nq, "queue"))
		if r.Placements > 0 {
			fmt.Fprintf(&b, "; %s changed", Plural(r.Placements, "placement"))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tagList renders tags as ", with tags k=v,k=v" in key order, "" for none.
func tagList(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		kv = append(kv, k+"="+tags[k])
	}
	return ", with tags " + strings.Join(kv, ",")
}

func status(s Status, what string) string {
	switch s {
	case Added:
		return " (new " + what + ")"
	case Removed:
		return " (" + what + " removed)"
	}
	return ""
}

// scope says where a change applies, when the queue has queues below it.
func scope(q QueueDiff, c Change) string {
	switch {
	case q.Below == 0:
		return ""
	case c.Queues == 1:
		return "this queue only, not below"
	case c.Queues == q.Below+1:
		return fmt.Sprintf("and all %s below", Plural(q.Below, "queue"))
	}
	return fmt.Sprintf("and %d of the %s below", c.Queues-1, Plural(q.Below, "queue"))
}

// Plural is "1 what" or "n whats".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
