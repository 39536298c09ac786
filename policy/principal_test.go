package policy_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/policy"
)

// oracle decides as policy did when it copied every queue's inherited
// ACLs into one set: the chain's ACLs in check order (the queue's submit
// ACL, its admin ACL, then its parent's, ..., the partition admin ACL
// last) compiled with acl.Union, the first entry in that order deciding.
func oracle(p *policy.CompiledPartition, queue string, sub *acl.Subject, action policy.Action) policy.Decision {
	byPath := trees[p]
	if byPath == nil {
		byPath = map[string]policy.QueueInfo{}
		for _, q := range p.Tree() {
			byPath[q.Path] = q
		}
		trees[p] = byPath
	}
	var by []policy.Origin
	var acls []*acl.ACL
	for path := queue; path != ""; path = byPath[path].Parent {
		q := byPath[path]
		if action == policy.Submit && q.SubmitACL != nil {
			by = append(by, policy.Origin{Queue: path, ACL: policy.SubmitACL, Rule: q.SubmitACL})
			acls = append(acls, q.SubmitACL)
		}
		if q.AdminACL != nil {
			by = append(by, policy.Origin{Queue: path, ACL: policy.AdminACL, Rule: q.AdminACL})
			acls = append(acls, q.AdminACL)
		}
	}
	if ca := p.AdminACL(); ca != nil {
		by = append(by, policy.Origin{ACL: policy.ClusterAdminACL, Rule: ca})
		acls = append(acls, ca)
	}
	set := acl.Union(acls...)
	d := policy.Decision{Partition: p.Name(), Queue: queue, Action: action, User: sub.User()}
	if m := set.Match(sub); m.Allowed() {
		d.Allowed, d.By = true, policy.Grant{Origin: by[m.List], Match: m}
	}
	return d
}

// trees caches the queues of the partitions oracle has seen, by path.
var trees = map[*policy.CompiledPartition]map[string]policy.QueueInfo{}

// randomACL draws an ACL over small pools of users and groups, so that
// names recur across the tree: unset, empty, the wildcard, or a few
// entries, duplicates included.
func randomACL(r *rand.Rand, users, groups int) *acl.ACL {
	var a acl.ACL
	switch k := r.IntN(10); {
	case k < 3:
		return nil
	case k == 3:
		a = acl.MustParse(" ")
	case k == 4:
		a = acl.MustParse("*")
	default:
		var us, gs []string
		for range r.IntN(4) {
			us = append(us, fmt.Sprintf("u%d", r.IntN(users)))
		}
		for range r.IntN(5) {
			gs = append(gs, fmt.Sprintf("g%d", r.IntN(groups)))
		}
		a, _, _ = acl.Parse(strings.Join(us, ",")+" "+strings.Join(gs, ","), acl.YuniKorn)
	}
	return &a
}

func randomTree(r *rand.Rand, n, users, groups int) policy.Partition {
	root := &policy.Queue{Name: "root", SubmitACL: randomACL(r, users, groups), AdminACL: randomACL(r, users, groups)}
	all := []*policy.Queue{root}
	for i := 1; i < n; i++ {
		parent := all[r.IntN(len(all))]
		if r.IntN(3) == 0 { // deep chains as well as bushy trees
			parent = all[len(all)-1]
		}
		q := &policy.Queue{Name: fmt.Sprintf("q%d", i), SubmitACL: randomACL(r, users, groups), AdminACL: randomACL(r, users, groups)}
		parent.Children = append(parent.Children, q)
		all = append(all, q)
	}
	p := policy.Partition{Name: "default", Root: root}
	if r.IntN(2) == 0 {
		p.AdminACL = randomACL(r, users, groups)
	}
	return p
}

// TestPrincipalDecidesAsTheInheritedSets checks, on random trees and
// subjects, that a decision for a compiled subject (DecideAs), a decision
// that walks the chain (Decide) and the inherited-set oracle agree on
// everything: the answer, the ACL and the entry that decided, and its
// index in the check order.
func TestPrincipalDecidesAsTheInheritedSets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// into and intoForeign are filled in place by DecideInto, never
	// cleared: each still holds the previous decision (often a grant)
	// when it is asked the next, which must leave nothing of it behind.
	into := policy.Decision{Allowed: true, Partition: "x", Queue: "x", User: "x", By: policy.Grant{
		Origin: policy.Origin{Queue: "x", ACL: policy.SubmitACL}, Match: acl.Match{Kind: acl.MatchUser, Name: "x", List: 3, Index: 4}}}
	intoForeign := into
	for round := range 200 {
		clear(trees)
		users, groups := 1+r.IntN(8), 1+r.IntN(12)
		part := randomTree(r, 1+r.IntN(40), users, groups)
		s, err := policy.Compile([]policy.Partition{part})
		if err != nil {
			t.Fatal(err)
		}
		other, _ := policy.Compile([]policy.Partition{part}) // another snapshot
		p, _ := s.Partition("default")
		op, _ := other.Partition("default")
		for range 10 {
			var gs []string
			for range r.IntN(6) {
				gs = append(gs, fmt.Sprintf("g%d", r.IntN(groups+2)))
			}
			sub := acl.NewSubject(fmt.Sprintf("u%d", r.IntN(users+2)), gs)
			pr := p.Principal(sub)
			foreign := op.Principal(sub)
			attached := acl.NewSubject(sub.User(), sub.Groups())
			p.Principal(attached).Attach()
			elsewhere := acl.NewSubject(sub.User(), sub.Groups())
			op.Principal(elsewhere).Attach()
			for _, path := range p.Queues() {
				ref, _ := p.Lookup(path)
				for _, action := range []policy.Action{policy.Submit, policy.Admin} {
					want := oracle(p, path, sub, action)
					ref.DecideInto(&into, pr, action)
					ref.DecideInto(&intoForeign, foreign, action)
					for name, got := range map[string]policy.Decision{
						"DecideInto":          into,
						"DecideInto(foreign)": intoForeign,
						"Decide":              ref.Decide(sub, action),
						"DecideAs":            ref.DecideAs(pr, action),
						"DecideAs(foreign)":   ref.DecideAs(foreign, action),
						"Decide(attached)":    ref.Decide(attached, action),
						"Decide(elsewhere)":   ref.Decide(elsewhere, action),
					} {
						if got != want {
							t.Fatalf("round %d: %s %v %s for %s %v:\n got %+v\nwant %+v\ntree %s",
								round, name, action, path, sub.User(), sub.Groups(), got, want, dump(p))
						}
					}
				}
			}
			for _, qa := range p.Access(sub) {
				if want := oracle(p, qa.Queue, sub, policy.Submit); qa.Submit != want {
					t.Fatalf("Access %s submit: got %+v, want %+v", qa.Queue, qa.Submit, want)
				}
				if want := oracle(p, qa.Queue, sub, policy.Admin); qa.Admin != want {
					t.Fatalf("Access %s admin: got %+v, want %+v", qa.Queue, qa.Admin, want)
				}
			}
		}
	}
}

func dump(p *policy.CompiledPartition) string {
	var b strings.Builder
	str := func(a *acl.ACL) string {
		if a == nil {
			return "-"
		}
		return fmt.Sprintf("%q", a.String())
	}
	for _, q := range p.Tree() {
		fmt.Fprintf(&b, "\n  %s submit=%s admin=%s", q.Path, str(q.SubmitACL), str(q.AdminACL))
	}
	fmt.Fprintf(&b, "\n  partition admin=%s", str(p.AdminACL()))
	return b.String()
}

// TestPrincipalTooManyHitsWalks checks that a subject named by more
// entries than a Principal compiles is still decided right (by walking
// the chains).
func TestPrincipalTooManyHitsWalks(t *testing.T) {
	root := &policy.Queue{Name: "root"}
	for i := range policy.MaxPrincipalHits + 10 {
		a := acl.MustParse(" dev")
		if i == 7 {
			a = acl.MustParse("alice")
		}
		root.Children = append(root.Children, &policy.Queue{Name: fmt.Sprintf("q%d", i), SubmitACL: &a})
	}
	s, err := policy.Compile([]policy.Partition{{Name: "default", Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Partition("default")
	sub := acl.NewSubject("alice", []string{"dev"})
	pr := p.Principal(sub)
	for _, q := range []string{"root.q7", "root.q8", "root"} {
		got, _ := p.DecideAs(q, pr, policy.Submit)
		if want := oracle(p, q, sub, policy.Submit); got != want {
			t.Errorf("%s: got %+v, want %+v", q, got, want)
		}
	}
}

// TestDecideAsDoesNotAllocate checks the promise of DecideAs at depth 20
// with entries on every level.
func TestDecideAsDoesNotAllocate(t *testing.T) {
	s, path := deepTree(20, true)
	p, _ := s.Partition("default")
	pr := p.Principal(acl.NewSubject("carol", groups(64)))
	ref, _ := p.Lookup(path)
	if n := testing.AllocsPerRun(100, func() { sinkAllowed = ref.DecideAs(pr, policy.Submit).Allowed }); n != 0 {
		t.Errorf("DecideAs allocates %v times", n)
	}
	if !sinkAllowed {
		t.Error("denied")
	}
}

// TestCompileSharesInheritedEntries compiles a root ACL of 10,000 users
// inherited by 2,000 queues: what the queues inherit is not copied, so
// compiling (and preparing the index) allocates about what the entries
// take once, not once per queue.
func TestCompileSharesInheritedEntries(t *testing.T) {
	users := make([]string, 10000)
	for i := range users {
		users[i] = fmt.Sprintf("user-%05d", i)
	}
	big := acl.MustParse(strings.Join(users, ","))
	root := &policy.Queue{Name: "root", SubmitACL: &big}
	for i := range 2000 {
		a := acl.MustParse(fmt.Sprintf("own-%d team-%d", i, i))
		root.Children = append(root.Children, &policy.Queue{Name: fmt.Sprintf("q%d", i), SubmitACL: &a})
	}
	parts := []policy.Partition{{Name: "default", Root: root}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := policy.Compile(parts)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Partition("default")
	p.Prepare()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("compiling allocated %d MB: inherited entries are copied per queue", got>>20)
	}
	pr := p.Principal(acl.NewSubject("user-09999", nil))
	if d, _ := p.DecideAs("root.q1999", pr, policy.Submit); !d.Allowed || d.By.Queue != "root" || d.By.Match.Index != 9999 {
		t.Errorf("got %+v", d)
	}
}

// TestDecideAsOtherAction: an Action other than Admin is decided as
// Submit everywhere (Action.String, Decide); a compiled subject's decision
// on a user or group entry must not index by the action's value.
func TestDecideAsOtherAction(t *testing.T) {
	dev := acl.MustParse("alice dev")
	root := &policy.Queue{Name: "root", Children: []*policy.Queue{{Name: "ml", SubmitACL: &dev}}}
	s, err := policy.Compile([]policy.Partition{{Name: "default", Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Partition("default")
	for _, sub := range []*acl.Subject{acl.NewSubject("alice", nil), acl.NewSubject("bob", []string{"dev"})} {
		pr := p.Principal(sub)
		ref, _ := p.Lookup("root.ml")
		for _, action := range []policy.Action{2, -1} {
			want := ref.Decide(sub, action)
			if !want.Allowed {
				t.Fatalf("Decide %s %v: not allowed", sub.User(), action)
			}
			if got := ref.DecideAs(pr, action); got != want {
				t.Errorf("DecideAs %s %v: got %+v, want %+v", sub.User(), action, got, want)
			}
		}
	}
}
