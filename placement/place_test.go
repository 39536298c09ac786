package placement_test

import (
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// queues is the tree the table runs against. Partition default has
// root.default open to all; nodefault has none; closed has a root.default
// only admin may use.
const queues = `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: default
            submitacl: "*"
          - name: users
            parent: true
            submitacl: "*"
          - name: teams
            submitacl: " dev"
            queues:
              - name: ml
              - name: web
                submitacl: carol
          - name: restricted
            submitacl: admin
          - name: leafy
            submitacl: "*"
          - name: ns
            parent: true
            submitacl: "*"
            queues:
              - name: spark
  - name: nodefault
    queues:
      - name: root
        queues:
          - name: a
            submitacl: "*"
  - name: closed
    queues:
      - name: root
        queues:
          - name: default
            submitacl: admin
          - name: a
            submitacl: admin
`

func partition(t testing.TB, name string) *policy.CompiledPartition {
	t.Helper()
	c, err := config.Parse("queues.yaml", []byte(queues))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := c.Snapshot.Partition(name)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func users(under string, create bool) placement.Spec {
	return placement.Spec{Name: "user", Create: create, Parent: &placement.Spec{Name: "fixed", Value: under}}
}

func TestPlace(t *testing.T) {
	alice := []string{"dev"} // alice is in dev
	type tc struct {
		name      string
		partition string
		rules     []placement.Spec
		user      string
		groups    []string
		queue     string
		tags      map[string]string
		want      string // the queue, "rejected", or "error: substring"
		wantRule  int    // -1: the root.default fallback
		create    bool
	}
	tests := []tc{
		// The implicit rule: provided without create.
		{name: "implicit provided, allowed", user: "alice", groups: alice, queue: "root.teams.ml", want: "root.teams.ml"},
		{name: "implicit provided, denied falls to root.default", user: "bob", queue: "root.teams.ml", want: "root.default", wantRule: -1},
		{name: "no queue named: root.default", user: "bob", want: "root.default", wantRule: -1},
		{name: "unqualified marker is dot-replaced under root and does not exist", user: "alice", groups: alice, queue: "teams.ml", want: "root.default", wantRule: -1},
		{name: "parent queue is not a placement", user: "alice", groups: alice, queue: "root.teams", want: "root.default", wantRule: -1},
		{name: "qualified path is matched without regard to case", user: "alice", groups: alice, queue: "root.Teams.ML", want: "root.teams.ml"},
		{name: "ROOT. is not qualified (YuniKorn tests the prefix exactly)", user: "alice", groups: alice, queue: "ROOT.teams.ml", want: "root.default", wantRule: -1},
		{name: "invalid part of a qualified path is a rule error", user: "alice", queue: "root.bad name", want: "error: not a valid queue name"},
		{name: "invalid unqualified name is a rule error", user: "alice", queue: "a b", want: "error: not a valid queue name"},
		{name: "no root.default: rejected", partition: "nodefault", user: "bob", queue: "root.b", want: "rejected"},
		{name: "root.default denies: rejected", partition: "closed", user: "bob", want: "rejected"},
		{name: "root.default allows its user", partition: "closed", user: "admin", want: "root.default", wantRule: -1},

		// provided with create.
		{name: "provided create: nearest ancestor decides", rules: []placement.Spec{{Name: "provided", Create: true}}, user: "bob", queue: "root.users.x.y", want: "root.users.x.y", create: true},
		{name: "provided create: ancestor denies, next", rules: []placement.Spec{{Name: "provided", Create: true}}, user: "bob", queue: "root.restricted2.x", want: "root.default", wantRule: -1},
		{name: "provided create under a leaf the user may use: rejected", rules: []placement.Spec{{Name: "provided", Create: true}}, user: "bob", queue: "root.leafy.sub", want: "error: nearest existing ancestor root.leafy is a leaf"},
		{name: "provided create under a leaf the user may not use: next", rules: []placement.Spec{{Name: "provided", Create: true}}, user: "bob", queue: "root.restricted.sub", want: "root.default", wantRule: -1},
		{name: "the recovery queue never passes", rules: []placement.Spec{{Name: "provided", Create: true}}, user: "bob", queue: "root.@recovery@", want: "root.default", wantRule: -1},
		{name: "provided unqualified under a parent rule", rules: []placement.Spec{{Name: "provided", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "bob", queue: "my.app", want: "root.users.my_dot_app", create: true},
		{name: "provided qualified skips the parent rule", rules: []placement.Spec{{Name: "provided", Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "alice", groups: alice, queue: "root.teams.ml", want: "root.teams.ml"},

		// user.
		{name: "user under a parent: true queue, created", rules: []placement.Spec{users("users", true)}, user: "alice", want: "root.users.alice", create: true},
		{name: "user name normalised", rules: []placement.Spec{users("users", true)}, user: "John.Doe@EXAMPLE.COM", want: "root.users.john_dot_doe@example_dot_com", create: true},
		{name: "service account user", rules: []placement.Spec{users("users", true)}, user: "system:serviceaccount:spark:driver", want: "root.users.system:serviceaccount:spark:driver", create: true},
		{name: "user starting with root. is still put under the parent", rules: []placement.Spec{{Name: "user", Create: true}}, user: "root.leafy", want: "root.default", wantRule: -1},
		{name: "user without create: existing queue", rules: []placement.Spec{{Name: "user"}}, user: "leafy", want: "root.leafy"},
		{name: "user without create: missing queue, next", rules: []placement.Spec{{Name: "user"}}, user: "nobody", want: "root.default", wantRule: -1},
		{name: "user name invalid after replacement: error", rules: []placement.Spec{users("users", true)}, user: "a b", want: "error: not a valid queue name"},
		{name: "user name too long: error", rules: []placement.Spec{users("users", true)}, user: strings.Repeat("u", 65), want: "error: not a valid queue name"},
		{name: "parent rule lands on a leaf: error", rules: []placement.Spec{users("leafy", true), {Name: "provided"}}, user: "alice", queue: "root.default", want: "error: returned a leaf queue: root.leafy"},
		{name: "parent rule queue missing, no create: next", rules: []placement.Spec{users("missing", true)}, user: "alice", want: "root.default", wantRule: -1},
		{name: "parent rule creates, nearest ancestor root denies", rules: []placement.Spec{{Name: "user", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "missing", Create: true}}}, user: "alice", want: "root.default", wantRule: -1},
		{name: "existing user queue under parent", rules: []placement.Spec{{Name: "user", Parent: &placement.Spec{Name: "fixed", Value: "ns"}}}, user: "spark", want: "root.ns.spark"},

		// fixed.
		{name: "fixed qualified allowed", rules: []placement.Spec{{Name: "fixed", Value: "root.teams.ml"}}, user: "alice", groups: alice, want: "root.teams.ml"},
		{name: "fixed qualified denied: next", rules: []placement.Spec{{Name: "fixed", Value: "root.teams.ml"}}, user: "bob", want: "root.default", wantRule: -1},
		{name: "fixed unqualified keeps its dots", rules: []placement.Spec{{Name: "fixed", Value: "teams.web"}}, user: "carol", want: "root.teams.web"},
		{name: "fixed value is lower-cased", rules: []placement.Spec{{Name: "fixed", Value: "Root.Teams.ML"}}, user: "alice", groups: alice, want: "root.teams.ml"},
		{name: "fixed under a parent rule", rules: []placement.Spec{{Name: "fixed", Value: "spark", Parent: &placement.Spec{Name: "fixed", Value: "ns"}}}, user: "x", want: "root.ns.spark"},

		// tag.
		{name: "tag namespace under root.ns", rules: []placement.Spec{{Name: "tag", Value: "namespace", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "root.ns"}}}, user: "x", tags: map[string]string{"Namespace": "spark"}, want: "root.ns.spark"},
		{name: "tag value normalised and created", rules: []placement.Spec{{Name: "tag", Value: "namespace", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "root.ns"}}}, user: "x", tags: map[string]string{"namespace": "My.NS"}, want: "root.ns.my_dot_ns", create: true},
		{name: "namespace under the namespace's parentqueue tag", rules: []placement.Spec{{Name: "tag", Value: "namespace", Create: true, Parent: &placement.Spec{Name: "tag", Value: "namespace.parentqueue"}}}, user: "x", tags: map[string]string{"namespace": "spark", "namespace.parentqueue": "root.ns"}, want: "root.ns.spark"},
		{name: "no parentqueue tag: the parent rule misses, next", rules: []placement.Spec{{Name: "tag", Value: "namespace", Create: true, Parent: &placement.Spec{Name: "tag", Value: "namespace.parentqueue"}}}, user: "x", tags: map[string]string{"namespace": "spark"}, want: "root.default", wantRule: -1},
		{name: "tag absent: next", rules: []placement.Spec{{Name: "tag", Value: "namespace", Create: true}}, user: "x", want: "root.default", wantRule: -1},
		{name: "tag empty: next", rules: []placement.Spec{{Name: "tag", Value: "namespace", Create: true}}, user: "x", tags: map[string]string{"namespace": ""}, want: "root.default", wantRule: -1},
		{name: "tag with a full path skips the parent", rules: []placement.Spec{{Name: "tag", Value: "queue", Parent: &placement.Spec{Name: "fixed", Value: "root.ns"}}}, user: "alice", groups: alice, tags: map[string]string{"queue": "root.teams.ml"}, want: "root.teams.ml"},
		{name: "tag with an invalid full path: error", rules: []placement.Spec{{Name: "tag", Value: "queue"}}, user: "alice", tags: map[string]string{"queue": "root..x"}, want: "error: not a valid queue name"},

		// filters.
		{name: "allow list lets the user through", rules: []placement.Spec{{Name: "user", Create: true, Filter: placement.FilterSpec{Users: []string{"alice", "carol"}}, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "alice", want: "root.users.alice", create: true},
		{name: "allow list filters others", rules: []placement.Spec{{Name: "user", Create: true, Filter: placement.FilterSpec{Users: []string{"alice", "carol"}}, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "bob", want: "root.default", wantRule: -1},
		{name: "deny group filters members", rules: []placement.Spec{{Name: "user", Create: true, Filter: placement.FilterSpec{Type: "deny", Groups: []string{"dev"}}, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "alice", groups: alice, want: "root.default", wantRule: -1},
		{name: "deny group lets others through", rules: []placement.Spec{{Name: "user", Create: true, Filter: placement.FilterSpec{Type: "deny", Groups: []string{"dev"}}, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "bob", want: "root.users.bob", create: true},
		{name: "Deny in capitals is deny in usher", rules: []placement.Spec{{Name: "user", Create: true, Filter: placement.FilterSpec{Type: "Deny", Users: []string{"bob"}}, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "bob", want: "root.default", wantRule: -1},
		{name: "single user entry is a regular expression", rules: []placement.Spec{{Name: "user", Create: true, Filter: placement.FilterSpec{Users: []string{"^system:serviceaccount:"}}, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "system:serviceaccount:a:b", want: "root.users.system:serviceaccount:a:b", create: true},
		{name: "regular expression does not match", rules: []placement.Spec{{Name: "user", Create: true, Filter: placement.FilterSpec{Users: []string{"^system:serviceaccount:"}}, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "bob", want: "root.default", wantRule: -1},
		{name: "group regular expression", rules: []placement.Spec{{Name: "fixed", Value: "root.leafy", Filter: placement.FilterSpec{Groups: []string{"^team-.*$"}}}}, user: "bob", groups: []string{"x", "team-a"}, want: "root.leafy"},
		{name: "anchored regexp is matched in full, not just its prefix", rules: []placement.Spec{{Name: "fixed", Value: "root.leafy", Filter: placement.FilterSpec{Users: []string{"^adm-[0-9]+$"}}}}, user: "adm-x", want: "root.default", wantRule: -1},
		{name: "case-insensitive regexp", rules: []placement.Spec{{Name: "fixed", Value: "root.leafy", Filter: placement.FilterSpec{Users: []string{"^(?i)adm-.*$"}}}}, user: "ADM-1", want: "root.leafy"},
		{name: "alternation is unanchored as YuniKorn matches it", rules: []placement.Spec{{Name: "fixed", Value: "root.leafy", Filter: placement.FilterSpec{Users: []string{"^adm|ops$"}}}}, user: "devops", want: "root.leafy"},
		{name: "empty deny filter lets nobody through", rules: []placement.Spec{{Name: "fixed", Value: "root.leafy", Filter: placement.FilterSpec{Type: "deny"}}}, user: "bob", want: "root.default", wantRule: -1},
		{name: "entries YuniKorn drops never match", rules: []placement.Spec{{Name: "fixed", Value: "root.leafy", Filter: placement.FilterSpec{Users: []string{"1bob", "carol"}}}}, user: "1bob", want: "root.default", wantRule: -1},
		{name: "filter runs before the tag is used, after it is read", rules: []placement.Spec{{Name: "tag", Value: "namespace", Create: true, Filter: placement.FilterSpec{Users: []string{"alice"}}}}, user: "bob", tags: map[string]string{"namespace": "x"}, want: "root.default", wantRule: -1},

		// usher's extensions: YARN's primaryGroup and secondaryGroupExistingQueue.
		{name: "primaryGroup: the first group", rules: []placement.Spec{{Name: "primaryGroup", Parent: &placement.Spec{Name: "fixed", Value: "teams"}}}, user: "alice", groups: []string{"ML", "dev"}, want: "root.teams.ml"},
		{name: "primaryGroup: no groups, next", rules: []placement.Spec{{Name: "primaryGroup", Create: true}}, user: "alice", want: "root.default", wantRule: -1},
		{name: "primaryGroup: dots replaced, created", rules: []placement.Spec{{Name: "primaryGroup", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "users"}}}, user: "alice", groups: []string{"dev.team"}, want: "root.users.dev_dot_team", create: true},
		{name: "secondaryGroup: first secondary group with a queue", rules: []placement.Spec{{Name: "secondaryGroup", Parent: &placement.Spec{Name: "fixed", Value: "teams"}}}, user: "carol", groups: []string{"web", "x", "Web", "ml"}, want: "root.teams.web"},
		{name: "secondaryGroup: the primary group does not count", rules: []placement.Spec{{Name: "secondaryGroup", Parent: &placement.Spec{Name: "fixed", Value: "teams"}}}, user: "alice", groups: []string{"ml", "dev"}, want: "root.default", wantRule: -1},
		{name: "secondaryGroup: never creates", rules: []placement.Spec{{Name: "secondaryGroup", Create: true}}, user: "alice", groups: []string{"dev", "newteam"}, want: "root.default", wantRule: -1},

		// order.
		{name: "the first rule that places wins", rules: []placement.Spec{{Name: "fixed", Value: "root.leafy"}, users("users", true)}, user: "bob", want: "root.leafy"},
		{name: "a denied rule falls to the next", rules: []placement.Spec{{Name: "fixed", Value: "root.restricted"}, users("users", true)}, user: "bob", want: "root.users.bob", wantRule: 1, create: true},
		{name: "an error stops even when a later rule would place", rules: []placement.Spec{{Name: "provided"}, users("users", true)}, user: "bob", queue: "root.x y", want: "error: not a valid queue name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			part := tt.partition
			if part == "" {
				part = "default"
			}
			rs, problems := placement.Compile(tt.rules)
			if rs == nil {
				t.Fatalf("compile: %v", problems)
			}
			req := placement.Request{Subject: acl.NewSubject(tt.user, tt.groups), Queue: tt.queue, Tags: tt.tags}
			res := rs.Explain(partition(t, part), req)
			if q := rs.Place(partition(t, part), req); q.Placed != res.Placed || q.Queue != res.Queue || q.Rule != res.Rule || q.Reason() != res.Reason() || q.Trail != nil {
				t.Fatalf("Place and Explain disagree: %+v\n%+v", q, res)
			}
			var got string
			switch {
			case res.Err != nil:
				got = "error: " + res.Err.Error()
			case !res.Placed:
				got = "rejected"
			default:
				got = res.Queue
			}
			if strings.HasPrefix(tt.want, "error: ") {
				if !strings.Contains(got, strings.TrimPrefix(tt.want, "error: ")) || res.Placed {
					t.Fatalf("got %q, want an error containing %q\n%s", got, tt.want, trail(rs, res))
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q\n%s", got, tt.want, trail(rs, res))
			}
			if res.Placed && (res.Rule != tt.wantRule || res.Create != tt.create) {
				t.Fatalf("rule %d create %v, want rule %d create %v\n%s", res.Rule, res.Create, tt.wantRule, tt.create, trail(rs, res))
			}
			if res.Placed && !res.Decision.Allowed {
				t.Fatalf("placed without an allowing decision: %+v", res.Decision)
			}
			if res.Reason() == "" || len(res.Trail) == 0 {
				t.Fatal("no reason or trail")
			}
		})
	}
}

func trail(rs *placement.Rules, res placement.Result) string {
	var b strings.Builder
	for _, s := range res.Trail {
		b.WriteString("  " + rs.Describe(s.Rule) + ": " + s.Reason() + "\n")
	}
	return b.String()
}

func TestTrailReasons(t *testing.T) {
	rs, _ := placement.Compile([]placement.Spec{
		{Name: "tag", Value: "namespace"},
		{Name: "user", Create: true, Filter: placement.FilterSpec{Users: []string{"alice"}}},
		{Name: "user", Parent: &placement.Spec{Name: "fixed", Value: "missing"}},
		{Name: "fixed", Value: "root.teams"},
		{Name: "fixed", Value: "root.restricted"},
		{Name: "user", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "users"}},
	})
	res := rs.Explain(partition(t, "default"), placement.Request{Subject: acl.NewSubject("bob", nil)})
	want := []string{
		`the application has no tag "namespace"`,
		"the filter does not let the user through",
		`parent rule fixed "missing": root.missing does not exist and create is false`,
		"root.teams is a parent queue",
		"bob may not submit to root.restricted",
		"placed in root.users.bob (to be created): bob may submit to root.users",
	}
	if len(res.Trail) != len(want) {
		t.Fatalf("trail has %d steps, want %d:\n%s", len(res.Trail), len(want), trail(rs, res))
	}
	for i, w := range want {
		if got := res.Trail[i].Reason(); !strings.Contains(got, w) {
			t.Errorf("step %d: %q does not contain %q", i+1, got, w)
		}
	}
	if res.Rule != 5 || rs.Describe(5) != `user create under (fixed "users")` {
		t.Errorf("rule %d %q", res.Rule, rs.Describe(res.Rule))
	}
}

func TestCompileProblems(t *testing.T) {
	tests := []struct {
		name    string
		spec    placement.Spec
		field   string
		depth   int
		warning bool
		msg     string
	}{
		{"unknown rule", placement.Spec{Name: "nestedUserQueue"}, "name", 0, false, "unknown rule"},
		{"extension warns", placement.Spec{Name: "primaryGroup"}, "name", 0, true, "usher extension"},
		{"invalid rule name", placement.Spec{Name: "user-rule"}, "name", 0, false, "invalid rule name"},
		{"recovery is internal", placement.Spec{Name: "recovery"}, "name", 0, false, "internal"},
		{"fixed without value", placement.Spec{Name: "fixed"}, "value", 0, false, "needs a value"},
		{"tag without value", placement.Spec{Name: "tag"}, "value", 0, false, "needs a value"},
		{"fixed invalid part", placement.Spec{Name: "fixed", Value: "root..a"}, "value", 0, false, "not a valid queue name"},
		{"qualified fixed with parent", placement.Spec{Name: "fixed", Value: "root.a", Parent: &placement.Spec{Name: "user"}}, "value", 0, false, "cannot have a parent"},
		{"fixed rootx with create", placement.Spec{Name: "fixed", Value: "rootx", Create: true}, "value", 0, false, "not \"root.\""},
		{"fixed rootx without create", placement.Spec{Name: "fixed", Value: "rootx"}, "value", 0, true, "never matches"},
		{"value on user rule", placement.Spec{Name: "user", Value: "x"}, "value", 0, true, "does not use a value"},
		{"bad filter type", placement.Spec{Name: "user", Filter: placement.FilterSpec{Type: "block"}}, "filter.type", 0, false, "want allow or deny"},
		{"Deny warns", placement.Spec{Name: "user", Filter: placement.FilterSpec{Type: "Deny", Users: []string{"a"}}}, "filter.type", 0, true, "treats \"Deny\" as allow"},
		{"empty deny warns", placement.Spec{Name: "user", Filter: placement.FilterSpec{Type: "deny"}}, "filter.type", 0, true, "lets nobody through"},
		{"bad regexp", placement.Spec{Name: "user", Filter: placement.FilterSpec{Users: []string{"(a"}}}, "filter.users", 0, false, "not a valid regular expression"},
		{"neither name nor regexp", placement.Spec{Name: "user", Filter: placement.FilterSpec{Groups: []string{"dev@corp"}}}, "filter.groups", 0, false, "neither"},
		{"unanchored regexp", placement.Spec{Name: "user", Filter: placement.FilterSpec{Users: []string{"adm.*"}}}, "filter.users", 0, true, "not anchored"},
		{"dropped list entry", placement.Spec{Name: "user", Filter: placement.FilterSpec{Users: []string{"a", "1b"}}}, "filter.users", 0, true, "ignores it"},
		{"problem in a parent rule", placement.Spec{Name: "user", Parent: &placement.Spec{Name: "tag"}}, "value", 1, false, "needs a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, problems := placement.Compile([]placement.Spec{{Name: "provided"}, tt.spec})
			if len(problems) != 1 {
				t.Fatalf("problems %v, want one", problems)
			}
			p := problems[0]
			if p.Rule != 1 || p.Field != tt.field || p.Depth != tt.depth || p.Warning != tt.warning || !strings.Contains(p.Msg, tt.msg) {
				t.Fatalf("got %+v, want field %s depth %d warning %v msg ~%q", p, tt.field, tt.depth, tt.warning, tt.msg)
			}
			if (rs == nil) == tt.warning {
				t.Fatalf("rules %v with warning %v", rs, tt.warning)
			}
		})
	}
	if rs, p := placement.Compile(nil); rs == nil || !rs.IsImplicit() || rs.Len() != 1 || p != nil {
		t.Fatal("an empty list must compile to the implicit provided rule")
	}
}

func TestCheck(t *testing.T) {
	cp := partition(t, "default")
	tests := []struct {
		name string
		spec placement.Spec
		msg  string // "" for no problem
	}{
		{"fixed leaf exists", placement.Spec{Name: "fixed", Value: "root.leafy"}, ""},
		{"fixed parent", placement.Spec{Name: "fixed", Value: "root.teams"}, "is a parent queue"},
		{"fixed missing", placement.Spec{Name: "fixed", Value: "root.nope"}, "does not exist and create is false"},
		{"fixed missing with create", placement.Spec{Name: "fixed", Value: "root.nope", Create: true}, ""},
		{"fixed under a leaf", placement.Spec{Name: "fixed", Value: "root.leafy.x", Create: true}, "root.leafy is a leaf queue"},
		{"dynamic under a leaf", users("root.leafy", true), "must be a parent queue"},
		{"dynamic under parent: true", users("root.users", true), ""},
		// YuniKorn's validator accepts it, but the parent rule never
		// gives a queue (TestCheckDeadRules).
		{"dynamic under missing, create", users("root.nope", true), "never places: the parent rule's queue root.nope does not exist"},
		{"dynamic under missing, parent creates", placement.Spec{Name: "user", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "root.nope", Create: true}}, ""},
		{"dynamic under missing, no create", users("root.nope", false), "does not exist"},
		{"unqualified fixed chain", placement.Spec{Name: "fixed", Value: "spark", Parent: &placement.Spec{Name: "fixed", Value: "ns"}}, ""},
		{"dynamic first is not checked", placement.Spec{Name: "fixed", Value: "x", Parent: &placement.Spec{Name: "user"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, problems := placement.Compile([]placement.Spec{tt.spec})
			if rs == nil {
				t.Fatal(problems)
			}
			got := rs.Check(cp)
			if tt.msg == "" {
				if len(got) != 0 {
					t.Fatalf("unexpected %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Msg, tt.msg) {
				t.Fatalf("got %v, want %q", got, tt.msg)
			}
		})
	}
}

// Rules that can never place are warnings, and placing shows they never
// do: a rule under a fixed parent that does not exist and is not created,
// and a rule after one that places everyone.
func TestCheckDeadRules(t *testing.T) {
	cp := partition(t, "default")
	provided := placement.Spec{Name: "provided"}
	tests := []struct {
		name  string
		rules []placement.Spec
		want  string // the warning, "" for none
	}{
		{"missing parent", []placement.Spec{users("root.nope", true), provided}, "placement rule 1 parent value: never places"},
		{"after a rule placing everyone", []placement.Spec{{Name: "fixed", Value: "root.leafy"}, provided},
			"placement rule 2: never reached: placement rule 1 before it places every application in root.leafy"},
		{"after one creating for everyone", []placement.Spec{{Name: "fixed", Value: "users.x", Create: true}, provided}, "placement rule 2: never reached"},
		{"after a rule some may not use", []placement.Spec{{Name: "fixed", Value: "root.restricted"}, provided}, ""},
		{"after a filtered rule", []placement.Spec{{Name: "fixed", Value: "root.leafy", Filter: placement.FilterSpec{Users: []string{"alice"}}}, provided}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, problems := placement.Compile(tt.rules)
			if rs == nil {
				t.Fatal(problems)
			}
			got := rs.Check(cp)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("unexpected %v", got)
				}
				return
			}
			if len(got) != 1 || !got[0].Warning || !strings.HasPrefix(got[0].Error(), tt.want) {
				t.Fatalf("got %v, want %q", got, tt.want)
			}
			// The rule warned about is not the one that places alice.
			res := rs.Place(cp, placement.Request{Subject: acl.NewSubject("alice", []string{"dev"}), Queue: "root.default"})
			if !res.Placed || res.Rule == got[0].Rule {
				t.Errorf("placed by rule %d: %s", res.Rule+1, res.Reason())
			}
		})
	}
}
