package placement_test

import (
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// FuzzPlace runs every rule type on arbitrary users, groups, queues and
// tags: placement never panics, Place and Explain agree, a placed queue
// is a valid lower-case path under root, and a placement always comes with
// an allowing decision.
func FuzzPlace(f *testing.F) {
	for _, s := range [][4]string{
		{"alice", "dev", "root.teams.ml", "spark"},
		{"john.doe@EXAMPLE.COM", "", "teams.ml", "My.NS"},
		{"root.x", "a,b", "root..", "root.ns.spark"},
		{"", "", "", ""},
		{"a b", "dev.team", "ROOT.A", "root.@recovery@"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	cp := partition(f, "default")
	rs, problems := placement.Compile([]placement.Spec{
		{Name: "provided", Create: true},
		{Name: "tag", Value: "namespace", Create: true, Parent: &placement.Spec{Name: "tag", Value: "parent"}},
		{Name: "tag", Value: "namespace", Filter: placement.FilterSpec{Type: "deny", Groups: []string{"^x.*$"}}, Parent: &placement.Spec{Name: "fixed", Value: "ns"}},
		{Name: "primaryGroup", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "users"}},
		{Name: "secondaryGroup", Parent: &placement.Spec{Name: "fixed", Value: "teams"}},
		{Name: "user", Create: true, Parent: &placement.Spec{Name: "fixed", Value: "users"}},
		{Name: "fixed", Value: "root.leafy"},
	})
	if rs == nil {
		f.Fatal(problems)
	}
	f.Fuzz(func(t *testing.T, user, groups, queue, ns string) {
		var gs []string
		if groups != "" {
			gs = strings.Split(groups, ",")
		}
		req := placement.Request{Subject: acl.NewSubject(user, gs), Queue: queue, Tags: map[string]string{"namespace": ns, "parent": queue}}
		a, b := rs.Place(cp, req), rs.Explain(cp, req)
		if a.Placed != b.Placed || a.Queue != b.Queue || a.Rule != b.Rule || a.Reason() != b.Reason() {
			t.Fatalf("Place %+v and Explain %+v disagree", a, b)
		}
		if !b.Placed {
			return
		}
		if !b.Decision.Allowed || !strings.HasPrefix(b.Queue, "root.") || b.Queue != strings.ToLower(b.Queue) {
			t.Fatalf("placed in %q with %+v", b.Queue, b.Decision)
		}
		for _, part := range strings.Split(b.Queue, ".") {
			if !policy.ValidQueueName(part) {
				t.Fatalf("placed in %q: %q is not a valid name", b.Queue, part)
			}
		}
	})
}
