package impact_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
)

const editsBase = `partitions:
  - name: default
    adminacl: root-admin
    placementrules:
      - name: provided
    queues:
      - name: root
        queues:
          - name: teamA
            adminacl: alice
            queues:
              - name: sub
                resources: {max: {memory: 1G}}
          - name: prod
            properties: {application.sort.policy: fifo}
`

// Edits names every change delegated administration decides, with the
// queue whose admins may make it: the settings usher does not read
// (resources, properties, placement rules) included, a subtree by its
// top, a queue's own settings by its parent's admins.
func TestEdits(t *testing.T) {
	cfg := func(src string) *config.Config {
		t.Helper()
		c, err := config.Parse("test.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		return c
	}
	old := cfg(editsBase)
	for _, tt := range []struct {
		name, from, to string
		want           []string // edit: admin queue
	}{
		{"nothing; layout only", "queues:\n", "queues:   \n", nil},
		{"a child of teamA", "              - name: sub\n", "              - name: new\n                queues: [{name: deeper}]\n              - name: sub\n",
			[]string{"added queue default/root.teama.new: root.teama"}},
		{"resources of sub", "memory: 1G", "memory: 2G", []string{"changes queue default/root.teama.sub: root.teama"}},
		{"properties of prod", "fifo", "fair", []string{"changes queue default/root.prod: root"}},
		{"teamA's own adminacl", "adminacl: alice", "adminacl: alice,bob", []string{"changes queue default/root.teama: root"}},
		{"teamA removed", "          - name: teamA\n            adminacl: alice\n            queues:\n              - name: sub\n                resources: {max: {memory: 1G}}\n", "",
			[]string{"removed queue default/root.teama: root"}},
		{"placement rules", "name: provided", "name: user", []string{"changes partition default: "}},
		{"partition adminacl", "adminacl: root-admin", "adminacl: bob", []string{"changes partition default: "}},
		{"admission settings", "", "admissionController:\n  enforceQueueACLs: true\n", []string{"changes the admission settings or the ConfigMap's other keys: "}},
		{"a partition", "", "  - name: gpu\n    queues: [{name: root}]\n", []string{"added partition gpu: "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := editsBase + tt.to
			if tt.from != "" {
				src = strings.Replace(editsBase, tt.from, tt.to, 1)
			}
			var got []string
			for _, e := range impact.Edits(old, cfg(src)) {
				got = append(got, fmt.Sprintf("%s: %s", e, e.Admin))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
