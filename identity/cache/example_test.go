package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/cache"
)

// A partition's resolver is wrapped in its own cache.
func ExampleNew() {
	dir := identity.Static(map[string][]string{"alice": {"dev", "ops"}})
	c := cache.New(dir, cache.Options{
		Name:        "test",
		PositiveTTL: 5 * time.Minute,
		NegativeTTL: 30 * time.Second,
	})

	in, _ := c.Resolve(context.Background(), "alice") // asks dir
	fmt.Println(in)
	in, _ = c.Resolve(context.Background(), "alice") // from the cache
	fmt.Println(in)
	_, err := c.Resolve(context.Background(), "bob") // a failure, cached for 30s
	fmt.Println(err)

	s := c.Stats()
	fmt.Printf("hits %d, misses %d, resolver calls %d, failures %d\n", s.Hits, s.Misses, s.Calls, s.Failures)
	// Output:
	// alice [dev(test) ops(test)]
	// alice [dev(test) ops(test)]
	// test: unknown user "bob"
	// hits 1, misses 2, resolver calls 2, failures 1
}

// Complete asks the cache only when the request supplied no groups (the
// default mode) or when the partition resolves or merges groups.
func ExampleNew_complete() {
	c := cache.New(identity.Static(map[string][]string{"alice": {"ldap-dev"}}), cache.Options{})
	in, _ := (*identity.Policy)(nil).Complete(context.Background(), identity.ModeMerge, c, "alice", []string{"system:authenticated"})
	fmt.Println(in)
	// Output: alice [system:authenticated(given) ldap-dev(test)]
}

// With StaleTTL, an outage of the directory does not lock users out at
// once.
func ExampleOptions() {
	c := cache.New(identity.None(), cache.Options{
		Name:     "ldap",
		StaleTTL: 15 * time.Minute,
		Timeout:  2 * time.Second,
	})
	c.Resolve(context.Background(), "alice")
	fmt.Println(c.Stats().Calls, c.Len())
	// Output: 1 1
}
