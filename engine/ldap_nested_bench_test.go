package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/hack/slapdtest"
)

// nestedLDIF puts dev in ml and ml in gpu: carol and dave (in dev) reach
// gpu through two levels.
var nestedLDIF = `
dn: cn=ml,` + slapdtest.GroupsDN + `
objectClass: groupOfNames
cn: ml
member: cn=dev,` + slapdtest.GroupsDN + `

dn: cn=gpu,` + slapdtest.GroupsDN + `
objectClass: groupOfNames
cn: gpu
member: cn=ml,` + slapdtest.GroupsDN + `
`

// BenchmarkLDAPNested measures decisions that need nested groups: cold
// (every op a directory lookup: the user search, the group search and one
// search per level) at depth 0 (today's lookup, for comparison, on
// root.dev) and depth 2 (on root.gpu, granted through two levels), and
// cached at depth 2.
func BenchmarkLDAPNested(b *testing.B) {
	s := newDirectory(b)
	s.AddLDIF(b, nestedLDIF)
	for _, depth := range []int{0, 2} {
		queue := "root.gpu"
		if depth == 0 {
			queue = "root.dev"
		}
		b.Run(fmt.Sprintf("cold/depth=%d", depth), func(b *testing.B) {
			e := ldapEngine(b, withCache(enterprisePartition(s, "default", "resolve", "", fmt.Sprintf("          nestedgroups: %d\n", depth)), "{maxentries: 1}"))
			users := [2]string{"carol", "dave"}
			nestedCheck(b, e, queue, users[0])
			before := e.CacheStats()["default"].Calls
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				nestedCheck(b, e, queue, users[i%2])
			}
			if calls := e.CacheStats()["default"].Calls - before; calls != uint64(b.N) {
				b.Fatalf("%d directory lookups for %d ops: not every op was cold", calls, b.N)
			}
		})
	}
	b.Run("cached/depth=2", func(b *testing.B) {
		e := ldapEngine(b, enterprisePartition(s, "default", "resolve", "", "          nestedgroups: 2\n"))
		nestedCheck(b, e, "root.gpu", "dave")
		b.ReportAllocs()
		for b.Loop() {
			nestedCheck(b, e, "root.gpu", "dave")
		}
		if calls := e.CacheStats()["default"].Calls; calls != 1 {
			b.Fatalf("%d directory lookups, want the one before the measurement", calls)
		}
	})
}

// withCache sets the cache block of a partition rendered by ldapPartition.
func withCache(p, cache string) string {
	return replaceOnce(p, "      cache: {}", "      cache: "+cache)
}

func nestedCheck(b *testing.B, e *engine.Generation, queue, user string) {
	b.Helper()
	res, err := e.Check(context.Background(), engine.Request{Queue: queue, User: user})
	if err != nil || !res.Allowed {
		b.Fatalf("Check(%s, %s) = %+v, %v", user, queue, res, err)
	}
}

func replaceOnce(s, old, new string) string {
	i := strings.Index(s, old)
	if i < 0 {
		panic("replaceOnce: " + old + " not found")
	}
	return s[:i] + new + s[i+len(old):]
}
