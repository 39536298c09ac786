package identity_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/usherhq/usher/identity"
)

func ExampleNone() {
	in, _ := identity.None().Resolve(context.Background(), "alice")
	fmt.Println(in)
	// Output: alice [alice(none)]
}

func ExampleStatic() {
	r := identity.Static(map[string][]string{"alice": {"dev", "ops"}})
	in, _ := r.Resolve(context.Background(), "alice")
	fmt.Println(in)
	_, err := r.Resolve(context.Background(), "bob")
	fmt.Println(err)
	// Output:
	// alice [dev(test) ops(test)]
	// test: unknown user "bob"
}

func ExampleParseFile() {
	const groups = `# site users
alice: dev, ops
system:serviceaccount:spark:driver: spark
`
	r, err := identity.ParseFile(strings.NewReader(groups), "groups.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	in, _ := r.Resolve(context.Background(), "system:serviceaccount:spark:driver")
	fmt.Println(in)

	_, err = identity.ParseFile(strings.NewReader("alice: dev\nalice: ops\n"), "groups.txt")
	fmt.Println(err)
	// Output:
	// system:serviceaccount:spark:driver [spark(file)]
	// groups.txt:2:1: duplicate user (first listed at line 1)
}

func ExampleOS() {
	r := identity.OS()
	in, err := r.Resolve(context.Background(), "root")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(in.User, in.SourceOf(0))
	// Output: root os
}
