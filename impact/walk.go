package impact

import (
	"slices"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/policy"
)

// The comparison walks the union of both queue trees once per right,
// depth first. For every subject (key) it keeps, along the path from root,
// how many ACLs of each policy name it, and the change (delta) that holds
// for it on the current queue. A change is recorded where a key's delta
// differs from its parent's; when it stops below (a break), the queues
// under the break are taken off the record's count. Everything done on a
// queue is logged and undone when the walk leaves it, so a step costs the
// entries of that queue's own ACLs, not its inherited sets. Only where
// the wildcard or a queue's presence changes are all live keys looked at.

const (
	oldP = 0
	newP = 1
)

type node struct {
	path     string
	parent   int32
	children []int32
	info     [2]*policy.QueueInfo
	size     int // queues in the subtree, this one included
	// own ACL entries as keys, per policy: the submit ACL's and the admin
	// ACL's (with the partition admin ACL's on root).
	submit, admin [2][]int32
}

type keyInfo struct {
	kind Kind
	name string
	// for given subjects: the user's key (-1 when no ACL names it) and
	// the keys of the groups some ACL names.
	user   int32
	groups []int32
	given  *Subject
}

type record struct {
	node   int32
	key    int32
	gained bool
	queues int
}

type undo struct {
	set bool // a cur change (else a count increment)
	c   uint8
	key int32
	d   int8
	rec int32
}

type walker struct {
	nodes []node
	keys  []keyInfo
	refs  map[int32][]int32 // named key -> given subjects naming it
	subj  []int32           // keys of given subjects

	// State of one walk (one right), indexed by key.
	admin  bool
	cnt    [2][]int32 // ACLs of each policy on the path naming the key
	active [2][]int32 // keys with a count above zero, in the order they got it
	cur    []int8     // the change in force on the current queue
	curRec []int32    // the record of that change, -1 for none
	nzPos  []int32    // position in nzList, -1 when cur is 0
	nzList []int32    // keys with a change in force
	log    []undo     // what to undo when the walk leaves a queue
	stamp  []uint32   // gen when last made a candidate
	gen    uint32
	cands  []int32 // keys to look at on the current queue
	recs   []record
}

// diffPartition also returns the keys: everyone, every user and group
// named in an ACL of either partition, and the given subjects.
func diffPartition(po, pn *policy.CompiledPartition, subjects []Subject) (PartitionDiff, []keyInfo) {
	var trees [2][]policy.QueueInfo
	nu, ng := 0, 0
	count := func(a *acl.ACL) {
		if a != nil {
			nu += len(a.Users())
			ng += len(a.Groups())
		}
	}
	for c, p := range [2]*policy.CompiledPartition{po, pn} {
		if p != nil {
			trees[c] = p.Tree()
			count(p.AdminACL())
			for i := range trees[c] {
				count(trees[c][i].SubmitACL)
				count(trees[c][i].AdminACL)
			}
		}
	}
	// Sized for names that mostly repeat between the two policies.
	w := &walker{keys: make([]keyInfo, 1, 1+(nu+ng)/2+len(subjects))}
	w.keys[0] = keyInfo{kind: Everyone, name: acl.Wildcard}
	users, groups := make(map[string]int32, nu/2), make(map[string]int32, ng/2)
	arena := make([]int32, 0, nu+ng+len(trees[0])+len(trees[1]))
	intern := func(m map[string]int32, k Kind, name string) int32 {
		if id, ok := m[name]; ok {
			return id
		}
		id := int32(len(w.keys))
		m[name] = id
		w.keys = append(w.keys, keyInfo{kind: k, name: name})
		return id
	}
	// ids appends the keys of the entries of acls to the arena and
	// returns them; the arena is sized so that it rarely grows (when it
	// does, slices returned before keep the old array).
	ids := func(acls ...*acl.ACL) []int32 {
		start := len(arena)
		for _, a := range acls {
			if a == nil {
				continue
			}
			if a.All() {
				arena = append(arena, 0)
			}
			for _, u := range a.Users() {
				arena = append(arena, intern(users, User, u))
			}
			for _, g := range a.Groups() {
				arena = append(arena, intern(groups, Group, g))
			}
		}
		return arena[start:len(arena):len(arena)]
	}
	byPath := make(map[string]int32, max(len(trees[0]), len(trees[1])))
	w.nodes = make([]node, 0, max(len(trees[0]), len(trees[1])))
	for c, p := range [2]*policy.CompiledPartition{po, pn} {
		if p == nil {
			continue
		}
		tree := trees[c]
		for i := range tree {
			qi := &tree[i]
			n, ok := byPath[qi.Path]
			if !ok {
				n = int32(len(w.nodes))
				byPath[qi.Path] = n
				parent := int32(-1)
				if qi.Parent != "" {
					parent = byPath[qi.Parent]
					w.nodes[parent].children = append(w.nodes[parent].children, n)
				}
				w.nodes = append(w.nodes, node{path: qi.Path, parent: parent})
			}
			nd := &w.nodes[n]
			nd.info[c] = qi
			nd.submit[c] = ids(qi.SubmitACL)
			if qi.Parent == "" {
				nd.admin[c] = ids(qi.AdminACL, p.AdminACL())
			} else {
				nd.admin[c] = ids(qi.AdminACL)
			}
		}
	}
	if len(w.nodes) == 0 {
		return PartitionDiff{Queues: []QueueDiff{}}, w.keys
	}
	for i := len(w.nodes) - 1; i >= 0; i-- {
		w.nodes[i].size++
		if p := w.nodes[i].parent; p >= 0 {
			w.nodes[p].size += w.nodes[i].size
		}
	}
	w.refs = map[int32][]int32{}
	for i := range subjects {
		s := &subjects[i]
		k := int32(len(w.keys))
		ki := keyInfo{kind: GivenSubject, name: s.User, user: -1, given: s}
		if id, ok := users[s.User]; ok {
			ki.user = id
			w.refs[id] = append(w.refs[id], k)
		}
		for _, g := range s.Groups {
			if id, ok := groups[g]; ok {
				ki.groups = append(ki.groups, id)
				w.refs[id] = append(w.refs[id], k)
			}
		}
		w.keys = append(w.keys, ki)
		w.subj = append(w.subj, k)
	}

	var recs []record
	for _, admin := range []bool{false, true} {
		w.reset(admin)
		w.visit(0, [2]bool{}, [2]bool{})
		for _, r := range w.recs {
			r.node = r.node<<1 | int32(b2i(admin))
			recs = append(recs, r)
		}
	}
	return w.result(recs), w.keys
}

func (w *walker) reset(admin bool) {
	n := len(w.keys)
	w.admin = admin
	for c := range 2 {
		w.cnt[c] = make([]int32, n)
		w.active[c] = w.active[c][:0]
	}
	w.cur = make([]int8, n)
	w.curRec = make([]int32, n)
	w.nzPos = slices.Repeat([]int32{-1}, n)
	w.nzList = w.nzList[:0]
	w.log = w.log[:0]
	w.stamp = make([]uint32, n)
	w.gen = 0
	w.recs = w.recs[:0]
}

func b2i(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

func (w *walker) inc(c int, k int32) {
	if w.cnt[c][k]++; w.cnt[c][k] == 1 {
		w.active[c] = append(w.active[c], k)
	}
	w.log = append(w.log, undo{c: uint8(c), key: k})
}

func (w *walker) setCur(k int32, d int8, rec int32) {
	w.log = append(w.log, undo{set: true, key: k, d: w.cur[k], rec: w.curRec[k]})
	w.put(k, d, rec)
}

func (w *walker) put(k int32, d int8, rec int32) {
	w.cur[k], w.curRec[k] = d, rec
	switch in := w.nzPos[k] >= 0; {
	case d != 0 && !in:
		w.nzPos[k] = int32(len(w.nzList))
		w.nzList = append(w.nzList, k)
	case d == 0 && in:
		i, last := w.nzPos[k], w.nzList[len(w.nzList)-1]
		w.nzList[i], w.nzPos[last] = last, i
		w.nzList = w.nzList[:len(w.nzList)-1]
		w.nzPos[k] = -1
	}
}

func (w *walker) rollback(mark int) {
	for i := len(w.log) - 1; i >= mark; i-- {
		u := w.log[i]
		if u.set {
			w.put(u.key, u.d, u.rec)
			continue
		}
		if w.cnt[u.c][u.key]--; w.cnt[u.c][u.key] == 0 {
			w.active[u.c] = w.active[u.c][:len(w.active[u.c])-1]
		}
	}
	w.log = w.log[:mark]
}

func (w *walker) cand(k int32) {
	if w.stamp[k] != w.gen {
		w.stamp[k] = w.gen
		w.cands = append(w.cands, k)
	}
}

func (w *walker) visit(n int32, parentPres, parentW [2]bool) {
	nd := &w.nodes[n]
	mark := len(w.log)
	w.gen++
	w.cands = w.cands[:0]
	var pres, wild [2]bool
	for c := range 2 {
		if nd.info[c] == nil {
			continue
		}
		pres[c] = true
		lists := [2][]int32{nd.admin[c], nd.submit[c]}
		if w.admin {
			lists[1] = nil
		}
		for _, l := range lists {
			for _, k := range l {
				w.inc(c, k)
				w.cand(k)
			}
		}
		wild[c] = w.cnt[c][0] > 0
	}
	if pres != parentPres || wild != parentW {
		// The wildcard or the queue's presence differs from the parent's:
		// every change in force may stop. Where only the wildcard
		// differs, no named key can start a change (going down, "*" is
		// only ever added, which hides named keys); where presence
		// differs, every name in force may.
		w.cand(0)
		for _, k := range w.nzList {
			w.cand(k)
		}
		for c := 0; c < 2 && pres != parentPres; c++ {
			for _, k := range w.active[c] {
				w.cand(k)
			}
		}
		for _, k := range w.subj {
			w.cand(k)
		}
	} else if len(w.subj) > 0 {
		for i := 0; i < len(w.cands); i++ {
			for _, s := range w.refs[w.cands[i]] {
				w.cand(s)
			}
		}
	}
	for _, k := range w.cands {
		d := w.delta(k, pres, wild)
		if d == w.cur[k] {
			continue
		}
		if w.cur[k] != 0 {
			w.recs[w.curRec[k]].queues -= nd.size
		}
		rec := int32(-1)
		if d != 0 {
			rec = int32(len(w.recs))
			w.recs = append(w.recs, record{node: n, key: k, gained: d > 0, queues: nd.size})
		}
		w.setCur(k, d, rec)
	}
	for _, c := range nd.children {
		w.visit(c, pres, wild)
	}
	w.rollback(mark)
}

// delta is +1 when the new policy grants the key the right on the
// current queue and the old does not, -1 for the reverse, 0 otherwise.
func (w *walker) delta(k int32, pres, wild [2]bool) int8 {
	var has [2]bool
	ki := &w.keys[k]
	switch ki.kind {
	case Everyone:
		has = wild
	case User, Group:
		if wild[oldP] || wild[newP] {
			return 0 // reported for everyone
		}
		for c := range 2 {
			has[c] = pres[c] && w.cnt[c][k] > 0
		}
	default:
		for c := range 2 {
			if !pres[c] {
				continue
			}
			has[c] = wild[c] || (ki.user >= 0 && w.cnt[c][ki.user] > 0)
			for _, g := range ki.groups {
				has[c] = has[c] || w.cnt[c][g] > 0
			}
		}
	}
	return b2i(has[newP]) - b2i(has[oldP])
}

func (w *walker) result(recs []record) PartitionDiff {
	byNode := map[int32][]Change{}
	for _, r := range recs {
		ki := &w.keys[r.key]
		c := Change{Gained: r.gained, Right: "submit", Kind: ki.kind, Name: ki.name, Queues: r.queues}
		if r.node&1 == 1 {
			c.Right = "admin"
		}
		if ki.given != nil {
			c.Groups = ki.given.Groups
		}
		byNode[r.node>>1] = append(byNode[r.node>>1], c)
	}
	d := PartitionDiff{Queues: []QueueDiff{}}
	var walk func(n int32)
	walk = func(n int32) {
		nd := &w.nodes[n]
		if cs := byNode[n]; len(cs) > 0 {
			sortChanges(cs)
			q := QueueDiff{Queue: nd.path, Below: nd.size - 1, Changes: cs}
			switch {
			case nd.info[oldP] == nil:
				q.Status = Added
			case nd.info[newP] == nil:
				q.Status = Removed
			}
			d.Queues = append(d.Queues, q)
		}
		for _, c := range nd.children {
			walk(c)
		}
	}
	walk(0)
	return d
}
