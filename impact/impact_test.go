package impact_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/policy"
)

func snap(t testing.TB, src string) *policy.Snapshot {
	t.Helper()
	c, err := config.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return c.Snapshot
}

// lines renders a result as "partition/queue SIGN right subject queues"
// lines, one per change.
func lines(r *impact.Result) []string {
	var out []string
	for _, p := range r.Partitions {
		for _, q := range p.Queues {
			for _, c := range q.Changes {
				sign := "-"
				if c.Gained {
					sign = "+"
				}
				out = append(out, fmt.Sprintf("%s/%s %s%s %s %d", p.Name, q.Queue, sign, c.Right, c.Subject(), c.Queues))
			}
		}
	}
	return out
}

const base = `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: a
            submitacl: "alice dev"
            queues:
              - name: x
              - name: y
                submitacl: bob
          - name: b
            adminacl: " ops"
`

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		subjects []impact.Subject
		want     []string
	}{
		{
			name: "identical",
			old:  base, new: base,
		},
		{
			name: "gain through inheritance, not counted where held already",
			old:  base,
			new:  strings.Replace(base, `submitacl: "alice dev"`, `submitacl: "alice,bob dev"`, 1),
			// root.a.y granted bob already: the gain holds on a and x.
			want: []string{"default/root.a +submit user bob 2"},
		},
		{
			name: "loss through inheritance",
			old:  base,
			new:  strings.Replace(base, `submitacl: "alice dev"`, `submitacl: "alice"`, 1),
			want: []string{"default/root.a -submit group dev 3"},
		},
		{
			name: "admin ACL grants submit and admin",
			old:  base,
			new:  strings.Replace(base, `adminacl: " ops"`, `adminacl: "carol ops"`, 1),
			want: []string{"default/root.b +submit user carol 1", "default/root.b +admin user carol 1"},
		},
		{
			name: "partition admin ACL reaches every queue",
			old:  base,
			new:  strings.Replace(base, "  - name: default\n", "  - name: default\n    adminacl: \" platform\"\n", 1),
			want: []string{"default/root +submit group platform 5", "default/root +admin group platform 5"},
		},
		{
			name: "partition admin ACL loss, kept where a queue ACL grants",
			old:  strings.Replace(base, "  - name: default\n", "  - name: default\n    adminacl: \"alice\"\n", 1),
			new:  base,
			// alice keeps submit on root.a and below through its submitacl.
			want: []string{"default/root -submit user alice 2", "default/root -admin user alice 5"},
		},
		{
			name: "queue added",
			old:  base,
			new:  base + "          - name: c\n            submitacl: \"erin\"\n",
			want: []string{"default/root.c +submit user erin 1"},
		},
		{
			name: "queue removed takes inherited rights with it",
			old:  base,
			new:  strings.Replace(base, "              - name: x\n", "", 1),
			want: []string{"default/root.a.x -submit user alice 1", "default/root.a.x -submit group dev 1"},
		},
		{
			name: "wildcard added is one change for everyone",
			old:  base,
			new:  strings.Replace(base, `submitacl: " "`, `submitacl: "*"`, 1),
			want: []string{"default/root +submit everyone (*) 5"},
		},
		{
			name: "wildcard replaced by names: everyone loses, the names keep",
			old:  strings.Replace(base, `submitacl: bob`, `submitacl: "*"`, 1),
			new:  base,
			want: []string{"default/root.a.y -submit everyone (*) 1"},
		},
		{
			name: "user and group of the same name are different subjects",
			old:  strings.Replace(base, `submitacl: bob`, `submitacl: "dave"`, 1),
			new:  strings.Replace(base, `submitacl: bob`, `submitacl: " dave"`, 1),
			want: []string{"default/root.a.y -submit user dave 1", "default/root.a.y +submit group dave 1"},
		},
		{
			name: "given subjects are judged with their groups and the wildcard",
			old:  base,
			new: strings.Replace(strings.Replace(base, `submitacl: "alice dev"`, `submitacl: "alice"`, 1),
				`submitacl: bob`, `submitacl: "*"`, 1),
			subjects: []impact.Subject{{User: "sue", Groups: []string{"dev", "ops"}}, {User: "alice"}},
			want: []string{
				"default/root.a -submit group dev 2",
				"default/root.a -submit sue (groups dev,ops) 2",
				"default/root.a.y +submit everyone (*) 1",
			},
		},
		{
			name: "partition added and removed",
			old:  base,
			new:  strings.Replace(base, "name: default", "name: gpu", 1),
			want: []string{
				"default/root.a -submit user alice 3", "default/root.a -submit group dev 3", "default/root.a.y -submit user bob 1",
				"default/root.b -submit group ops 1", "default/root.b -admin group ops 1",
				"gpu/root.a +submit user alice 3", "gpu/root.a +submit group dev 3", "gpu/root.a.y +submit user bob 1",
				"gpu/root.b +submit group ops 1", "gpu/root.b +admin group ops 1",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := impact.Diff(snap(t, tc.old), snap(t, tc.new), impact.Options{Subjects: tc.subjects})
			got := lines(r)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if r.Changed() != (len(tc.want) > 0) {
				t.Errorf("Changed() = %v", r.Changed())
			}
			checkAgainstDecisions(t, snap(t, tc.old), snap(t, tc.new), tc.subjects, r)
		})
	}
}

// TestDiffMatchesDecisions compares the diff of random configurations
// with the answers policy decisions give on every queue, for every
// subject.
func TestDiffMatchesDecisions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		old, new := randomConfig(rng), randomConfig(rng)
		so, sn := snap(t, old), snap(t, new)
		subjects := []impact.Subject{{User: "u1", Groups: []string{"g1"}}, {User: "u9", Groups: []string{"g2", "g3"}}, {User: "u2"}}
		r := impact.Diff(so, sn, impact.Options{Subjects: subjects})
		if !checkAgainstDecisions(t, so, sn, subjects, r) {
			t.Fatalf("case %d:\nold:%s\nnew:%s\ngot:\n  %s", i, old, new, strings.Join(lines(r), "\n  "))
		}
	}
}

func randomConfig(rng *rand.Rand) string {
	randACL := func() string {
		if rng.IntN(8) == 0 {
			return "*"
		}
		var us, gs []string
		for range rng.IntN(3) {
			us = append(us, fmt.Sprintf("u%d", rng.IntN(4)))
		}
		for range rng.IntN(3) {
			gs = append(gs, fmt.Sprintf("g%d", rng.IntN(4)))
		}
		return strings.Join(slices.Compact(us), ",") + " " + strings.Join(slices.Compact(gs), ",")
	}
	var b strings.Builder
	b.WriteString("partitions:\n")
	for _, part := range []string{"default", "p2"} {
		if part == "p2" && rng.IntN(2) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  - name: %s\n", part)
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&b, "    adminacl: %q\n", randACL())
		}
		b.WriteString("    queues:\n")
		var queue func(name, indent string, depth int)
		queue = func(name, indent string, depth int) {
			fmt.Fprintf(&b, "%s- name: %s\n", indent, name)
			if rng.IntN(2) == 0 {
				fmt.Fprintf(&b, "%s  submitacl: %q\n", indent, randACL())
			}
			if rng.IntN(4) == 0 {
				fmt.Fprintf(&b, "%s  adminacl: %q\n", indent, randACL())
			}
			if depth < 3 {
				var kids []string
				for _, k := range []string{"a", "b", "c"} {
					if rng.IntN(2) == 0 {
						kids = append(kids, k)
					}
				}
				if len(kids) > 0 {
					fmt.Fprintf(&b, "%s  queues:\n", indent)
					for _, k := range kids {
						queue(k, indent+"    ", depth+1)
					}
				}
			}
		}
		queue("root", "      ", 0)
	}
	return b.String()
}

type key struct {
	right   string
	kind    impact.Kind
	name    string
	subject int
}

// checkAgainstDecisions checks the result against the definition, using
// only policy decisions: for every partition, queue, right and subject it
// works out the change (+1, -1, 0), then requires a change to be reported
// exactly on the queues where it differs from the parent's, with the
// number of queues below reached without crossing a different change.
func checkAgainstDecisions(t *testing.T, old, new *policy.Snapshot, subjects []impact.Subject, r *impact.Result) bool {
	t.Helper()
	type qinfo struct {
		path, parent string
		kids         []string
	}
	ok := true
	reported := map[string]impact.Change{}
	for _, p := range r.Partitions {
		for _, q := range p.Queues {
			for _, c := range q.Changes {
				id := fmt.Sprintf("%s/%s/%s/%s/%s", p.Name, q.Queue, c.Right, c.Kind, c.Name)
				if _, dup := reported[id]; dup {
					t.Errorf("reported twice: %s", id)
					ok = false
				}
				reported[id] = c
			}
		}
	}
	parts := map[string]bool{}
	for _, s := range []*policy.Snapshot{old, new} {
		for _, n := range s.Partitions() {
			parts[n] = true
		}
	}
	expected := 0
	for part := range parts {
		po, _ := old.Partition(part)
		pn, _ := new.Partition(part)
		var order []string
		tree := map[string]*qinfo{}
		users, groups := map[string]bool{}, map[string]bool{}
		for _, p := range []*policy.CompiledPartition{po, pn} {
			if p == nil {
				continue
			}
			names := func(a *acl.ACL) {
				if a != nil {
					for _, u := range a.Users() {
						users[u] = true
					}
					for _, g := range a.Groups() {
						groups[g] = true
					}
				}
			}
			names(p.AdminACL())
			for _, qi := range p.Tree() {
				names(qi.SubmitACL)
				names(qi.AdminACL)
				if tree[qi.Path] == nil {
					tree[qi.Path] = &qinfo{path: qi.Path, parent: qi.Parent}
					order = append(order, qi.Path)
					if qi.Parent != "" {
						tree[qi.Parent].kids = append(tree[qi.Parent].kids, qi.Path)
					}
				}
			}
		}
		allows := func(p *policy.CompiledPartition, q string, sub *acl.Subject, a policy.Action) bool {
			if p == nil {
				return false
			}
			ref, err := p.Lookup(q)
			return err == nil && ref.Decide(sub, a).Allowed
		}
		var keys []key
		subs := map[key]*acl.Subject{}
		for _, right := range []string{"submit", "admin"} {
			keys = append(keys, key{right, impact.Everyone, "*", -1})
			subs[keys[len(keys)-1]] = acl.NewSubject("", nil)
			for u := range users {
				keys = append(keys, key{right, impact.User, u, -1})
				subs[keys[len(keys)-1]] = acl.NewSubject(u, nil)
			}
			for g := range groups {
				keys = append(keys, key{right, impact.Group, g, -1})
				subs[keys[len(keys)-1]] = acl.NewSubject("", []string{g})
			}
			for i, s := range subjects {
				keys = append(keys, key{right, impact.GivenSubject, s.User, i})
				subs[keys[len(keys)-1]] = acl.NewSubject(s.User, s.Groups)
			}
		}
		everyone := acl.NewSubject("", nil)
		for _, k := range keys {
			action, _ := policy.ParseAction(k.right)
			delta := map[string]int{}
			for _, q := range order {
				o, n := allows(po, q, subs[k], action), allows(pn, q, subs[k], action)
				if k.kind == impact.User || k.kind == impact.Group {
					if allows(po, q, everyone, action) || allows(pn, q, everyone, action) {
						o, n = false, false
					}
				}
				switch {
				case n && !o:
					delta[q] = 1
				case o && !n:
					delta[q] = -1
				}
			}
			var reach func(q string, d int) int
			reach = func(q string, d int) int {
				if delta[q] != d {
					return 0
				}
				c := 1
				for _, kid := range tree[q].kids {
					c += reach(kid, d)
				}
				return c
			}
			for _, q := range order {
				d := delta[q]
				parent := 0
				if p := tree[q].parent; p != "" {
					parent = delta[p]
				}
				id := fmt.Sprintf("%s/%s/%s/%s/%s", part, q, k.right, k.kind, k.name)
				c, got := reported[id]
				if d == 0 || d == parent {
					if got {
						t.Errorf("%s: reported %+v, want nothing (change %d, parent %d)", id, c, d, parent)
						ok = false
					}
					continue
				}
				expected++
				switch {
				case !got:
					t.Errorf("%s: not reported, want change %d", id, d)
					ok = false
				case c.Gained != (d > 0) || c.Queues != reach(q, d):
					t.Errorf("%s: reported %+v, want change %d on %d queues", id, c, d, reach(q, d))
					ok = false
				}
			}
		}
	}
	if expected != len(reported) {
		t.Errorf("%d changes reported, %d expected", len(reported), expected)
		ok = false
	}
	return ok
}

func TestWriteText(t *testing.T) {
	old := base
	new := strings.Replace(base, "name: default", "name: gpu", 1)
	new = strings.Replace(new, `submitacl: bob`, `submitacl: "alice"`, 1)
	r := impact.Diff(snap(t, old), snap(t, new), impact.Options{})
	var b strings.Builder
	if err := impact.WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	// alice on root.a.y in gpu is no change of its own: root.a grants it.
	want := `partition default (partition removed)
  root.a (queue removed)
-   submit  user alice  and all 2 queues below
-   submit  group dev   and all 2 queues below
  root.a.y (queue removed)
-   submit  user bob
  root.b (queue removed)
-   submit  group ops
-   admin   group ops
partition gpu (new partition)
  root.a (new queue)
+   submit  user alice  and all 2 queues below
+   submit  group dev   and all 2 queues below
  root.b (new queue)
+   submit  group ops
+   admin   group ops
4 rights gained, 5 rights lost, starting in 5 queues
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}

	// A change that does not reach below its queue says so.
	r = impact.Diff(snap(t, base), snap(t, strings.Replace(base, `submitacl: "alice dev"`, `submitacl: "alice,bob dev"`, 1)), impact.Options{})
	b.Reset()
	impact.WriteText(&b, r)
	if !strings.Contains(b.String(), "+   submit  user bob  and 1 of the 2 queues below\n") {
		t.Fatalf("%s", b.String())
	}
	r = impact.Diff(snap(t, base), snap(t, strings.Replace(base, "submitacl: bob", "submitacl: bob\n                queues:\n                  - name: z\n                    submitacl: carol", 1)), impact.Options{})
	r2 := impact.Diff(snap(t, strings.Replace(base, "submitacl: bob", "submitacl: bob\n                queues:\n                  - name: z\n                    submitacl: carol", 1)),
		snap(t, strings.Replace(base, "submitacl: bob", "submitacl: bob,carol\n                queues:\n                  - name: z\n                    submitacl: carol", 1)), impact.Options{})
	b.Reset()
	impact.WriteText(&b, r2)
	if !strings.Contains(b.String(), "+   submit  user carol  this queue only, not below\n") || !r.Changed() {
		t.Fatalf("%s", b.String())
	}
}
