package policy

import (
	"cmp"
	"slices"

	"github.com/usherhq/usher/acl"
)

// index is every ACL entry of a partition by name: for each user and
// group named anywhere, the ACLs that name it and where. The postings of
// one name are contiguous in one array (offsets in off), so the index is
// a few allocations whatever the number of entries.
type index struct {
	refs   []aclRef   // every ACL set, in depth-first order, submit before admin
	grants []refGrant // refs[i] as a decision names it
	users  names
	groups names
}

// refGrant is one ACL of refs as a decision reads it, all in one record
// so that the decision follows no pointer to the ACL's queue: where it
// comes from, its place in a check order (depth, admin: aclRef.before) and the base
// from which its index in a queue's chain is counted (aclRef.list: the
// queue's count for the action less base[Submit] or base[Admin]).
type refGrant struct {
	Origin
	depth int
	admin bool
	base  [2]int32
}

// before reports whether r comes before the ACL of o in a check order:
// the deeper queue first, a queue's submit ACL before its admin ACL.
func (r aclRef) before(o *refGrant) bool {
	if r.q.depth != o.depth {
		return r.q.depth > o.depth
	}
	return !r.admin && o.admin
}

type names struct {
	id   map[string]int32
	off  []int32 // postings of name id are post[off[id]:off[id+1]]
	post []posting
}

// posting is one entry: the ACL (index in refs) and the entry's position
// in its user or group list.
type posting struct{ ref, idx int32 }

func (n *names) of(name string) []posting {
	id, ok := n.id[name]
	if !ok {
		return nil
	}
	return n.post[n.off[id]:n.off[id+1]]
}

// Prepare builds what compiling a Principal needs (an index of every ACL
// entry by name), so that the first decision after a reload does not pay
// for it. It is safe to call more than once and concurrently.
func (p *CompiledPartition) Prepare() { p.index() }

func (p *CompiledPartition) index() *index {
	p.ixOnce.Do(func() {
		ix := &index{}
		nu, ng := 0, 0
		for _, q := range p.order {
			for _, r := range [2]aclRef{{q, false}, {q, true}} {
				if a := r.rule(); a != nil {
					ix.refs = append(ix.refs, r)
					nu += len(a.Users())
					ng += len(a.Groups())
				}
			}
		}
		ix.grants = make([]refGrant, len(ix.refs))
		for i, r := range ix.refs {
			ix.grants[i] = refGrant{
				Origin: Origin{r.q.path, r.name(), r.rule()},
				depth:  r.q.depth, admin: r.admin,
				base: [2]int32{Submit: r.q.nSubmit - int32(r.list(r.q, Submit)), Admin: r.q.nAdmin},
			}
		}
		ix.users.build(ix.refs, nu, (*acl.ACL).Users)
		ix.groups.build(ix.refs, ng, (*acl.ACL).Groups)
		p.ix = ix
	})
	return p.ix
}

// build indexes the lists that list returns of every ACL of refs, n
// entries in all: names are numbered in order of first appearance, then
// counted, then placed.
func (n *names) build(refs []aclRef, total int, list func(*acl.ACL) []string) {
	n.id = make(map[string]int32)
	ids := make([]int32, 0, total)
	var count []int32
	for _, r := range refs {
		for _, name := range list(r.rule()) {
			id, ok := n.id[name]
			if !ok {
				id = int32(len(count))
				n.id[name] = id
				count = append(count, 0)
			}
			count[id]++
			ids = append(ids, id)
		}
	}
	n.off = make([]int32, len(count)+1)
	for i, c := range count {
		n.off[i+1] = n.off[i] + c
	}
	next := count // reused as the next free slot of each name
	copy(next, n.off[:len(count)])
	n.post = make([]posting, total)
	k := 0
	for ri, r := range refs {
		for i := range list(r.rule()) {
			id := ids[k]
			n.post[next[id]] = posting{int32(ri), int32(i)}
			next[id]++
			k++
		}
	}
}

// MaxPrincipalHits is the most ACL entries naming a subject's user and
// groups that a Principal compiles; a subject named by more is decided by
// walking each queue's chain, as QueueRef.Decide does, which costs more
// with depth but keeps a Principal's memory bounded (about 40 bytes per
// entry).
const MaxPrincipalHits = 1024

// Principal is a subject compiled against one partition of one snapshot:
// for each queue of the partition, the ACL entry that decides for it is
// one binary search over the subtrees where the subject's entries apply.
// Build it once per user and configuration (usher's engine keeps it with
// the user's cached groups) and decide with QueueRef.DecideAs, at the same
// cost at any depth and however many entries the queue inherits, without
// allocating. A Principal is immutable and safe for concurrent use.
type Principal struct {
	sub    *acl.Subject
	id     *partitionID
	walk   bool  // too many hits: decide by walking chains
	hits   []hit // the entry deciding for the subject in each ACL that names it
	submit segments
	admin  segments
	// cluster is the partition admin ACL's answer.
	cluster acl.Match
}

// hit is the first entry, in check order, of one ACL (refs[ref]) that
// names the subject: its user entry, else its first group entry.
type hit struct {
	ref  int32
	kind acl.Kind
	idx  int32
}

// segments map a queue's depth-first position to the hit deciding there:
// val[i] holds from start[i] to start[i+1], -1 for none. Subtrees nest, so
// the positions where an ACL's queue is the nearest named ancestor are a
// few runs, and the runs of all hits together are at most 2 per hit + 1.
type segments struct {
	start []int32
	val   []int32
}

func (s *segments) at(pos int32) int32 {
	i, j := 0, len(s.start)
	for i < j {
		h := int(uint(i+j) >> 1)
		if s.start[h] <= pos {
			i = h + 1
		} else {
			j = h
		}
	}
	if i == 0 {
		return -1
	}
	return s.val[i-1]
}

func (s *segments) emit(at, val int32) {
	if n := len(s.start); n > 0 && s.start[n-1] == at {
		s.val[n-1] = val
		if n > 1 && s.val[n-2] == val {
			s.start, s.val = s.start[:n-1], s.val[:n-1]
		}
		return
	} else if n > 0 && s.val[n-1] == val {
		return
	}
	s.start = append(s.start, at)
	s.val = append(s.val, val)
}

// Subject returns the subject the Principal was compiled from.
func (pr *Principal) Subject() *acl.Subject { return pr.sub }

// Attach keeps the Principal with its subject, so that every decision
// for that Subject in the partition it was compiled against (placement,
// application checks, QueueRef.Decide) answers as DecideAs does. Attach
// a Principal only to a Subject no other partition's Principal is
// attached to at the same time; the last attached wins.
func (pr *Principal) Attach() { pr.sub.Attach(pr.id, pr) }

// attached returns the Principal compiled against p and attached to sub
// (Principal.Attach), or nil.
func (p *CompiledPartition) attached(sub *acl.Subject) *Principal {
	if pr, ok := sub.Attached(p.id).(*Principal); ok && pr.sub == sub {
		return pr
	}
	return nil
}

// Principal compiles sub against the partition. It costs a map lookup per
// name of sub and a sort of the entries naming them; see Principal.
func (p *CompiledPartition) Principal(sub *acl.Subject) *Principal {
	ix := p.index()
	pr := &Principal{sub: sub, id: p.id}
	if ca := p.clusterAdmin; ca != nil {
		pr.cluster = ca.Match(sub)
	}
	n := len(ix.users.of(sub.User()))
	for _, g := range sub.Groups() {
		n += len(ix.groups.of(g))
	}
	if n > MaxPrincipalHits {
		pr.walk = true
		return pr
	}
	if n == 0 {
		return pr
	}
	hits := make([]hit, 0, n)
	for _, po := range ix.users.of(sub.User()) {
		hits = append(hits, hit{po.ref, acl.MatchUser, po.idx})
	}
	for _, g := range sub.Groups() {
		for _, po := range ix.groups.of(g) {
			hits = append(hits, hit{po.ref, acl.MatchGroup, po.idx})
		}
	}
	// One hit per ACL, the first in its check order: the user, else the
	// group listed first. Sorted by ACL, hits are in depth-first order.
	slices.SortFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(a.ref, b.ref); c != 0 {
			return c
		}
		if c := cmp.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	hits = slices.CompactFunc(hits, func(a, b hit) bool { return a.ref == b.ref })
	pr.hits = slices.Clip(hits)
	pr.submit = ix.segments(hits, false)
	pr.admin = ix.segments(hits, true)
	return pr
}

// segments lays the hits' ACLs over the depth-first positions of their
// queues' subtrees, the nearest in check order winning: for the submit
// chain every ACL (a queue's submit ACL before its admin ACL), for the
// admin chain admin ACLs only.
func (ix *index) segments(hits []hit, adminOnly bool) segments {
	// At most two runs start per hit (where it begins, where it ends), and
	// one more at the end; the runs go in exact slices, the stack of open
	// subtrees is as deep as the tree.
	run := make([]int32, 2*(2*len(hits)+1))
	s := segments{start: run[: 0 : 2*len(hits)+1], val: run[2*len(hits)+1 : 2*len(hits)+1]}
	type open struct{ end, val int32 }
	var stack []open
	pop := func(upTo int32) {
		for len(stack) > 0 && stack[len(stack)-1].end <= upTo {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			val := int32(-1)
			if len(stack) > 0 {
				val = stack[len(stack)-1].val
			}
			s.emit(top.end, val)
		}
	}
	var last *compiledQueue
	for i, h := range hits {
		r := ix.refs[h.ref]
		if (adminOnly && !r.admin) || r.q == last {
			continue // the queue's submit ACL already decides in its subtree
		}
		last = r.q
		pop(r.q.pos)
		stack = append(stack, open{r.q.end, int32(i)})
		s.emit(r.q.pos, int32(i))
	}
	pop(1<<31 - 1)
	if len(s.start) == 0 {
		return segments{}
	}
	return s
}

// DecideAs is Decide for a compiled subject: one binary search over the
// Principal's runs and a comparison with the queue's nearest wildcard,
// whatever the queue's depth and the entries it inherits. It does not
// allocate. A Principal compiled against another partition or snapshot is
// decided as Decide decides its subject.
func (r QueueRef) DecideAs(pr *Principal, action Action) Decision {
	var d Decision
	r.DecideInto(&d, pr, action)
	return d
}

// DecideInto is DecideAs writing the decision to *d, which it overwrites
// whole: a caller that keeps the Decision in a larger value (the engine's
// Result) fills it in place instead of copying 18 words back.
func (r QueueRef) DecideInto(d *Decision, pr *Principal, action Action) {
	if pr.id != r.p.id || pr.walk {
		*d = r.walk(pr.sub, action)
		return
	}
	// Every field of *d is written once: the Decision is 18 words, and
	// zeroing it before filling it in was a sixth of the cost.
	q := r.q
	d.Partition, d.Queue, d.Action, d.User = r.p.name, q.path, action, pr.sub.User()
	segs, wild := &pr.submit, &q.wildSubmit
	if action == Admin {
		segs, wild = &pr.admin, &q.wildAdmin
	}
	var h *hit
	var g *refGrant
	if v := segs.at(q.pos); v >= 0 {
		h = &pr.hits[v]
		g = &r.p.ix.grants[h.ref]
	}
	switch {
	case wild.q != nil && (g == nil || wild.before(g)):
		d.Allowed = true
		d.By = Grant{
			Origin: Origin{wild.q.path, wild.name(), wild.rule()},
			Match:  acl.Match{Kind: acl.MatchWildcard, Name: acl.Wildcard, List: wild.list(q, action)},
		}
	case g != nil:
		name := g.Rule.Groups()
		if h.kind == acl.MatchUser {
			name = g.Rule.Users()
		}
		// Any action but Admin is Submit (Action.String, aclRef.list):
		// base is not indexed by the action's value.
		list := q.nSubmit - g.base[Submit]
		if action == Admin {
			list = q.nAdmin - g.base[Admin]
		}
		d.Allowed = true
		d.By = Grant{Origin: g.Origin, Match: acl.Match{Kind: h.kind, Name: name[h.idx], List: int(list), Index: int(h.idx)}}
	case pr.cluster.Allowed():
		m := pr.cluster
		m.List = int(q.nSubmit)
		if action == Admin {
			m.List = int(q.nAdmin)
		}
		d.Allowed = true
		d.By = Grant{Origin: Origin{"", ClusterAdminACL, r.p.clusterAdmin}, Match: m}
	default:
		d.Allowed = false
		d.By = Grant{}
	}
}

// DecideAs is Decide for a compiled subject; see QueueRef.DecideAs.
func (p *CompiledPartition) DecideAs(queue string, pr *Principal, action Action) (Decision, error) {
	r, err := p.Lookup(queue)
	if err != nil {
		return Decision{Partition: p.name, Queue: queue, Action: action, User: pr.sub.User()}, err
	}
	return r.DecideAs(pr, action), nil
}
