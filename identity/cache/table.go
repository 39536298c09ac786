package cache

import (
	"hash/maphash"
	"sync/atomic"
)

// table is the cache's index of entries by user name: an open-addressing
// hash table (linear probing) that readers search without a lock and that
// is written only with Cache.mu held.
//
// It is written by hand, in place of the sync.Map it replaced, because a
// hit is on every admission review's path: sync.Map hashes an interface
// key (type switch, then the string) and walks a trie of atomic nodes,
// about 30 ns on the project's machine, where this is one seeded hash and
// usually one slot (BenchmarkCachedLookup; docs/benchmarks.md, "Decision
// cost at the floor"). The seed is random per table, so names chosen to
// collide cannot be prepared in advance.
//
// Readers see either a slot's old or its new content: an entry being
// replaced or removed may still be returned to a lookup racing with the
// change, as with sync.Map. Entries are never modified where a reader
// reads them (user and hash are set before the entry is published).
type table struct {
	seed maphash.Seed
	cur  atomic.Pointer[slots]
	// live counts entries, used the slots that hold an entry or a
	// tombstone; both are guarded by Cache.mu.
	live, used int
}

type slots struct {
	mask uint64
	s    []atomic.Pointer[entry]
}

// tombstone marks a slot whose entry was removed: a probe goes on past it.
var tombstone = &entry{}

// minSlots is the smallest table; tables are powers of two at most half
// used (entries and tombstones), so every probe ends at an empty slot.
const minSlots = 16

func newTable() *table {
	t := &table{seed: maphash.MakeSeed()}
	t.cur.Store(newSlots(minSlots))
	return t
}

func newSlots(n int) *slots {
	return &slots{mask: uint64(n - 1), s: make([]atomic.Pointer[entry], n)}
}

func (t *table) hash(user string) uint64 { return maphash.String(t.seed, user) }

// load returns user's entry, or nil. It takes no lock.
func (t *table) load(user string) *entry {
	h := t.hash(user)
	sl := t.cur.Load()
	for i := h & sl.mask; ; i = (i + 1) & sl.mask {
		e := sl.s[i].Load()
		if e == nil {
			return nil
		}
		if e.hash == h && e.user == user && e != tombstone {
			return e
		}
	}
}

// store puts e in place of the entry for e.user, or adds it. Cache.mu is
// held.
func (t *table) store(e *entry) {
	e.hash = t.hash(e.user)
	sl := t.cur.Load()
	free := -1
	for i := e.hash & sl.mask; ; i = (i + 1) & sl.mask {
		cur := sl.s[i].Load()
		switch {
		case cur == tombstone:
			if free < 0 {
				free = int(i)
			}
			continue
		case cur == nil:
			if free < 0 {
				if 2*(t.used+1) > len(sl.s) {
					t.grow()
					t.store(e)
					return
				}
				free = int(i)
				t.used++
			}
			sl.s[free].Store(e)
			t.live++
			return
		case cur.hash == e.hash && cur.user == e.user:
			sl.s[i].Store(e)
			return
		}
	}
}

// remove deletes user's entry, if any. Cache.mu is held.
func (t *table) remove(user string) {
	h := t.hash(user)
	sl := t.cur.Load()
	for i := h & sl.mask; ; i = (i + 1) & sl.mask {
		e := sl.s[i].Load()
		if e == nil {
			return
		}
		if e != tombstone && e.hash == h && e.user == user {
			sl.s[i].Store(tombstone)
			t.live--
			return
		}
	}
}

// grow moves the entries to a new array with room for as many again
// (dropping the tombstones) and publishes it; readers still probing the
// old array finish there. Cache.mu is held.
func (t *table) grow() {
	n := minSlots
	for n < 4*(t.live+1) {
		n *= 2
	}
	old, next := t.cur.Load(), newSlots(n)
	for i := range old.s {
		e := old.s[i].Load()
		if e == nil || e == tombstone {
			continue
		}
		j := e.hash & next.mask
		for next.s[j].Load() != nil {
			j = (j + 1) & next.mask
		}
		next.s[j].Store(e)
	}
	t.used = t.live
	t.cur.Store(next)
}
