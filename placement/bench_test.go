package placement_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// realistic is a partition as a platform team runs it: 200 teams of 5
// queues each under root.teams (each with its own submit and admin ACL),
// a root.users parent for per-user queues, root.default, and the rules
// provided; tag namespace (create, not for contractors) under root.ns;
// user (create, for staff) under root.users.
func realistic(tb testing.TB) *config.Config {
	var b strings.Builder
	b.WriteString(`partitions:
  - name: default
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
        filter:
          type: deny
          groups: [contractors]
        parent:
          name: fixed
          value: root.ns
      - name: user
        create: true
        filter:
          groups: ["^staff-.*$"]
        parent:
          name: fixed
          value: root.users
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: default
            submitacl: " contractors"
          - name: users
            parent: true
            submitacl: " staff-eng"
          - name: ns
            parent: true
            submitacl: " ns-users"
          - name: teams
            queues:
`)
	for t := range 200 {
		fmt.Fprintf(&b, "              - name: team%d\n                adminacl: lead%d\n                queues:\n", t, t)
		for q := range 5 {
			fmt.Fprintf(&b, "                  - name: q%d\n                    submitacl: \"u%d-%d,v%d-%d g%d-%d\"\n", q, t, q, t, q, t, q)
		}
	}
	c, err := config.Parse("bench.yaml", []byte(b.String()))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

var sinkResult placement.Result

// BenchmarkPlace places one application: through the first rule (the
// queue it names), through the third after two fall-throughs (a per-user
// queue to create), and a rejection after every rule and root.default.
// The user is in 64 groups.
func BenchmarkPlace(b *testing.B) {
	c := realistic(b)
	cp, _ := c.Snapshot.Partition("default")
	rules := c.Partitions[0].PlacementRules()
	groups := make([]string, 64)
	for i := range groups {
		groups[i] = fmt.Sprintf("grp-%02d", i)
	}
	staff := append([]string{"g150-3"}, groups...)
	staff[len(staff)-1] = "staff-eng"
	cases := []struct {
		name string
		req  placement.Request
		want string
	}{
		{"provided", placement.Request{Subject: acl.NewSubject("carol", staff), Queue: "root.teams.team150.q3"}, "root.teams.team150.q3"},
		{"user-rule-create", placement.Request{Subject: acl.NewSubject("carol", append([]string{"contractors"}, staff...)), Tags: map[string]string{"namespace": "spark"}}, "root.users.carol"},
		{"rejected", placement.Request{Subject: acl.NewSubject("mallory", groups), Queue: "root.teams.team1.q1", Tags: map[string]string{"namespace": "spark"}}, ""},
	}
	for _, tc := range cases {
		if got := rules.Place(cp, tc.req); got.Queue != tc.want {
			b.Fatalf("%s: placed in %q, want %q: %s", tc.name, got.Queue, tc.want, got.Reason())
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkResult = rules.Place(cp, tc.req)
			}
		})
		b.Run(tc.name+"/explain", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkResult = rules.Explain(cp, tc.req)
			}
		})
	}
	// For scale: the plain ACL check on the same queue.
	sub := acl.NewSubject("carol", staff)
	b.Run("acl-check-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, _ := cp.Decide("root.teams.team150.q3", sub, policy.Submit)
			sinkResult.Decision = d
		}
	})
}
