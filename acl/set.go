package acl

import (
	"cmp"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
)

// seed is fixed for the life of the process so that Subjects and Sets built
// at different times hash names alike.
var seed = maphash.MakeSeed()

// hash is maphash with the low 7 bits cleared, so that NewSubject can
// carry an index in them while it sorts plain integers.
func hash(s string) uint64 { return maphash.String(seed, s) &^ idxMask }

const idxMask = 127

// entry is a name with its hash and, in a Set, its rank in check order.
type entry struct {
	h    uint64
	rank uint64
	name string
}

// sortedEntries returns the users (or groups) of acls as entries sorted
// by hash, ranked in check order, keeping of entries with the same name
// the one with the lowest rank. n is their number; keys is scratch space
// of at least n.
//
// Moving 32-byte entries that hold a pointer is what sorting them cost:
// the sort orders integers instead (a name's hash's top bits, its position
// in check order in the low bits) and writes the entries once. A final
// insertion pass orders the rare names whose hashes differ only below the
// bits kept; names are compared only within a run of equal hashes.
func sortedEntries(acls []*ACL, groups bool, n int, keys []uint64) []entry {
	if n == 0 {
		return nil
	}
	list, kind := (*ACL).userList, MatchUser
	if groups {
		list, kind = (*ACL).groupList, MatchGroup
	}
	low := uint64(1)<<bits.Len(uint(n-1)) - 1
	keys = keys[:n]
	var startBuf [32]int
	starts := startBuf[:0] // position of each ACL's first name
	pos := 0
	for _, a := range acls {
		starts = append(starts, pos)
		for _, name := range list(a) {
			keys[pos] = hash(name)&^low | uint64(pos)
			pos++
		}
	}
	slices.Sort(keys)
	t := make([]entry, n)
	for j, k := range keys {
		p := int(k & low)
		li := 0
		if len(starts) > 1 {
			li, _ = slices.BinarySearch(starts, p+1)
			li--
		}
		i := p - starts[li]
		name := list(acls[li])[i]
		t[j] = entry{h: hash(name), rank: rank(li, kind, i), name: name}
	}
	for i := 1; i < len(t); i++ {
		for k := i; k > 0 && t[k].h < t[k-1].h; k-- {
			t[k], t[k-1] = t[k-1], t[k]
		}
	}
	out := t[:0]
	for i := 0; i < len(t); {
		j := i + 1
		for j < len(t) && t[j].h == t[i].h {
			j++
		}
		// t[i:j] share a hash, in rank order: keep each name's first.
		run := len(out)
		for _, e := range t[i:j] {
			if !slices.ContainsFunc(out[run:], func(kept entry) bool { return kept.name == e.name }) {
				out = append(out, e)
			}
		}
		i = j
	}
	clear(t[len(out):])
	return out
}

func (a *ACL) userList() []string  { return a.users }
func (a *ACL) groupList() []string { return a.groups }

// search returns the first index whose hash is at least h.
func search(t []entry, h uint64) int {
	lo, hi := 0, len(t)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t[m].h < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// find returns the position of name (hashed h) in t, or -1.
func find(t []entry, h uint64, name string) int {
	for i := search(t, h); i < len(t) && t[i].h == h; i++ {
		if t[i].name == name {
			return i
		}
	}
	return -1
}

// Subject is a user and its groups prepared for checks: the names are
// hashed and sorted once, so checking it against any number of ACLs does no
// allocation. A Subject is immutable and safe for concurrent use.
type Subject struct {
	user   string
	uh     uint64
	groups []string
	sorted []entry
	// bloom has two bits set per group hash: most groups a subject is not
	// in are ruled out with two tests instead of a binary search (about 1.5%
	// false positives at 64 groups).
	bloom [16]uint64
}

func bloomBits(h uint64) (w1 int, b1 uint64, w2 int, b2 uint64) {
	return int(h >> 60), 1 << (h >> 54 & 63), int(h >> 50 & 15), 1 << (h >> 44 & 63)
}

// UserSubjects prepares users without groups for checks, in one
// allocation: UserSubjects(us)[i] is NewSubject(us[i], nil).
func UserSubjects(users []string) []Subject {
	out := make([]Subject, len(users))
	for i, u := range users {
		out[i] = Subject{user: u, uh: hash(u)}
	}
	return out
}

// NewSubject prepares user and groups for checks. Duplicate groups are
// harmless.
func NewSubject(user string, groups []string) *Subject {
	s := &Subject{user: user, uh: hash(user), groups: groups}
	if len(groups) == 0 {
		return s
	}
	s.sorted = make([]entry, len(groups))
	for i, g := range groups {
		h := hash(g)
		s.sorted[i] = entry{h: h, name: g}
		w1, b1, w2, b2 := bloomBits(h)
		s.bloom[w1] |= b1
		s.bloom[w2] |= b2
	}
	// Sorting by hash alone is enough: find compares the names of every entry
	// with the hash it looks for, and a duplicate group left in place changes
	// no answer. Up to 128 groups, sort integers carrying each group's index
	// in their low bits: several times faster than sorting the entries.
	if len(groups) <= idxMask+1 {
		var keys [idxMask + 1]uint64
		for i, e := range s.sorted {
			keys[i] = e.h | uint64(i)
		}
		slices.Sort(keys[:len(groups)])
		for j, k := range keys[:len(groups)] {
			s.sorted[j] = entry{h: k &^ idxMask, name: groups[k&idxMask]}
		}
		return s
	}
	slices.SortFunc(s.sorted, func(a, b entry) int { return cmp.Compare(a.h, b.h) })
	return s
}

func (s *Subject) User() string { return s.user }

// Groups returns the groups as given to NewSubject; do not modify them.
func (s *Subject) Groups() []string { return s.groups }

// Kind says what kind of entry matched.
type Kind uint8

const (
	None          Kind = iota // no entry matched: the ACL denies
	MatchWildcard             // the "*" ACL
	MatchUser                 // an entry of the user list
	MatchGroup                // an entry of the group list
)

var kindNames = [...]string{None: "none", MatchWildcard: "wildcard", MatchUser: "user", MatchGroup: "group"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "none"
}

// Match tells which entry allowed a subject.
type Match struct {
	Kind  Kind   // None when nothing matched
	Name  string // the matching user or group name, or "*"
	List  int    // the index of the entry's ACL among those given to Union
	Index int    // the position of the entry in its user or group list
}

// Allowed reports whether the match allows access.
func (m Match) Allowed() bool { return m.Kind != None }

// Set is the union of ACLs compiled for lookup, remembering the order in
// which they would be checked one after the other: a match reports the
// entry that a walk through the ACLs in order (each checked wildcard, user,
// groups) would have found first. The zero Set allows nobody.
type Set struct {
	all     bool
	allRank uint64
	users   []entry
	groups  []entry  // sorted by hash, for lookups
	ranked  []ranked // the same groups sorted by rank, for scans in check order
}

// ranked is a group with its bloom filter bits worked out once.
type ranked struct {
	entry
	w1, w2 uint8
	b1, b2 uint64
}

const noRank = math.MaxUint64

func rank(list int, k Kind, index int) uint64 {
	return uint64(list)<<40 | uint64(k)<<32 | uint64(uint32(index))
}

func unrank(r uint64) (list int, k Kind, index int) {
	return int(r >> 40), Kind(r >> 32 & 0xff), int(uint32(r))
}

// Union compiles acls, in check order, into one Set. ACLs after the first
// wildcard are left out: they could never be the first to match.
func Union(acls ...*ACL) Set {
	var s Set
	for li, a := range acls {
		if a.all {
			s.all, s.allRank = true, rank(li, MatchWildcard, 0)
			acls = acls[:li]
			break
		}
	}
	nu, ng := 0, 0
	for _, a := range acls {
		nu += len(a.users)
		ng += len(a.groups)
	}
	keys := make([]uint64, max(nu, ng))
	s.users = sortedEntries(acls, false, nu, keys)
	s.groups = sortedEntries(acls, true, ng, keys)
	// Positions in check order are where an ACL's groups start plus the
	// group's index: placing each kept group there and closing the gaps
	// left by duplicates puts them in check order without sorting.
	var startBuf [32]int
	start := startBuf[:0]
	for li, n := 0, 0; li < len(acls); li++ {
		start = append(start, n)
		n += len(acls[li].groups)
	}
	s.ranked = make([]ranked, ng)
	for _, e := range s.groups {
		list, _, index := unrank(e.rank)
		w1, b1, w2, b2 := bloomBits(e.h)
		s.ranked[start[list]+index] = ranked{entry: e, w1: uint8(w1), w2: uint8(w2), b1: b1, b2: b2}
	}
	if len(s.groups) < ng {
		s.ranked = slices.DeleteFunc(s.ranked, func(r ranked) bool { return r.name == "" })
	}
	return s
}

// Allows reports whether any ACL of the set allows sub, without allocating.
func (s *Set) Allows(sub *Subject) bool {
	if s.all || find(s.users, sub.uh, sub.user) >= 0 {
		return true
	}
	r, _ := s.bestGroup(sub, true)
	return r != noRank
}

// Match returns the entry that allows sub and comes first in check order,
// or a Match of Kind None. It does not allocate.
func (s *Set) Match(sub *Subject) Match {
	best, name := uint64(noRank), ""
	if s.all {
		best, name = s.allRank, Wildcard
	}
	if i := find(s.users, sub.uh, sub.user); i >= 0 && s.users[i].rank < best {
		best, name = s.users[i].rank, s.users[i].name
	}
	if best>>40 != 0 || best == noRank { // a group of an earlier ACL could still come first
		if r, n := s.bestGroup(sub, false); r < best {
			best, name = r, n
		}
	}
	if best == noRank {
		return Match{}
	}
	list, kind, index := unrank(best)
	return Match{Kind: kind, Name: name, List: list, Index: index}
}

// bestGroup returns the lowest rank of a group shared by the set and the
// subject, or noRank. With first set it returns on the first shared group.
// When the set is not much longer than the subject's groups it scans the
// set in check order, ruling most groups out with the subject's bloom
// filter, and stops at the first shared one, which is the best; otherwise
// it looks each of the subject's groups up in the set.
func (s *Set) bestGroup(subject *Subject, first bool) (uint64, string) {
	best, name, sub := uint64(noRank), "", subject.sorted
	if len(sub) == 0 {
		return best, name
	}
	if len(s.ranked) <= 8*len(sub) {
		bloom := &subject.bloom
		for i := range s.ranked {
			e := &s.ranked[i]
			if bloom[e.w1&15]&e.b1 != 0 && bloom[e.w2&15]&e.b2 != 0 && find(sub, e.h, e.name) >= 0 {
				return e.rank, e.name
			}
		}
		return best, name
	}
	for _, g := range sub {
		if i := find(s.groups, g.h, g.name); i >= 0 && s.groups[i].rank < best {
			if best, name = s.groups[i].rank, s.groups[i].name; first {
				break
			}
		}
	}
	return best, name
}

// Empty reports whether the set allows nobody at all.
func (s *Set) Empty() bool { return !s.all && len(s.users) == 0 && len(s.groups) == 0 }
