package application_test

import (
	"fmt"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
)

func benchGroups(n int) []string {
	g := make([]string, n)
	for i := range g {
		g[i] = fmt.Sprintf("group-%d", i)
	}
	return g
}

// BenchmarkDecide measures one decision with its trail, for users in 64
// groups, in the second example of YARN's application ACL design (see TestYARNMoveAndViewInTest).
func BenchmarkDecide(b *testing.B) {
	p := policyOf(b, load(b, example2))
	view := acl.MustParse(" group-63")
	app := application.Application{Owner: "john", Queue: "root.datascience.test", ViewACL: &view}
	groups := benchGroups(64)
	for _, bc := range []struct {
		name   string
		user   string
		action application.Action
		target string
	}{
		{"kill/owner", "john", application.Kill, ""},
		{"kill/cluster-admin", "bob", application.Kill, ""},
		{"kill/denied", "jane", application.Kill, ""},
		{"view/view-acl", "jane", application.View, ""},
		{"move/allowed", "bob", application.Move, "root.marketing"},
		{"move/denied", "jane", application.Move, "root.marketing"},
	} {
		sub := acl.NewSubject(bc.user, groups)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Decide(app, sub, bc.action, bc.target); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
