package acl

import (
	"runtime"
	"sync"
	"testing"
)

// TestParseLargeACLMemory holds the parser of a 100,000-entry ACL to the
// memory it needs for its lists and its compiled set: at most 8 MB
// allocated in all, whatever the collector does (YuniKorn's parser takes
// 8.6 MB for the same ACL).
func TestParseLargeACLMemory(t *testing.T) {
	text := acl100k()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, warns, err := Parse(text, YuniKorn)
	runtime.ReadMemStats(&after)
	if err != nil || len(warns) != 0 || len(a.Users()) != 50000 || len(a.Groups()) != 50000 {
		t.Fatalf("%v %v %d %d", err, warns, len(a.Users()), len(a.Groups()))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("parsing 100,000 entries allocated %.1f MB, want at most 8 MB", float64(got)/(1<<20))
	}
}

// TestFirstChecksRace checks an ACL whose set is built on its first check
// from many goroutines at once, and copies of it, under the race detector.
func TestFirstChecksRace(t *testing.T) {
	a := MustParse("alice,bob dev,ops")
	b := a
	sub := NewSubject("carol", []string{"ops"})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			acl := &a
			if i%2 == 1 {
				acl = &b
			}
			if !acl.Allows(sub) || acl.Match(sub).Name != "ops" {
				t.Error("ops not allowed")
			}
		})
	}
	wg.Wait()
	if a.compiled() != b.compiled() {
		t.Fatal("copies built two sets")
	}
	if n := testing.AllocsPerRun(100, func() { a.Allows(sub) }); n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
