package cache_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/cache"
)

// groups64 is an answer with 64 groups, as a user in a large directory has.
func groups64(user string) identity.Info {
	in := identity.Info{User: user}
	for i := range 64 {
		in.Groups = append(in.Groups, fmt.Sprintf("group-%02d", i))
		in.Sources = append(in.Sources, "bench")
	}
	return in
}

var benchDir = resolverFunc(func(_ context.Context, user string) (identity.Info, error) {
	return groups64(user), nil
})

// BenchmarkCacheHit is one lookup of a cached user, on one core.
func BenchmarkCacheHit(b *testing.B) {
	c := cache.New(benchDir, cache.Options{})
	ctx := context.Background()
	if _, err := c.Resolve(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Resolve(ctx, "alice"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCacheHitParallel is lookups of 1,000 cached users from every core.
func BenchmarkCacheHitParallel(b *testing.B) {
	const users = 1000
	c := cache.New(benchDir, cache.Options{})
	ctx := context.Background()
	names := make([]string, users)
	for i := range names {
		names[i] = fmt.Sprintf("user-%d@EXAMPLE.COM", i)
		if _, err := c.Resolve(ctx, names[i]); err != nil {
			b.Fatal(err)
		}
	}
	var worker atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(worker.Add(1)) * 331 // each goroutine its own users
		for pb.Next() {
			if _, err := c.Resolve(ctx, names[i%users]); err != nil {
				b.Error(err)
				return
			}
			i += 7
		}
	})
}

// BenchmarkCacheHitParallelSameUser is every core looking up one user: the
// worst case for contention.
func BenchmarkCacheHitParallelSameUser(b *testing.B) {
	c := cache.New(benchDir, cache.Options{})
	ctx := context.Background()
	if _, err := c.Resolve(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Resolve(ctx, "alice"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCacheMiss is a lookup that calls the resolver and stores its
// answer (64 groups), the cost the cache adds to a miss.
func BenchmarkCacheMiss(b *testing.B) {
	answer := groups64("alice")
	dir := resolverFunc(func(context.Context, string) (identity.Info, error) { return answer, nil })
	c := cache.New(dir, cache.Options{MaxEntries: 1}) // alice and bob evict each other
	ctx := context.Background()
	users := [2]string{"alice", "bob"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := c.Resolve(ctx, users[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCacheMissSameUser is every core missing for one user at once, the
// resolver never kept: concurrent misses share calls.
func BenchmarkCacheMissSameUser(b *testing.B) {
	answer := groups64("alice")
	dir := resolverFunc(func(context.Context, string) (identity.Info, error) { return answer, nil })
	c := cache.New(dir, cache.Options{PositiveTTL: -1})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Resolve(ctx, "alice"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	s := c.Stats()
	b.ReportMetric(float64(s.Calls)/float64(s.Misses), "calls/miss")
}
