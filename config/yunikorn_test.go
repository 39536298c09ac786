package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/policy"
)

// YuniKorn's configuration validator (checkQueuesStructure) inserts a
// root queue above the top-level queues when there is more than one, or
// when the only one is not named root, and always makes root a parent.
func TestRootInserted(t *testing.T) {
	tests := []struct {
		name, src string
		queues    []string
		notes     []string
	}{
		{"one top queue not named root", `partitions:
  - name: default
    queues:
      - name: production
        submitacl: john,bob
`, []string{"root", "root.production"},
			[]string{`q.yaml:4:9: warning: partition default: the top-level queue is production, not root: YuniKorn inserts a root queue above it, so its path is root.production`}},
		{"several top queues", `partitions:
  - name: default
    queues:
      - name: test
        submitacl: "*"
      - name: product
        submitacl: " product"
`, []string{"root", "root.test", "root.product"},
			[]string{`q.yaml:4:9: warning: partition default: 2 top-level queues (test, product): YuniKorn inserts a root queue above them, so their paths start with root.`}},
		{"a second root among several is root.root", `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
      - name: other
        submitacl: "*"
`, []string{"root", "root.root", "root.other"},
			[]string{`q.yaml:4:9: warning: partition default: 2 top-level queues (root, other): YuniKorn inserts a root queue above them, so their paths start with root.`}},
		{"root in capitals is root", `partitions:
  - name: default
    queues:
      - name: ROOT
        submitacl: "*"
`, []string{"root"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.src)
			p, err := c.Snapshot.Partition("default")
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Queues(); !slices.Equal(got, tc.queues) {
				t.Errorf("queues = %v, want %v", got, tc.queues)
			}
			var notes []string
			for _, w := range diagStrings(c.Warnings) {
				if strings.Contains(w, "top-level") {
					notes = append(notes, w)
				}
			}
			if !slices.Equal(notes, tc.notes) {
				t.Errorf("notes:\n got %q\nwant %q", notes, tc.notes)
			}
		})
	}
	// The inserted root is a parent: the top-level queue is still a leaf
	// one may submit to, and root is not.
	c := mustParse(t, tests[0].src)
	p, _ := c.Snapshot.Partition("default")
	sub := acl.NewSubject("john", nil)
	if d, err := p.Decide("root.production", sub, policy.Submit); err != nil || !d.Allowed {
		t.Errorf("john on root.production: %v %v", d.Reason(), err)
	}
	if r, _ := p.Lookup("root"); r.Leaf() {
		t.Error("the inserted root is a leaf")
	}
}

// YuniKorn's queue names: ^[a-zA-Z0-9_:#/@-]{1,64}$.
func TestQueueNameCharacterSet(t *testing.T) {
	for _, name := range []string{"user@example", "team:ml", "a#1", "x/y", "a-b_c", strings.Repeat("q", 64)} {
		c := mustParse(t, `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: "`+name+`"
`)
		p, _ := c.Snapshot.Partition("default")
		if !p.Has("root." + strings.ToLower(name)) {
			t.Errorf("%q: not a queue: %v", name, p.Queues())
		}
	}
	for _, name := range []string{"a b", "a.b", "é", "a$", strings.Repeat("q", 65), "a,b"} {
		_, err := config.Parse("q.yaml", []byte(`partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: "`+name+`"
`))
		if err == nil || !strings.Contains(err.Error(), `q.yaml:6:19: queue name "`+name+`" is invalid: use 1 to 64 letters, digits, '_', ':', '#', '/', '@' or '-'`) {
			t.Errorf("%q: err = %v", name, err)
		}
	}
}

// YAML drops the leading space of an unquoted value, so "submitacl:  dev"
// (meant as the group dev) is the user dev. The value's column tells.
func TestLeadingSpaceTrap(t *testing.T) {
	c := mustParse(t, `partitions:
  - name: default
    adminacl:   ops
    queues:
      - name: root
        submitacl:  dev
        adminacl: admin
        queues:
          - name: a
            submitacl: " dev"
          - name: b
            submitacl:    alice,bob
          - name: c
            submitacl:  alice devs
`)
	got := diagStrings(c.Warnings)
	want := []string{
		`q.yaml:3:17: warning: partition adminacl "ops": the value starts 3 spaces after the colon, but YAML drops leading spaces, so this lists the user ops; for the group ops write it quoted: adminacl: " ops"`,
		`q.yaml:6:21: warning: submitacl "dev": the value starts 2 spaces after the colon, but YAML drops leading spaces, so this lists the user dev; for the group dev write it quoted: submitacl: " dev"`,
		`q.yaml:12:27: warning: submitacl "alice,bob": the value starts 4 spaces after the colon, but YAML drops leading spaces, so this lists the users alice,bob; for the groups alice,bob write it quoted: submitacl: " alice,bob"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
}

// YuniKorn's validator names a partition without a name (or with an empty
// one) default.
func TestPartitionWithoutNameIsDefault(t *testing.T) {
	for _, src := range []string{
		"partitions:\n  - queues: [{name: root, submitacl: '*'}]\n",
		"partitions:\n  - name: \"\"\n    queues: [{name: root, submitacl: '*'}]\n",
	} {
		c := mustParse(t, src)
		if _, err := c.Snapshot.Partition("default"); err != nil {
			t.Errorf("%q: %v", src, err)
		}
		if w := diagStrings(c.Warnings); len(w) != 1 || !strings.Contains(w[0], "partition without a name: YuniKorn names it default") {
			t.Errorf("%q: warnings %q", src, w)
		}
	}
	_, err := config.Parse("q.yaml", []byte("partitions:\n  - queues: [{name: root}]\n  - name: default\n    queues: [{name: root}]\n"))
	if err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("two default partitions: %v", err)
	}
}
