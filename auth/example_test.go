package auth_test

import (
	"context"
	"fmt"

	"github.com/usherhq/usher/auth"
)

// A chain of authorizers: members of system:masters may do anything; for
// everyone else the next authorizer (in usher serve, a SubjectAccessReview)
// decides, and a chain in which nobody has an opinion denies.
func ExampleUnionAuthorizer() {
	z := auth.UnionAuthorizer(auth.PrivilegedGroups("system:masters"))
	ask := auth.Attributes{Verb: "create", APIGroup: "usher.io", Resource: "accessreviews"}
	for _, u := range []auth.User{{Name: "root", Groups: []string{"system:masters"}}, {Name: "alice", Groups: []string{"dev"}}} {
		ask.User = u
		d, reason, _ := z.Authorize(context.Background(), ask)
		fmt.Printf("%s: %s %s (%s)\n", u.Name, d, ask, reason)
	}
	// Output:
	// root: allow create accessreviews.usher.io (member of the privileged group system:masters)
	// alice: deny create accessreviews.usher.io ()
}
