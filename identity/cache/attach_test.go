package cache_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/cache"
)

// TestAttach checks that a value kept with a cached answer is returned
// only for that answer and that key, never paired with a newer answer.
func TestAttach(t *testing.T) {
	var n atomic.Int32
	dir := resolverFunc(func(_ context.Context, user string) (identity.Info, error) {
		return identity.Info{User: user, Groups: []string{fmt.Sprint("g", n.Add(1))}}, nil
	})
	c := cache.New(dir, cache.Options{MaxEntries: 1})
	ctx := context.Background()
	if _, _, ok := c.Attached("alice", 1); ok {
		t.Fatal("attached before any answer")
	}
	first, err := c.Resolve(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	c.Attach("alice", first, 1, "v1")
	in, v, ok := c.Attached("alice", 1)
	if !ok || v != "v1" || in.Groups[0] != first.Groups[0] {
		t.Fatalf("Attached = %v, %v, %v", in, v, ok)
	}
	if _, _, ok := c.Attached("alice", 2); ok {
		t.Error("attached under another key")
	}
	hits := c.Stats().Hits

	// A new answer: what was worked out from the old one is not served,
	// and cannot be attached to the new one.
	c.Resolve(ctx, "bob") // evicts alice
	second, _ := c.Resolve(ctx, "alice")
	if _, _, ok := c.Attached("alice", 1); ok {
		t.Error("the old answer's value survived a new answer")
	}
	c.Attach("alice", first, 1, "stale")
	if _, _, ok := c.Attached("alice", 1); ok {
		t.Error("a value of the old answer was attached to the new one")
	}
	equal := identity.Info{User: second.User, Groups: append([]string(nil), second.Groups...)}
	c.Attach("alice", equal, 1, "copy")
	if _, _, ok := c.Attached("alice", 1); ok {
		t.Error("attached to an answer that is equal but not the one cached")
	}
	c.Attach("alice", second, 1, "v2")
	if _, v, ok := c.Attached("alice", 1); !ok || v != "v2" {
		t.Errorf("Attached = %v, %v", v, ok)
	}
	if got := c.Stats().Hits - hits; got != 1 {
		t.Errorf("%d hits counted, want 1 (only Attached that answered)", got)
	}
}

// resolverFunc adapts a function to identity.Resolver.
type resolverFunc func(ctx context.Context, user string) (identity.Info, error)

func (f resolverFunc) Resolve(ctx context.Context, user string) (identity.Info, error) {
	return f(ctx, user)
}
