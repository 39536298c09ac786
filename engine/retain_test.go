package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/usherhq/usher/engine"
)

// TestCachesDoNotRetainRequests: the names and groups of a request are
// often substrings of a much larger buffer (the admission webhook reads
// them out of the AdmissionReview's body without copying, up to 7 MiB,
// which whoever reaches usher's Service can send). What the engine keeps
// for a user (the resolver cache's entry, the identity prepared for a
// user and groups) must not keep that buffer alive: with thousands of
// users cached, a body per user is gigabytes.
func TestCachesDoNotRetainRequests(t *testing.T) {
	const users = 40
	const body = 1 << 20
	var yaml strings.Builder
	yaml.WriteString(`partitions:
  - name: given
    groups: given
    queues:
      - name: root
        submitacl: " dev"
  - name: merged
    groups: merge
    usergroupresolver:
      type: test
      users:
`)
	for i := range users {
		fmt.Fprintf(&yaml, "        user-%d: [dev]\n", i)
	}
	yaml.WriteString(`    queues:
      - name: root
        submitacl: " dev"
  - name: resolved
    groups: resolve
    usergroupresolver:
      type: test
      users:
`)
	for i := range users {
		fmt.Fprintf(&yaml, "        user-%d: [dev]\n", i)
	}
	yaml.WriteString(`    queues:
      - name: root
        submitacl: " dev"
`)
	for _, partition := range []string{"given", "merged", "resolved"} {
		t.Run(partition, func(t *testing.T) {
			e := newEngine(t, yaml.String())
			heap := func() uint64 {
				runtime.GC()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			before := heap()
			for i := range users {
				// A request body, with the user's name and group in it.
				name := fmt.Sprintf("user-%d", i)
				s := string([]byte(strings.Repeat("x", body) + name + "dev"))
				user, group := s[body:body+len(name)], s[body+len(name):]
				res, err := e.Check(context.Background(), engine.Request{Partition: partition, Queue: "root", User: user, Groups: []string{group}})
				if err != nil || !res.Allowed {
					t.Fatalf("%s %s: %+v, %v", user, group, res, err)
				}
			}
			after := heap()
			runtime.KeepAlive(e)
			if grown := int64(after) - int64(before); grown > users*body/4 {
				t.Fatalf("the heap grew by %d bytes after %d decisions on requests of %d bytes: the engine keeps the requests alive", grown, users, body)
			}
		})
	}
}

// TestGivenCacheBoundedInBytes: the identities kept for supplied groups
// (groups: given, and merged groups) are bounded in bytes, not only in
// users: whoever reaches usher's Service can send an AdmissionReview
// naming a fresh user with megabytes of groups, and 10,000 of them must
// not be kept.
func TestGivenCacheBoundedInBytes(t *testing.T) {
	e := newEngine(t, `partitions:
  - name: given
    groups: given
    queues:
      - name: root
        submitacl: " dev"
`)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	const perUser = 1 << 20 // bytes of group names
	const users = 30
	before := heap()
	for i := range users {
		groups := make([]string, 0, perUser/32+1)
		groups = append(groups, "dev")
		for j := 0; j < perUser/32; j++ {
			groups = append(groups, fmt.Sprintf("group-%d-%0*d", i, 20, j))
		}
		res, err := e.Check(context.Background(), engine.Request{Partition: "given", Queue: "root", User: fmt.Sprintf("user-%d", i), Groups: groups})
		if err != nil || !res.Allowed {
			t.Fatalf("user-%d: %+v, %v", i, res, err)
		}
	}
	after := heap()
	runtime.KeepAlive(e)
	if grown := int64(after) - int64(before); grown > 32<<20 {
		t.Fatalf("the heap grew by %d MiB after %d users with %d MiB of groups each", grown>>20, users, perUser>>20)
	}
}
