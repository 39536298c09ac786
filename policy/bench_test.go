package policy_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/hack/benchcpu"
	"github.com/usherhq/usher/policy"
)

func groups(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("grp-%02d", i)
	}
	return out
}

// deepTree is a chain of depth queues under root, the deciding group
// granted at the root. With perLevel every queue also has its own small
// ACLs (2 users, 2 groups, an admin), which the check passes over;
// without, only root has an ACL.
func deepTree(depth int, perLevel bool) (*policy.Snapshot, string) {
	submit := make([]string, depth+1)
	admin := make([]string, depth+1)
	for i := range submit {
		submit[i], admin[i] = "-", "-"
		if perLevel {
			submit[i] = fmt.Sprintf("u%d,v%d g%d,h%d", i, i, i, i)
			admin[i] = fmt.Sprintf("a%d", i)
		}
	}
	submit[0] = "alice grp-63"
	s, err := policy.Compile([]policy.Partition{{Name: "default", Root: chain(submit, admin)}})
	if err != nil {
		panic(err)
	}
	path := "root"
	for i := 1; i <= depth; i++ {
		path += fmt.Sprintf(".q%d", i)
	}
	return s, path
}

// BenchmarkSubmitCheck compares a decision at depth 1, 10 and 20 for a
// user in 64 groups, the way the engine decides: the chain is walked
// from the queue to root, so the cost grows with depth and with the
// entries passed over.
//
//	go test -run '^$' -bench SubmitCheck -benchmem -count 6 ./policy/
func BenchmarkSubmitCheck(b *testing.B) {
	sub := acl.NewSubject("carol", groups(64))
	for _, c := range submitCases {
		s, path := deepTree(c.depth, c.perLevel)
		p, _ := s.Partition("default")
		ref, _ := p.Lookup(path)
		b.Run(c.name(), func(b *testing.B) {
			if d, _ := p.Decide(path, sub, policy.Submit); !d.Allowed || d.By.Queue != "root" {
				b.Fatalf("wrong decision %+v", d)
			}
			b.ReportAllocs()
			m, n := benchcpu.Start(), 0
			for b.Loop() {
				d, _ := p.Decide(path, sub, policy.Submit)
				sinkAllowed = d.Allowed
				n++
			}
			m.Stop(b, n)
		})
		b.Run(c.name()+"/looked-up", func(b *testing.B) {
			b.ReportAllocs()
			m, n := benchcpu.Start(), 0
			for b.Loop() {
				sinkAllowed = ref.Decide(sub, policy.Submit).Allowed
				n++
			}
			m.Stop(b, n)
		})
	}
}

// BenchmarkSubmitCheckFirst is a user's first decision: the user's
// Subject (64 groups) made, then the queue (looked up) decided.
//
//	go test -run '^$' -bench SubmitCheckFirst -benchmem -count 6 ./policy/
func BenchmarkSubmitCheckFirst(b *testing.B) {
	gs := groups(64)
	for _, c := range submitCases[:3] {
		s, path := deepTree(c.depth, c.perLevel)
		p, _ := s.Partition("default")
		ref, _ := p.Lookup(path)
		b.Run(c.name(), func(b *testing.B) {
			b.ReportAllocs()
			m, n := benchcpu.Start(), 0
			for b.Loop() {
				sinkAllowed = ref.Decide(acl.NewSubject("carol", gs), policy.Submit).Allowed
				n++
			}
			m.Stop(b, n)
		})
	}
}

// BenchmarkAccess10kQueues is what a user in 64 groups may do on each
// queue of the configuration of BenchmarkCompile10kQueues (GET
// /v1/access/queues, usher access): every queue decided twice.
func BenchmarkAccess10kQueues(b *testing.B) {
	s, err := policy.Compile(generate(10000, 100000))
	if err != nil {
		b.Fatal(err)
	}
	p, _ := s.Partition("default")
	gs := groups(64)
	for i := range 8 {
		gs[i] = fmt.Sprintf("group%d-%d", i*7%500, i%5)
	}
	sub := acl.NewSubject("user77-1", gs)
	b.ReportAllocs()
	for b.Loop() {
		if len(p.Access(sub)) != 10000 {
			b.Fatal("queues missing")
		}
	}
}

type submitCase struct {
	depth    int
	perLevel bool
}

var submitCases = []submitCase{{1, true}, {10, true}, {20, true}, {1, false}, {10, false}, {20, false}}

func (c submitCase) name() string {
	name := fmt.Sprintf("depth=%d", c.depth)
	if !c.perLevel {
		name += "/root-acl-only"
	}
	return name
}

// GenerateTree returns partitions with n queues under root in three levels
// and entries ACL entries in all (half users, half groups).
func generate(queues, entries int) []policy.Partition {
	perQueue := entries / queues
	var mk func(name string, i int) *policy.Queue
	idx := 0
	mk = func(name string, i int) *policy.Queue {
		var users, grps []string
		for j := range perQueue / 2 {
			users = append(users, fmt.Sprintf("user%d-%d", idx, j))
			grps = append(grps, fmt.Sprintf("group%d-%d", idx%500, j))
		}
		idx++
		a := acl.MustParse(strings.Join(users, ",") + " " + strings.Join(grps, ","))
		return &policy.Queue{Name: name, SubmitACL: &a}
	}
	root := mk("root", 0)
	for i := 0; idx < queues; i++ {
		l1 := mk(fmt.Sprintf("dept%d", i), i)
		root.Children = append(root.Children, l1)
		for j := 0; j < 10 && idx < queues; j++ {
			l2 := mk(fmt.Sprintf("team%d", j), j)
			l1.Children = append(l1.Children, l2)
			for k := 0; k < 9 && idx < queues; k++ {
				l2.Children = append(l2.Children, mk(fmt.Sprintf("q%d", k), k))
			}
		}
	}
	return []policy.Partition{{Name: "default", Root: root}}
}

// BenchmarkCompile10kQueues compiles 10,000 queues holding 100,000 ACL
// entries (the YAML side is measured in package config), and reports the
// heap the compiled snapshot keeps (live-MB, after a collection).
func BenchmarkCompile10kQueues(b *testing.B) {
	parts := generate(10000, 100000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := policy.Compile(parts)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := policy.Compile(parts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MB")
}

var sinkAllowed bool
