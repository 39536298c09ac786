package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/hack/slapdtest"
)

// The benchmarks below run against a real slapd on loopback (slapdtest),
// through engine.Check, so a figure includes the policy decision, the
// cache, and for misses the whole directory lookup: connection pool, the
// user search and the group search (groupsearch member). They use b.Loop
// or sub-benchmarks so that slapd starts once per benchmark.

// benchUsers is the number of users BenchmarkLDAPDistinctUsers resolves.
const benchUsers = 1000

// benchUser names user i of the benchmark users.
func benchUser(i int) string { return fmt.Sprintf("user%04d", i) }

// newBenchDirectory starts a slapd holding directory plus benchUsers users,
// each in one of ten groups team0 ... team9 (100 members each) and in dev.
func newBenchDirectory(b *testing.B) *slapdtest.Server {
	b.Helper()
	s := newDirectory(b)
	var ldif strings.Builder
	for i := range benchUsers {
		ldif.WriteString(ldapPerson(benchUser(i)))
	}
	for g := range 10 {
		var members []string
		for i := g; i < benchUsers; i += 10 {
			members = append(members, benchUser(i))
		}
		ldif.WriteString(ldapGroup(fmt.Sprintf("team%d", g), members...))
	}
	s.AddLDIF(b, ldif.String())
	// dev gets the benchmark users too.
	var all []string
	for i := range benchUsers {
		all = append(all, benchUser(i))
	}
	s.Delete(b, "cn=dev,"+slapdtest.GroupsDN)
	s.AddLDIF(b, ldapGroup("dev", append([]string{"alice", "carol", "dave"}, all...)...))
	return s
}

func mustCheck(b *testing.B, e *engine.Generation, user string) {
	res, err := e.Check(context.Background(), engine.Request{Queue: "root.dev", User: user})
	if err != nil || !res.Allowed {
		b.Fatalf("Check(%s) = %+v, %v", user, res, err)
	}
}

// BenchmarkLDAPCold measures a decision whose groups come from the
// directory: the cache holds one user and the benchmark alternates two,
// so every op is a directory lookup (one user search, one group search,
// on a pooled connection).
func BenchmarkLDAPCold(b *testing.B) {
	s := newDirectory(b)
	e := ldapEngine(b, ldapPartition(s, "default", "", ldapOpts{cache: "{maxentries: 1}"}))
	users := [2]string{"alice", "carol"}
	mustCheck(b, e, users[0]) // dial the first connection outside the measurement
	before := e.CacheStats()["default"].Calls
	i := 0
	for b.Loop() {
		i++
		mustCheck(b, e, users[i%2])
	}
	if calls := e.CacheStats()["default"].Calls - before; calls != uint64(b.N) {
		b.Fatalf("%d directory lookups for %d ops: not every op was cold", calls, b.N)
	}
}

// BenchmarkLDAPCached measures a decision whose groups are in the cache,
// from one goroutine and from GOMAXPROCS goroutines.
func BenchmarkLDAPCached(b *testing.B) {
	s := newDirectory(b)
	e := ldapEngine(b, ldapPartition(s, "default", "", ldapOpts{}))
	mustCheck(b, e, "alice")
	req := engine.Request{Queue: "root.dev", User: "alice"}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := e.Check(context.Background(), req); err != nil || !res.Allowed {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if res, err := e.Check(ctx, req); err != nil || !res.Allowed {
					b.Errorf("%+v %v", res, err)
					return
				}
			}
		})
	})
	if calls := e.CacheStats()["default"].Calls; calls != 1 {
		b.Fatalf("%d directory lookups, want the one before the measurement", calls)
	}
}

// BenchmarkLDAPDistinctUsers measures a cold start: benchUsers distinct
// users, each in its own goroutine, all at once, against an empty cache.
// An op is one round of benchUsers decisions on a new engine (built
// outside the measurement); users/s is the throughput. Every round must
// make exactly one directory lookup per user. The sub-benchmarks vary the
// ldap poolsize, the most connections open at once.
func BenchmarkLDAPDistinctUsers(b *testing.B) {
	s := newBenchDirectory(b)
	users := make([]string, benchUsers)
	for i := range users {
		users[i] = benchUser(i)
	}
	for _, pool := range []int{4, 16} {
		b.Run(fmt.Sprintf("poolsize=%d", pool), func(b *testing.B) {
			part := ldapPartition(s, "default", "", ldapOpts{timeout: "30s"})
			part = strings.Replace(part, "          timeout:", fmt.Sprintf("          poolsize: %d\n          timeout:", pool), 1)
			for b.Loop() {
				b.StopTimer()
				e := ldapEngine(b, part)
				b.StartTimer()
				var wg sync.WaitGroup
				for _, u := range users {
					wg.Go(func() {
						res, err := e.Check(context.Background(), engine.Request{Queue: "root.dev", User: u})
						if err != nil || !res.Allowed {
							b.Errorf("Check(%s) = %+v, %v", u, res, err)
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				if st := e.CacheStats()["default"]; st.Calls != benchUsers || st.Failures != 0 {
					b.Fatalf("stats %+v: want %d directory lookups, one per user", st, benchUsers)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(benchUsers*b.N)/b.Elapsed().Seconds(), "users/s")
		})
	}
}
