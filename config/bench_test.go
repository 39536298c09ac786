package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

// generateYAML writes a configuration of queues queues (root, 10 per
// department, 9 leaves per team) holding entries ACL entries, half users
// and half groups.
func generateYAML(queues, entries int) []byte {
	per := entries / queues
	var b strings.Builder
	b.WriteString("partitions:\n  - name: default\n    queues:\n")
	n := 0
	acl := func(indent string) {
		var users, groups []string
		for j := range per / 2 {
			users = append(users, fmt.Sprintf("user%d-%d", n, j))
			groups = append(groups, fmt.Sprintf("group%d-%d", n%500, j))
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
	return []byte(b.String())
}

// BenchmarkLoad10kQueues parses, validates, lints and compiles 10,000
// queues with 100,000 ACL entries.
func BenchmarkLoad10kQueues(b *testing.B) {
	data := generateYAML(10000, 100000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := config.Parse("gen.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Warnings) != 0 {
			b.Fatalf("warnings: %v", c.Warnings[0])
		}
	}
}

func TestGeneratedConfigIsValid(t *testing.T) {
	c, err := config.Parse("gen.yaml", generateYAML(10000, 100000))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Snapshot.Partition("default")
	if got := len(p.Queues()); got != 10000 {
		t.Fatalf("%d queues", got)
	}
}
