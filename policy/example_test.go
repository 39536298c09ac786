package policy_test

import (
	"fmt"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/policy"
)

// A user compiled once against a partition (a Principal) is decided at the
// same cost on every queue, however deep, with the same answer as the
// Subject alone.
func ExamplePrincipal() {
	dev, ops := acl.MustParse(" dev"), acl.MustParse("alice")
	root := &policy.Queue{Name: "root", AdminACL: &ops, Children: []*policy.Queue{
		{Name: "teams", Children: []*policy.Queue{{Name: "ml", SubmitACL: &dev}}},
	}}
	s, err := policy.Compile([]policy.Partition{{Name: "default", Root: root}})
	if err != nil {
		panic(err)
	}
	p, _ := s.Partition("default")
	bob := p.Principal(acl.NewSubject("bob", []string{"dev", "staff"}))
	for _, q := range []string{"root.teams.ml", "root.teams"} {
		d, _ := p.DecideAs(q, bob, policy.Submit)
		fmt.Println(d.Reason())
	}
	// Output:
	// bob may submit to root.teams.ml: group entry "dev" in submitacl of root.teams.ml
	// bob may not submit to root.teams: no submitacl or adminacl of root.teams or its parents allows the user or any of the user's groups
}
