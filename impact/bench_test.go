package impact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/hack/queuegen"
	"github.com/usherhq/usher/impact"
)

// generateYAML is config's BenchmarkLoad10kQueues generator (root, 10
// teams per department, 9 leaves per team; entries ACL entries, half users
// and half groups), with one addition: in a changed configuration every
// hundredth queue names a different user and a different group, so the
// diff has about 200 gains and 200 losses spread over the tree. Three
// placement rules (provided; a user queue created under root.dept0 for
// one group; a fixed leaf) make the diff place every named user and group
// twice; in the changed configuration the user rule is for another group.
func generateYAML(queues, entries int, changed bool) []byte {
	var b strings.Builder
	b.WriteString("partitions:\n  - name: default\n")
	filterGroup := "group0-0"
	if changed {
		filterGroup = "group1-0"
	}
	fmt.Fprintf(&b, `    placementrules:
      - name: provided
      - name: user
        create: true
        filter:
          groups: [%s]
        parent:
          name: fixed
          value: root.dept0
      - name: fixed
        value: root.dept1.team0.q0
`, filterGroup)
	b.WriteString("    queues:\n")
	b.WriteString(queuegen.Queues(queues, entries, func(n int, users, groups []string) {
		if changed && n%100 == 0 {
			users[0], groups[0] = fmt.Sprintf("new-user%d", n), fmt.Sprintf("new-group%d", n)
		}
	}))
	return []byte(b.String())
}

func generated(tb testing.TB, changed bool) *config.Config {
	tb.Helper()
	c, err := config.Parse("gen.yaml", generateYAML(10000, 100000, changed))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkDiff10kQueues compares two configurations of 10,000 queues and
// 100,000 ACL entries each: identical, then with a change on every
// hundredth queue, then with a change on root that reaches every queue.
// Placement is compared too: every named user and group (about 50,000
// users and 2,500 groups) is placed by both configurations' rules.
func BenchmarkDiff10kQueues(b *testing.B) {
	old, changed := generated(b, false), generated(b, true)
	cases := []struct {
		name string
		new  *config.Config
	}{{"identical", old}, {"100 queues changed", changed}}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				impact.DiffConfigs(old, c.new, impact.Options{})
			}
		})
	}
}

func TestGeneratedDiff(t *testing.T) {
	old, changed := generated(t, false), generated(t, true)
	if r := impact.DiffConfigs(old, old, impact.Options{}); r.Changed() {
		t.Fatalf("identical: %d gained, %d lost, %d placements", r.Gained, r.Lost, r.Placements)
	}
	r := impact.DiffConfigs(old, changed, impact.Options{})
	// Queues 0, 100, …, 9900 each swap a user and a group, in their submit
	// ACLs. Users are unique to a queue: 100 gains and 100 losses. The new
	// groups are too (100 gains); an old group is lost only where no
	// ancestor names it as well (groups repeat every 500 queues).
	count := map[string]int{}
	for _, q := range r.Partitions[0].Queues {
		for _, c := range q.Changes {
			count[fmt.Sprintf("%s %v %s", c.Kind, c.Gained, c.Right)]++
		}
	}
	if count["user true submit"] != 100 || count["user false submit"] != 100 || count["group true submit"] != 100 ||
		count["group false submit"] < 50 || count["group false submit"] > 100 || len(count) != 4 {
		t.Fatalf("%v", count)
	}
	// Placement: root's swapped user and group now reach (or no longer
	// reach) the fixed leaf; the user rule moves from group0-0 to
	// group1-0, whose members are allowed on root.dept0 (groups repeat
	// every 500 queues).
	var moved []string
	for _, c := range r.Partitions[0].Placement {
		moved = append(moved, fmt.Sprintf("%s: %s -> %s", c.Subject(), c.Old, c.New))
	}
	if got, want := strings.Join(moved, "\n"), `user new-user0: rejected -> root.dept1.team0.q0
user user0-0: root.dept1.team0.q0 -> rejected
group group0-0: root.dept0.<user> (created) -> rejected
group group1-0: rejected -> root.dept0.<user> (created)
group new-group0: rejected -> root.dept1.team0.q0`; got != want || r.Placements != 5 {
		t.Fatalf("placement:\n%s\nwant\n%s", got, want)
	}
	// Root's change reaches all 10,000 queues.
	for _, c := range r.Partitions[0].Queues[0].Changes {
		if c.Queues != 10000 {
			t.Fatalf("root: %+v", c)
		}
	}
}
