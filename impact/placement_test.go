package impact_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
)

func cfg(t testing.TB, src string) *config.Config {
	t.Helper()
	c, err := config.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return c
}

// placements renders a result's placement sections as
// "partition subject: old -> new" lines.
func placements(r *impact.Result) []string {
	var out []string
	for _, p := range r.Partitions {
		for _, c := range p.Placement {
			out = append(out, fmt.Sprintf("%s %s: %s -> %s", p.Name, c.Subject(), c.Old, c.New))
		}
	}
	return out
}

// placeQueues is a partition's queues: root.default open to alice and
// the dev group, a leaf root.ml for alice, and root.users, a parent open
// to staff, where user queues are created.
const placeQueues = `
    queues:
      - name: root
        queues:
          - name: default
            submitacl: "alice dev"
          - name: ml
            submitacl: alice
          - name: users
            parent: true
            submitacl: " staff"
`

// devUsers is placeQueues with root.users open to dev too.
var devUsers = strings.Replace(placeQueues, `submitacl: " staff"`, `submitacl: " staff,dev"`, 1)

func TestDiffPlacement(t *testing.T) {
	head := "partitions:\n  - name: default\n"
	userRule := `    placementrules:
      - name: user
        create: true
        filter:
          groups: [%s]
        parent:
          name: fixed
          value: root.users
`
	// A user's own queue, not created: only where it exists.
	ownRule := `    placementrules:
      - name: user
        parent:
          name: fixed
          value: root.users
`
	withAlice := strings.Replace(placeQueues, `submitacl: " staff"`, "submitacl: \" staff\"\n            queues:\n              - name: alice\n                submitacl: alice", 1)
	cases := []struct {
		name     string
		old, new string
		subjects []impact.Subject
		tags     map[string]string
		want     []string
	}{{
		// No rules: the implicit provided rule never places a request
		// that names no queue, so everyone falls to root.default.
		name:     "a rule added",
		old:      head + placeQueues,
		new:      head + fmt.Sprintf(userRule, "staff") + placeQueues,
		subjects: []impact.Subject{{User: "carol", Groups: []string{"staff"}}, {User: "dan"}},
		want: []string{
			"default group staff: rejected -> root.users.<user> (created)",
			"default carol (groups staff): rejected -> root.users.carol (created)",
		},
	}, {
		name:     "a rule's filter changed",
		old:      head + fmt.Sprintf(userRule, "staff") + devUsers,
		new:      head + fmt.Sprintf(userRule, "staff,dev") + devUsers,
		subjects: []impact.Subject{{User: "erin", Groups: []string{"dev"}}},
		want: []string{
			"default group dev: root.default -> root.users.<user> (created)",
			"default erin (groups dev): root.default -> root.users.erin (created)",
		},
	}, {
		// The filter lets dev through, but root.users is open to staff
		// only: the rule is passed over and dev still lands in
		// root.default.
		name: "a rule's filter changed, the ACL stops it",
		old:  head + fmt.Sprintf(userRule, "staff") + placeQueues,
		new:  head + fmt.Sprintf(userRule, "staff,dev") + placeQueues,
	}, {
		name: "a queue removed: the user falls to root.default",
		old:  head + ownRule + withAlice,
		new:  head + ownRule + placeQueues,
		want: []string{
			"default user alice: root.users.alice -> root.default",
		},
	}, {
		name: "rejected -> placed: root.default opens to everyone",
		old:  head + placeQueues,
		new:  head + strings.Replace(placeQueues, `submitacl: "alice dev"`, `submitacl: "*"`, 1),
		want: []string{
			"default everyone (*): rejected -> root.default",
			"default group staff: rejected -> root.default",
		},
	}, {
		name: "placed -> rejected: root.default removed",
		old:  head + placeQueues,
		new:  head + strings.Replace(placeQueues, "          - name: default\n            submitacl: \"alice dev\"\n", "", 1),
		want: []string{
			"default user alice: root.default -> rejected",
			"default group dev: root.default -> rejected",
		},
	}, {
		name: "a tag rule, with the tags given",
		old:  head + placeQueues,
		new: head + `    placementrules:
      - name: tag
        value: namespace
` + placeQueues,
		tags: map[string]string{"namespace": "ml"},
		want: []string{
			"default user alice: root.default -> root.ml",
		},
	}, {
		name: "a tag rule, no tags given: nothing changes",
		old:  head + placeQueues,
		new: head + `    placementrules:
      - name: tag
        value: namespace
` + placeQueues,
	}, {
		// A user named only in a filter is compared too.
		name: "a user named in a filter only",
		old:  head + placeQueues,
		new: head + `    placementrules:
      - name: fixed
        value: root.ml
        filter:
          type: deny
          users: [zed]
` + strings.Replace(placeQueues, "submitacl: alice\n", "submitacl: \"*\"\n", 1),
		want: []string{
			"default everyone (*): rejected -> root.ml",
			"default user alice: root.default -> root.ml",
			"default group dev: root.default -> root.ml",
			"default group staff: rejected -> root.ml",
		},
	}, {
		name: "identical",
		old:  head + fmt.Sprintf(userRule, "staff") + placeQueues,
		new:  head + fmt.Sprintf(userRule, "staff") + placeQueues,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := impact.DiffConfigs(cfg(t, tc.old), cfg(t, tc.new), impact.Options{Subjects: tc.subjects, Tags: tc.tags})
			got := placements(r)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if r.Placements != len(tc.want) || r.Changed() != (r.Gained+r.Lost+len(tc.want) > 0) {
				t.Fatalf("placements %d, changed %v", r.Placements, r.Changed())
			}
		})
	}
}

// Diff without rules compares rights only; a partition in one file only
// has no placement section (its queue changes say it all).
func TestDiffPlacementScope(t *testing.T) {
	old := cfg(t, "partitions:\n  - name: default\n"+placeQueues)
	new := cfg(t, "partitions:\n  - name: default\n    placementrules:\n      - name: fixed\n        value: root.ml\n"+placeQueues+
		"  - name: other\n"+placeQueues)
	if r := impact.Diff(old.Snapshot, new.Snapshot, impact.Options{}); r.Placements != 0 || len(placements(r)) != 0 {
		t.Fatalf("rights only: %v", placements(r))
	}
	r := impact.DiffConfigs(old, new, impact.Options{})
	for _, p := range r.Partitions {
		if p.Name == "other" && len(p.Placement) != 0 {
			t.Fatalf("new partition has a placement section: %+v", p.Placement)
		}
	}
	if got := placements(r); len(got) != 1 || got[0] != "default user alice: root.default -> root.ml" {
		t.Fatalf("%v", got)
	}
	// JSON: a placement array beside queues, with both sides.
	b, err := json.Marshal(r.Partitions[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := `"placement":[{"kind":"user","name":"alice","old":{"placed":true,"queue":"root.default","rule":"the root.default fallback","reason":`; !strings.Contains(string(b), want) {
		t.Fatalf("%s\nwant %s", b, want)
	}
	// A configuration that changes nothing is not a change, nil either side is no partitions.
	if r := impact.DiffConfigs(new, new, impact.Options{}); r.Changed() {
		t.Fatalf("identical: %v", placements(r))
	}
	if r := impact.DiffConfigs(nil, new, impact.Options{}); r.Placements != 0 {
		t.Fatalf("first load: %v", placements(r))
	}
}
