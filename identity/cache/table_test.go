package cache

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTable checks the cache's index against a plain map through adds,
// replacements and removals, past several growths and with tombstones
// reused, and that the table never fills beyond half, so that every
// probe ends.
func TestTable(t *testing.T) {
	tab := newTable()
	want := map[string]*entry{}
	check := func(when string) {
		t.Helper()
		for u, e := range want {
			if got := tab.load(u); got != e {
				t.Fatalf("%s: load(%q) = %p, want %p", when, u, got, e)
			}
		}
		for _, u := range []string{"", "nobody", "user-x"} {
			if got := tab.load(u); got != nil {
				t.Fatalf("%s: load(%q) = %+v, want nil", when, u, got)
			}
		}
		if tab.live != len(want) {
			t.Fatalf("%s: live = %d, want %d", when, tab.live, len(want))
		}
		if n := len(tab.cur.Load().s); 2*tab.used > n {
			t.Fatalf("%s: %d of %d slots used", when, tab.used, n)
		}
	}
	put := func(u string) {
		e := &entry{user: u}
		tab.store(e)
		want[u] = e
	}
	for i := range 5000 {
		put(fmt.Sprint("user-", i))
	}
	check("after adding")
	for i := 0; i < 5000; i += 3 {
		put(fmt.Sprint("user-", i)) // a new answer replaces the old
	}
	check("after replacing")
	for i := 0; i < 5000; i += 2 {
		u := fmt.Sprint("user-", i)
		tab.remove(u)
		delete(want, u)
	}
	tab.remove("never-there")
	check("after removing")
	// Removed users come back into tombstones, or a rebuilt table.
	for round := range 20 {
		for i := 0; i < 5000; i += 2 {
			u := fmt.Sprint("user-", i)
			if round%2 == 0 {
				put(u)
			} else {
				tab.remove(u)
				delete(want, u)
			}
		}
	}
	check("after churn")
	if n := len(tab.cur.Load().s); n > 4*16384 {
		t.Errorf("%d slots for %d users: tombstones are not reclaimed", n, len(want))
	}
}

// TestTableConcurrent has readers look users up while the cache's
// writer adds, replaces and removes them (run with -race): a reader gets
// the user's entry or nil, never another user's.
func TestTableConcurrent(t *testing.T) {
	tab := newTable()
	var mu sync.Mutex // what Cache.mu is to the table
	const users = 2000
	name := func(i int) string { return fmt.Sprint("u", i) }
	var stop atomic.Bool
	var wg sync.WaitGroup
	var found atomic.Int64
	for r := range 4 {
		wg.Go(func() {
			for i := r; !stop.Load(); i = (i + 7) % users {
				u := name(i)
				if e := tab.load(u); e != nil {
					if e.user != u {
						t.Errorf("load(%q) returned %q's entry", u, e.user)
						return
					}
					found.Add(1)
				}
			}
		})
	}
	for round := range 30 {
		for i := range users {
			mu.Lock()
			if (i+round)%3 == 0 {
				tab.remove(name(i))
			} else {
				tab.store(&entry{user: name(i)})
			}
			mu.Unlock()
		}
	}
	stop.Store(true)
	wg.Wait()
	if found.Load() == 0 {
		t.Error("readers never found an entry")
	}
}

// BenchmarkCachedLookup is the cache's index on a hit against the
// sync.Map it replaced, with 10,000 users cached.
//
//	go test -run '^$' -bench CachedLookup -count 6 ./identity/cache/
func BenchmarkCachedLookup(b *testing.B) {
	const users = 10000
	tab := newTable()
	var m sync.Map
	for i := range users {
		e := &entry{user: fmt.Sprint("user-", i)}
		tab.store(e)
		m.Store(e.user, e)
	}
	user := fmt.Sprint("user-", users/2)
	var sink *entry
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			sink = tab.load(user)
		}
	})
	b.Run("sync.Map", func(b *testing.B) {
		for b.Loop() {
			v, _ := m.Load(user)
			sink = v.(*entry)
		}
	})
	if sink == nil {
		b.Fatal("not found")
	}
}

// TestTableKeepsPresentUsers: a user whose entry stays in the table is
// found by every lookup, while the writer adds and removes others around
// it (tombstones reused, the table grown and rebuilt under the readers).
func TestTableKeepsPresentUsers(t *testing.T) {
	tab := newTable()
	const kept, churn = 50, 3000
	for i := range kept {
		tab.store(&entry{user: fmt.Sprint("kept-", i)})
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for i := r; !stop.Load(); i = (i + 1) % kept {
				u := fmt.Sprint("kept-", i)
				if e := tab.load(u); e == nil || e.user != u {
					t.Errorf("load(%q) = %v while it is in the table", u, e)
					return
				}
			}
		})
	}
	for round := range 20 {
		for i := range churn {
			u := fmt.Sprint("churn-", i)
			if (i+round)%2 == 0 {
				tab.remove(u)
			} else {
				tab.store(&entry{user: u})
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}
