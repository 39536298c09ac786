// Package queuegen writes the large generated configuration that the
// loading benchmarks, the impact diff benchmarks and usher-load's reload
// test share (docs/benchmarks.md): a root queue, departments of 10 teams,
// teams of 9 leaves, and a submit ACL on every queue, half users and half
// groups.
package queuegen

import (
	"fmt"
	"strings"
)

// Queues returns the queues: list of partition "default", the YAML of
// queues queues holding entries ACL entries in all, indented to sit under
// a partition's "queues:" key. Queue n's ACL names users userN-J and
// groups groupM-J (M is n modulo 500, so groups repeat across queues);
// edit, when not nil, may change queue n's lists before they are written.
func Queues(queues, entries int, edit func(n int, users, groups []string)) string {
	per := entries / queues
	var b strings.Builder
	n := 0
	acl := func(indent string) {
		users := make([]string, 0, per/2)
		groups := make([]string, 0, per/2)
		for j := range per / 2 {
			users = append(users, fmt.Sprintf("user%d-%d", n, j))
			groups = append(groups, fmt.Sprintf("group%d-%d", n%500, j))
		}
		if edit != nil {
			edit(n, users, groups)
		}
		fmt.Fprintf(&b, "%ssubmitacl: %s %s\n", indent, strings.Join(users, ","), strings.Join(groups, ","))
		n++
	}
	b.WriteString("      - name: root\n")
	acl("        ")
	b.WriteString("        queues:\n")
	for d := 0; n < queues; d++ {
		fmt.Fprintf(&b, "          - name: dept%d\n", d)
		acl("            ")
		b.WriteString("            queues:\n")
		for t := 0; t < 10 && n < queues; t++ {
			fmt.Fprintf(&b, "              - name: team%d\n", t)
			acl("                ")
			b.WriteString("                queues:\n")
			for q := 0; q < 9 && n < queues; q++ {
				fmt.Fprintf(&b, "                  - name: q%d\n", q)
				acl("                    ")
			}
		}
	}
	return b.String()
}

// Config is a whole configuration: partition "default" with the queues
// of Queues.
func Config(queues, entries int, edit func(n int, users, groups []string)) []byte {
	return []byte("partitions:\n  - name: default\n    queues:\n" + Queues(queues, entries, edit))
}
