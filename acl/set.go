package acl

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// seed is fixed for the life of the process so that Subjects and Sets built
// at different times hash names alike.
var seed = maphash.MakeSeed()

// hash is maphash with the low 7 bits cleared, so that NewSubject can
// carry an index in them while it sorts plain integers.
func hash(s string) uint64 { return maphash.String(seed, s) &^ idxMask }

const idxMask = 127

// entry is a name with its hash and its index in its ACL list.
type entry struct {
	h     uint64
	index int
	name  string
}

// sortedEntries returns names as entries sorted by hash, then index.
func sortedEntries(names []string) []entry {
	if len(names) == 0 {
		return nil
	}
	t := make([]entry, len(names))
	for i, n := range names {
		t[i] = entry{h: hash(n), index: i, name: n}
	}
	slices.SortFunc(t, func(a, b entry) int { return cmp.Or(cmp.Compare(a.h, b.h), cmp.Compare(a.index, b.index)) })
	return t
}

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
	List  int    // the index of the entry's ACL in check order (policy sets it)
	Index int    // the position of the entry in its user or group list
}

// Allowed reports whether the match allows access.
func (m Match) Allowed() bool { return m.Kind != None }

// Set is an ACL compiled for lookup. The zero Set allows nobody.
type Set struct {
	all    bool
	users  []entry
	groups []entry  // sorted by hash, for lookups
	ranked []ranked // the same groups in list order, for scans in check order
}

// ranked is a group with its bloom filter bits worked out once.
type ranked struct {
	entry
	w1, w2 uint8
	b1, b2 uint64
}

// compile builds the Set of a.
func compile(a *ACL) Set {
	s := Set{all: a.all, users: sortedEntries(a.users), groups: sortedEntries(a.groups)}
	s.ranked = make([]ranked, len(s.groups))
	for _, e := range s.groups {
		w1, b1, w2, b2 := bloomBits(e.h)
		s.ranked[e.index] = ranked{entry: e, w1: uint8(w1), w2: uint8(w2), b1: b1, b2: b2}
	}
	return s
}

// Allows reports whether the ACL allows sub, without allocating.
func (s *Set) Allows(sub *Subject) bool { return s.Match(sub).Allowed() }

// Match returns the entry that allows sub first in check order (wildcard,
// user, the first listed group), or a Match of Kind None. It does not allocate.
func (s *Set) Match(sub *Subject) Match {
	if s.all {
		return Match{Kind: MatchWildcard, Name: Wildcard}
	}
	if i := find(s.users, sub.uh, sub.user); i >= 0 {
		return Match{Kind: MatchUser, Name: s.users[i].name, Index: s.users[i].index}
	}
	if e := s.firstGroup(sub); e != nil {
		return Match{Kind: MatchGroup, Name: e.name, Index: e.index}
	}
	return Match{}
}

// firstGroup returns the first listed group the subject is in, or nil.
// When the list is not much longer than the subject's groups it scans the
// list in order, ruling most groups out with the subject's bloom filter;
// otherwise it looks each of the subject's groups up in the list.
func (s *Set) firstGroup(subject *Subject) *entry {
	sub := subject.sorted
	if len(sub) == 0 {
		return nil
	}
	if len(s.ranked) <= 8*len(sub) {
		bloom := &subject.bloom
		for i := range s.ranked {
			e := &s.ranked[i]
			if bloom[e.w1&15]&e.b1 != 0 && bloom[e.w2&15]&e.b2 != 0 && find(sub, e.h, e.name) >= 0 {
				return &e.entry
			}
		}
		return nil
	}
	var best *entry
	for _, g := range sub {
		if i := find(s.groups, g.h, g.name); i >= 0 && (best == nil || s.groups[i].index < best.index) {
			best = &s.groups[i]
		}
	}
	return best
}
