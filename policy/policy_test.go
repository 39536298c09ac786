package policy_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/policy"
)

func aclp(s string) *acl.ACL {
	a := acl.MustParse(s)
	return &a
}

// chain builds root.q1.q2...qN with the given ACLs per level (index 0 is
// root); "-" leaves an ACL unset.
func chain(submit, admin []string) *policy.Queue {
	var top, cur *policy.Queue
	for i := range submit {
		q := &policy.Queue{Name: fmt.Sprintf("q%d", i)}
		if i == 0 {
			q.Name = "root"
		}
		if submit[i] != "-" {
			q.SubmitACL = aclp(submit[i])
		}
		if admin[i] != "-" {
			q.AdminACL = aclp(admin[i])
		}
		if top == nil {
			top = q
		} else {
			cur.Children = []*policy.Queue{q}
		}
		cur = q
	}
	return top
}

func compile(t testing.TB, parts ...policy.Partition) *policy.Snapshot {
	t.Helper()
	s, err := policy.Compile(parts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInheritanceAcrossDeepTree(t *testing.T) {
	// Level:           root     q1      q2   q3    q4      q5
	submit := []string{"-", " ops", "-", "-", "carol", "-"}
	admin := []string{"boss", "-", "-", " leads", "-", "-"}
	s := compile(t, policy.Partition{Name: "default", Root: chain(submit, admin)})
	leaf := "root.q1.q2.q3.q4.q5"
	tests := []struct {
		user, groups string
		action       policy.Action
		allowed      bool
		byQueue      string
		byACL        policy.ACLName
	}{
		{"carol", "", policy.Submit, true, "root.q1.q2.q3.q4", policy.SubmitACL},
		{"x", "ops", policy.Submit, true, "root.q1", policy.SubmitACL},
		{"x", "leads", policy.Submit, true, "root.q1.q2.q3", policy.AdminACL},
		{"boss", "", policy.Submit, true, "root", policy.AdminACL},
		{"boss", "", policy.Admin, true, "root", policy.AdminACL},
		{"x", "leads", policy.Admin, true, "root.q1.q2.q3", policy.AdminACL},
		{"carol", "", policy.Admin, false, "", ""}, // submit ACLs never grant admin
		{"x", "ops", policy.Admin, false, "", ""},
		{"mallory", "evil", policy.Submit, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.user, tt.groups, tt.action), func(t *testing.T) {
			var groups []string
			if tt.groups != "" {
				groups = strings.Split(tt.groups, ",")
			}
			d, err := s.Decide("", leaf, acl.NewSubject(tt.user, groups), tt.action)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allowed || d.By.Queue != tt.byQueue || d.By.ACL != tt.byACL {
				t.Fatalf("got %+v (%s)", d, d.Reason())
			}
			if d.Queue != leaf || d.Partition != "default" || d.User != tt.user {
				t.Fatalf("decision does not describe the request: %+v", d)
			}
		})
	}
}

// The nearest ACL in bottom-up order decides, even when an ancestor would
// match in an earlier position of the wildcard/user/group order.
func TestBottomUpOrderDecides(t *testing.T) {
	s := compile(t, policy.Partition{Name: "default", Root: chain(
		[]string{"alice", " dev"}, []string{"-", "-"})})
	d, _ := s.Decide("default", "root.q1", acl.NewSubject("alice", []string{"dev"}), policy.Submit)
	if d.By.Queue != "root.q1" || d.By.Match.Kind != acl.MatchGroup {
		t.Fatalf("the leaf's group should decide first: %+v", d.By)
	}
	p, _ := s.Partition("default")
	ref, err := p.Lookup("root.q1")
	if err != nil {
		t.Fatal(err)
	}
	_, steps := ref.Explain(acl.NewSubject("alice", []string{"dev"}), policy.Submit)
	want := []struct {
		queue   string
		acl     policy.ACLName
		match   bool
		reached bool
	}{
		{"root.q1", policy.SubmitACL, true, true},
		{"root.q1", policy.AdminACL, false, false},
		{"root", policy.SubmitACL, false, false},
		{"root", policy.AdminACL, false, false},
	}
	if len(steps) != len(want) {
		t.Fatalf("steps %+v", steps)
	}
	for i, w := range want {
		st := steps[i]
		if st.Queue != w.queue || st.ACL != w.acl || st.Match.Allowed() != w.match || st.Reached != w.reached {
			t.Errorf("step %d = %+v, want %+v", i, st, w)
		}
	}
}

func TestClusterAdminACL(t *testing.T) {
	s := compile(t, policy.Partition{Name: "default", AdminACL: aclp("yarnadmin hadoopadm"),
		Root: chain([]string{" ", "alice"}, []string{" ", "-"})})
	for _, action := range []policy.Action{policy.Submit, policy.Admin} {
		d, _ := s.Decide("", "root.q1", acl.NewSubject("x", []string{"hadoopadm"}), action)
		if !d.Allowed || d.By.ACL != policy.ClusterAdminACL || !strings.Contains(d.Reason(), "adminacl of partition default") {
			t.Fatalf("%s: %+v %s", action, d, d.Reason())
		}
	}
	d, _ := s.Decide("", "root.q1", acl.NewSubject("alice", nil), policy.Submit)
	if d.By.ACL != policy.SubmitACL {
		t.Fatalf("queue ACLs come before the cluster admin ACL: %+v", d.By)
	}
}

func TestLookups(t *testing.T) {
	root := &policy.Queue{Name: "root", SubmitACL: aclp("*"), Children: []*policy.Queue{{Name: "Default"}, {Name: "Spark"}}}
	s := compile(t, policy.Partition{Name: "Default", Root: root})
	sub := acl.NewSubject("u", nil)
	if d, err := s.Decide("default", "ROOT.spark", sub, policy.Submit); err != nil || !d.Allowed || d.Queue != "root.spark" {
		t.Fatalf("queue names are not case sensitive: %+v %v", d, err)
	}
	if d, err := s.Decide("", "", sub, policy.Submit); err != nil || d.Queue != "root.default" {
		t.Fatalf("default queue: %+v %v", d, err)
	}
	if _, err := s.Decide("default", "root.nope", sub, policy.Submit); !errors.Is(err, policy.ErrUnknownQueue) {
		t.Fatalf("unknown queue: %v", err)
	}
	if _, err := s.Decide("gpu", "root", sub, policy.Submit); !errors.Is(err, policy.ErrUnknownPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
	p, _ := s.Partition("")
	if r, err := p.Lookup("Root.Spark"); err != nil || r.Path() != "root.spark" || !r.Decide(sub, policy.Submit).Allowed {
		t.Fatalf("Lookup: %q %v", r.Path(), err)
	}
	if r, err := p.Lookup("root.nope"); !errors.Is(err, policy.ErrUnknownQueue) || r.Path() != "" {
		t.Fatalf("Lookup of an unknown queue: %q %v", r.Path(), err)
	}
	if got := strings.Join(p.Queues(), " "); got != "root root.default root.spark" {
		t.Fatalf("queues: %s", got)
	}
}

func TestCompileRejectsBadStructure(t *testing.T) {
	tests := []struct {
		name  string
		parts []policy.Partition
		want  string
	}{
		{"no root", []policy.Partition{{Name: "default"}}, "no root queue"},
		{"root named otherwise", []policy.Partition{{Name: "default", Root: &policy.Queue{Name: "top"}}}, "must be named root"},
		{"duplicate siblings", []policy.Partition{{Name: "default", Root: &policy.Queue{Name: "root",
			Children: []*policy.Queue{{Name: "a"}, {Name: "A"}}}}}, "defined twice"},
		{"bad name", []policy.Partition{{Name: "default", Root: &policy.Queue{Name: "root",
			Children: []*policy.Queue{{Name: "a.b"}}}}}, "invalid name"},
		{"duplicate partition", []policy.Partition{{Name: "p", Root: &policy.Queue{Name: "root"}}, {Name: "P", Root: &policy.Queue{Name: "root"}}}, "defined twice"},
		{"unknown default queue", []policy.Partition{{Name: "p", DefaultQueue: "root.x", Root: &policy.Queue{Name: "root"}}}, "unknown queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Compile(tt.parts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAccessAndLint(t *testing.T) {
	root := &policy.Queue{Name: "root", AdminACL: aclp("boss"), Children: []*policy.Queue{
		{Name: "open", SubmitACL: aclp("*")},
		{Name: "closed", SubmitACL: aclp(" ")},
		{Name: "team", SubmitACL: aclp(" dev")},
	}}
	s := compile(t, policy.Partition{Name: "default", Root: root})
	p, _ := s.Partition("default")
	got := map[string][2]bool{}
	for _, q := range p.Access(acl.NewSubject("john", []string{"dev"})) {
		got[q.Queue] = [2]bool{q.Submit.Allowed, q.Admin.Allowed}
	}
	want := map[string][2]bool{"root": {false, false}, "root.open": {true, false}, "root.closed": {false, false}, "root.team": {true, false}}
	for q, w := range want {
		if got[q] != w {
			t.Errorf("%s: got %v want %v", q, got[q], w)
		}
	}
	// root's admin ACL names someone, so no leaf is closed to everybody.
	if n := p.NobodyMaySubmit(); len(n) != 0 {
		t.Fatalf("NobodyMaySubmit = %v", n)
	}
	root.AdminACL = nil
	s = compile(t, policy.Partition{Name: "default", Root: root})
	p, _ = s.Partition("default")
	if n := p.NobodyMaySubmit(); len(n) != 1 || n[0] != "root.closed" {
		t.Fatalf("NobodyMaySubmit = %v", n)
	}
}

func ExampleCompiledPartition_Decide() {
	root := &policy.Queue{Name: "root", Children: []*policy.Queue{{Name: "test", SubmitACL: aclp("sue dev")}}}
	snap, _ := policy.Compile([]policy.Partition{{Name: "default", Root: root}})
	p, _ := snap.Partition("default")
	d, _ := p.Decide("root.test", acl.NewSubject("john", []string{"dev"}), policy.Submit)
	fmt.Println(d.Allowed, d.Reason())
	// Output: true john may submit to root.test: group entry "dev" in submitacl of root.test
}

// A queue marked parent (YuniKorn's parent: true) is not a leaf even
// without children: placement creates queues under it, and applications
// do not run in it.
func TestParentFlagIsNotLeaf(t *testing.T) {
	s, err := policy.Compile([]policy.Partition{{Name: "default", Root: &policy.Queue{Name: "root", Children: []*policy.Queue{
		{Name: "users", Parent: true},
		{Name: "leaf"},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Partition("default")
	users, _ := p.Lookup("root.users")
	leaf, _ := p.Lookup("root.leaf")
	root, _ := p.Lookup("root")
	if users.Leaf() || !leaf.Leaf() || root.Leaf() {
		t.Fatalf("leaf: users %v leaf %v root %v", users.Leaf(), leaf.Leaf(), root.Leaf())
	}
	// Nobody can submit to the queues placement creates in root.users
	// either: lint reports both.
	if got := p.NobodyMaySubmit(); !slices.Equal(got, []string{"root.users", "root.leaf"}) {
		t.Fatalf("NobodyMaySubmit = %v, want root.users and root.leaf", got)
	}
}

// A user name a requester chose reaches a decision's reason quoted unless
// it is written plainly.
func TestReasonQuotesNames(t *testing.T) {
	for user, want := range map[string]string{
		"alice":                       "alice may not submit to root.a:",
		"system:serviceaccount:ns:sa": "system:serviceaccount:ns:sa may not submit to root.a:",
		"x\ncurl x | sh":              `"x\ncurl x | sh" may not submit to root.a:`,
		"":                            `"" may not submit to root.a:`,
	} {
		if got := (policy.Decision{User: user, Queue: "root.a"}).Reason(); !strings.HasPrefix(got, want) {
			t.Errorf("user %q: reason %q, want it to start with %q", user, got, want)
		}
	}
}
