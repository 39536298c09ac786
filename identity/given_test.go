package identity_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/usherhq/usher/identity"
)

// TestGivenManyGroups checks that dropping duplicates keeps the first
// occurrence of every group in order, for short and long lists, given and
// merged with a resolver's.
func TestGivenManyGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 5, 31, 32, 33, 100, 5000} {
		groups := make([]string, n)
		for i := range groups {
			groups[i] = fmt.Sprint("g", r.IntN(n/2+1))
		}
		var want []string
		for _, g := range groups {
			if !slices.Contains(want, g) {
				want = append(want, g)
			}
		}
		in := identity.Given("alice", groups)
		if !slices.Equal(in.Groups, want) || len(in.Sources) != len(want) {
			t.Fatalf("n=%d: got %d groups, want %d", n, len(in.Groups), len(want))
		}
		more := make([]string, n)
		for i := range more {
			more[i] = fmt.Sprint("g", r.IntN(n+1))
		}
		res := resolverFunc(func(context.Context, string) (identity.Info, error) {
			return identity.Info{User: "alice", Groups: more}, nil
		})
		merged, err := (*identity.Policy)(nil).Complete(context.Background(), identity.ModeMerge, res, "alice", groups)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range more {
			if !slices.Contains(want, g) {
				want = append(want, g)
			}
		}
		if !slices.Equal(merged.Groups, want) || len(merged.Sources) != len(want) {
			t.Fatalf("n=%d merged: got %d groups, want %d", n, len(merged.Groups), len(want))
		}
	}
}

// resolverFunc adapts a function to identity.Resolver.
type resolverFunc func(ctx context.Context, user string) (identity.Info, error)

func (f resolverFunc) Resolve(ctx context.Context, user string) (identity.Info, error) {
	return f(ctx, user)
}
