package impact

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

// The shortcut for named users without groups gives what placing each
// one gives, on random rules and ACLs.
func TestPlacementShortcut(t *testing.T) {
	users := []string{"alice", "bob", "carol", "dan"}
	groups := []string{"dev", "ops"}
	r := rand.New(rand.NewPCG(1, 2))
	acl := func() string {
		var us, gs []string
		if r.IntN(6) == 0 {
			return `"*"`
		}
		for _, u := range users {
			if r.IntN(3) == 0 {
				us = append(us, u)
			}
		}
		for _, g := range groups {
			if r.IntN(3) == 0 {
				gs = append(gs, g)
			}
		}
		return fmt.Sprintf("%q", strings.Join(us, ",")+" "+strings.Join(gs, ","))
	}
	filter := func() string {
		switch r.IntN(5) {
		case 0:
			return ""
		case 1:
			return fmt.Sprintf("        filter:\n          users: [%s]\n", users[r.IntN(len(users))])
		case 2:
			return fmt.Sprintf("        filter:\n          type: deny\n          users: [%s]\n", users[r.IntN(len(users))])
		case 3:
			return fmt.Sprintf("        filter:\n          groups: [%s]\n", groups[r.IntN(len(groups))])
		}
		return "        filter:\n          type: deny\n          groups: [dev]\n"
	}
	gen := func() string {
		var b strings.Builder
		b.WriteString("partitions:\n  - name: default\n    placementrules:\n")
		for range 1 + r.IntN(3) {
			switch r.IntN(4) {
			case 0:
				fmt.Fprintf(&b, "      - name: fixed\n        value: root.%s\n", []string{"a", "b.x", "c"}[r.IntN(3)])
			case 1:
				b.WriteString("      - name: tag\n        value: namespace\n        create: true\n")
			case 2:
				b.WriteString("      - name: user\n        create: true\n")
			default:
				b.WriteString("      - name: provided\n")
			}
			b.WriteString(filter())
		}
		fmt.Fprintf(&b, "    queues:\n      - name: root\n        submitacl: %s\n        queues:\n", acl())
		for _, q := range []string{"a", "c", "default"} {
			if q == "default" && r.IntN(3) == 0 {
				continue
			}
			fmt.Fprintf(&b, "          - name: %s\n            submitacl: %s\n", q, acl())
		}
		fmt.Fprintf(&b, "          - name: b\n            parent: true\n            submitacl: %s\n            queues:\n              - name: x\n                adminacl: %s\n", acl(), acl())
		return b.String()
	}
	used := 0
	for i := range 300 {
		oldSrc, newSrc := gen(), gen()
		co, err := config.Parse("old.yaml", []byte(oldSrc))
		if err != nil {
			continue // a rule naming a queue that does not exist
		}
		cn, err := config.Parse("new.yaml", []byte(newSrc))
		if err != nil {
			continue
		}
		tags := map[string]string{}
		if i%2 == 0 {
			tags["namespace"] = "a"
		}
		opts := Options{Tags: tags, Subjects: []Subject{{User: "erin"}}}
		fast := DiffConfigs(co, cn, opts)
		noShortcut = true
		slow := DiffConfigs(co, cn, opts)
		noShortcut = false
		if !reflect.DeepEqual(fast, slow) {
			fj, _ := json.MarshalIndent(fast.Partitions, "", " ")
			sj, _ := json.MarshalIndent(slow.Partitions, "", " ")
			t.Fatalf("shortcut differs:\n%s\n%s\nfast %s\nslow %s", oldSrc, newSrc, fj, sj)
		}
		used++
	}
	if used < 50 {
		t.Fatalf("only %d valid pairs", used)
	}
}
