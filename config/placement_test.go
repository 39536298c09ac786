package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/placement"
)

const placementQueues = `
    queues:
      - name: root
        queues:
          - name: default
            submitacl: "*"
          - name: users
            parent: true
            submitacl: "*"
          - name: leafy
            submitacl: "*"
`

func TestPlacementRulesParsed(t *testing.T) {
	c := mustParse(t, `
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
        filter:
          type: deny
          users: [mallory, eve]
        parent:
          name: fixed
          value: root.users
      - name: User
        create: true
        parent:
          name: fixed
          value: users
`+placementQueues)
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings: %v", diagStrings(c.Warnings))
	}
	rs := c.Partitions[0].PlacementRules()
	if rs.Len() != 2 || rs.IsImplicit() {
		t.Fatalf("rules: %d implicit %v", rs.Len(), rs.IsImplicit())
	}
	if got := rs.Describe(0); got != `tag "namespace" create filter(deny users mallory,eve) under (fixed "root.users")` {
		t.Fatalf("rule 1: %s", got)
	}
	cp, _ := c.Snapshot.Partition("default")
	res := rs.Place(cp, placement.Request{Subject: acl.NewSubject("eve", nil), Tags: map[string]string{"namespace": "spark"}})
	if !res.Placed || res.Queue != "root.users.eve" || res.Rule != 1 {
		t.Fatalf("eve: %+v", res)
	}
}

func TestNoPlacementRulesIsImplicitProvided(t *testing.T) {
	c := mustParse(t, "partitions:\n  - name: default\n"+placementQueues)
	if rs := c.Partitions[0].PlacementRules(); !rs.IsImplicit() {
		t.Fatal("a partition without placementrules must use the implicit provided rule")
	}
	c = mustParse(t, "partitions:\n  - name: default\n    placementrules: []\n"+placementQueues)
	if rs := c.Partitions[0].PlacementRules(); !rs.IsImplicit() {
		t.Fatal("an empty placementrules list must use the implicit provided rule")
	}
}

func TestPlacementRuleDiagnostics(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		want  string // FILE:LINE:COL: message fragment
		warn  bool
	}{
		{"unknown rule", `
      - name: nestedUserQueue`, "q.yaml:4:15: partition default: placement rule 1 name: unknown rule \"nestedUserQueue\"", false},
		{"unknown key", `
      - name: user
        creat: true`, `q.yaml:5:9: placement rule: unknown key "creat" (did you mean "create"?)`, false},
		{"create not a bool", `
      - name: user
        create: maybe`, "q.yaml:5:17: create must be true or false", false},
		{"rule without a name", `
      - value: x`, "q.yaml:4:9: placement rule without a name", false},
		{"fixed missing value in a parent", `
      - name: user
        parent:
          name: fixed`, "q.yaml:6:11: partition default: placement rule 1 parent value: a fixed rule needs a value", false},
		{"bad regexp at its entry", `
      - name: user
        filter:
          groups: ["(dev"]`, "q.yaml:6:20: partition default: placement rule 1 filter.groups: \"(dev\" is not a valid regular expression", false},
		{"dropped entry warns at its position", `
      - name: user
        create: true
        filter:
          users: [alice, 9lives]`, "q.yaml:7:26: warning: partition default: placement rule 1 filter.users: \"9lives\" is not a valid user name", true},
		{"Deny warns at the type", `
      - name: user
        create: true
        filter:
          type: Deny
          users: [bob]`, "q.yaml:7:17: warning: partition default: placement rule 1 filter.type: filter type \"Deny\": usher reads it as deny", true},
		{"fixed names a parent queue", `
      - name: fixed
        value: root.users`, "q.yaml:5:16: partition default: placement rule 1 value: root.users is a parent queue", false},
		{"fixed missing queue without create", `
      - name: fixed
        value: root.nope`, "q.yaml:5:16: partition default: placement rule 1 value: root.nope does not exist and create is false", false},
		{"dynamic rule under a leaf", `
      - name: user
        create: true
        parent:
          name: fixed
          value: root.leafy`, "q.yaml:8:18: partition default: placement rule 1 parent value: root.leafy is a leaf queue", false},
		{"not a list", `
        name: user`, "q.yaml:4:9: placementrules must be a list of rules", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "partitions:\n  - name: default\n    placementrules:" + tt.rules + "\n" + placementQueues
			c, err := config.Parse("q.yaml", []byte(src))
			var got []string
			if tt.warn {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				got = diagStrings(c.Warnings)
			} else {
				var ie *config.InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("want an error, got %v", err)
				}
				got = diagStrings(ie.Diagnostics)
			}
			for _, g := range got {
				if strings.HasPrefix(g, tt.want) || strings.Contains(g, tt.want) {
					return
				}
			}
			t.Fatalf("no diagnostic %q in\n%s", tt.want, strings.Join(got, "\n"))
		})
	}
}
