package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/usherhq/usher/internal/suggest"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// Suggest returns what to say after an error naming an unknown partition or
// queue, else "": the closest names and, for a path not starting with "root.",
// the queue YuniKorn's provided rule puts that marker in (root.ml_dot_training).
func (c *Config) Suggest(partition, queue string, err error) string {
	if c == nil || c.Snapshot == nil {
		return ""
	}
	switch {
	case errors.Is(err, policy.ErrUnknownPartition):
		names := c.Snapshot.Partitions()
		close := closest(strings.ToLower(partition), names, func(s string) string { return s })
		s := []string{"the partitions are " + strings.Join(names, ", ")}
		if len(close) > 0 {
			s = append([]string{"did you mean " + suggest.Or(close) + "?"}, s...)
		}
		return sentences(s)
	case errors.Is(err, policy.ErrUnknownQueue):
		cp, perr := c.Snapshot.Partition(partition)
		if perr != nil {
			return ""
		}
		return c.queueHint(cp, queue)
	}
	return ""
}

func (c *Config) queueHint(cp *policy.CompiledPartition, queue string) string {
	q := strings.ToLower(strings.TrimSpace(queue))
	var parts, exact []string
	qualified := strings.HasPrefix(q, policy.RootQueue+".") || q == policy.RootQueue
	want := q
	if !qualified {
		want = policy.RootQueue + "." + q
		if cp.Has(want) {
			exact = []string{want}
		}
	}
	close := closest(want, cp.Queues(), lastPart)
	close = slices.DeleteFunc(close, func(s string) bool { return slices.Contains(exact, s) })
	names := append(exact, close...)
	if len(names) > 0 {
		parts = append(parts, "did you mean "+suggest.Or(names[:min(len(names), 3)])+"?")
	}
	placed := policy.RootQueue + "." + strings.ReplaceAll(q, ".", placement.DotReplacement)
	// Said unless it is the first name suggested.
	if !qualified && q != "" && (len(names) == 0 || names[0] != placed) {
		implicit := !slices.ContainsFunc(c.Partitions, func(p Partition) bool {
			return strings.EqualFold(p.Name, cp.Name()) && p.Placement != nil
		})
		where := "which does not exist, so such a pod goes to root.default when that exists, or is rejected"
		if cp.Has(placed) {
			where = "which exists"
		}
		if implicit {
			parts = append(parts, fmt.Sprintf("as a pod's queue marker, YuniKorn's placement (the implicit provided rule) puts %q in %s, %s.", queue, placed, where))
		} else {
			parts = append(parts, fmt.Sprintf("as a pod's queue marker, %q goes through this partition's placementrules (a provided rule puts it in %s): usher place --queue %s shows where.", queue, placed, queue))
		}
	}
	return sentences(parts)
}

// sentences joins parts, each after the first starting with a capital.
func sentences(parts []string) string {
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, " ")
}

// lastPart is the last name of a queue path.
func lastPart(path string) string {
	return path[strings.LastIndexByte(path, '.')+1:]
}

// closest returns up to three of names nearest to want, nearest first:
// the same key, or an edit distance of at most a third of want's length.
func closest(want string, names []string, key func(string) string) []string {
	dist := map[string]int{}
	var out []string
	for _, n := range names {
		d := suggest.Distance(want, n)
		if key(n) == key(want) {
			d = min(d, 1)
		}
		if d <= min(max(len(want)/3, 1), 3) && n != want {
			dist[n] = d
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return dist[a] - dist[b] })
	return out[:min(len(out), 3)]
}
