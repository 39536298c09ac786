package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/hack/benchcpu"
	"github.com/usherhq/usher/policy"
)

// scale is one point of the axes a configuration grows on.
type scale struct {
	groups  int // groups of the deciding user
	depth   int // depth of the queue decided on
	entries int // ACL entries in the whole configuration
	queues  int // queues in the whole configuration
}

func (s scale) String() string {
	return fmt.Sprintf("groups=%d/depth=%d/entries=%d/queues=%d", s.groups, s.depth, s.entries, s.queues)
}

// scaleYAML writes the configuration of s: a chain root.d1...dD (the
// queue decided on), the other queues flat under root, every queue with a
// submit ACL of about entries/queues names (half users, half groups) and
// an admin ACL of one user, so the chain's inherited sets hold
// depth × that many entries. The deciding user, carol, gets her groups
// from the partition's resolver (type test, cached) and is allowed by her
// last group, named on root; every one of her other groups is named on
// one of the flat queues, so the configuration knows all her groups.
func scaleYAML(s scale) string {
	per := max(s.entries/s.queues, 2)
	acl := func(q string, extra ...string) string {
		var us, gs []string
		for j := range per / 2 {
			us = append(us, fmt.Sprintf("u-%s-%d", q, j))
			gs = append(gs, fmt.Sprintf("x-%s-%d", q, j))
		}
		gs = append(gs, extra...)
		return fmt.Sprintf("submitacl: %q\n", strings.Join(us, ",")+" "+strings.Join(gs, ","))
	}
	carol := make([]string, s.groups)
	for i := range carol {
		carol[i] = fmt.Sprintf("g%04d", i)
	}
	flat := max(s.queues-1-s.depth, 1)
	named := make([][]string, flat)
	for i, g := range carol[:len(carol)-1] {
		named[i%flat] = append(named[i%flat], g)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "partitions:\n  - name: default\n    usergroupresolver:\n      type: test\n      users:\n        carol: [%s]\n    queues:\n", strings.Join(carol, ","))
	indent := "      "
	fmt.Fprintf(&b, "%s- name: root\n%s  %s%s  adminacl: \"admin-root\"\n%s  queues:\n", indent, indent, acl("root", carol[len(carol)-1]), indent, indent)
	for i := range flat {
		fmt.Fprintf(&b, "%s    - name: f%d\n%s      %s", indent, i, indent, acl(fmt.Sprint("f", i), named[i]...))
	}
	for d := 1; d <= s.depth; d++ {
		ind := indent + strings.Repeat("    ", d)
		fmt.Fprintf(&b, "%s- name: d%d\n%s  %s%s  adminacl: \"admin-%d\"\n", ind, d, ind, acl(fmt.Sprint("d", d)), ind, d)
		if d < s.depth {
			fmt.Fprintf(&b, "%s  queues:\n", ind)
		}
	}
	return b.String()
}

func scalePath(depth int) string {
	p := "root"
	for d := 1; d <= depth; d++ {
		p += fmt.Sprintf(".d%d", d)
	}
	return p
}

// scaleAxes are the points of BenchmarkDecideCached and
// BenchmarkLoadScale: one axis varies, the others stay at the base
// (64 groups, depth 1, 1,000 entries, 100 queues).
func scaleAxes() []scale {
	base := scale{groups: 64, depth: 1, entries: 1000, queues: 100}
	var out []scale
	for _, g := range []int{1, 16, 64, 256, 1024} {
		s := base
		s.groups = g
		out = append(out, s)
	}
	for _, d := range []int{2, 5, 10, 20} {
		s := base
		s.depth = d
		out = append(out, s)
	}
	for _, e := range []int{10, 10000, 100000} {
		s := base
		s.entries = e
		out = append(out, s)
	}
	for _, q := range []int{1000, 10000, 100000} {
		s := base
		s.queues = q
		s.entries = max(s.entries, 2*q)
		out = append(out, s)
	}
	return out
}

// BenchmarkDecideCached is the whole decision engine.Check makes for a
// user whose groups are in the partition's cache (the webhook and
// /v1/access ask the same): partition and queue lookup, the cache hit,
// the user's Subject made and the queue's chain walked, with the
// deciding entry a group on root.
//
//	go test -run '^$' -bench DecideCached -benchmem -count 6 ./engine/
func BenchmarkDecideCached(b *testing.B) {
	ctx := context.Background()
	for _, s := range scaleAxes() {
		b.Run(s.String(), func(b *testing.B) {
			c, err := config.Parse("scale.yaml", []byte(scaleYAML(s)))
			if err != nil {
				b.Fatal(err)
			}
			e, err := engine.New(c, nil)
			if err != nil {
				b.Fatal(err)
			}
			req := engine.Request{Queue: scalePath(s.depth), User: "carol", Action: policy.Submit}
			for range 2 { // fill the cache
				res, err := e.Check(ctx, req)
				if err != nil || !res.Allowed || res.By.Queue != "root" || len(res.Identity.Groups) != s.groups {
					b.Fatalf("%+v, %v", res, err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			m, n := benchcpu.Start(), 0
			for b.Loop() {
				res, _ := e.Check(ctx, req)
				sinkAllowed = res.Allowed
				n++
			}
			m.Stop(b, n)
		})
	}
}

var sinkAllowed bool

// BenchmarkLoadScale is loading the configurations of
// BenchmarkDecideCached: parse, validate, lint and compile
// (config.Parse), then the engine's generation (engine.New).
//
//	go test -run '^$' -bench LoadScale -benchmem -count 6 ./engine/
func BenchmarkLoadScale(b *testing.B) {
	for _, s := range scaleAxes() {
		src := []byte(scaleYAML(s))
		b.Run(s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := config.Parse("scale.yaml", src)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := engine.New(c, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecideGiven is engine.Check with the user's groups supplied
// with the request (mode given, as the API server supplies them to the
// webhooks), the same groups on every request.
//
//	go test -run '^$' -bench DecideGiven -benchmem -count 6 ./engine/
func BenchmarkDecideGiven(b *testing.B) {
	ctx := context.Background()
	for _, g := range []int{1, 64, 1024} {
		s := scale{groups: g, depth: 10, entries: 1000, queues: 100}
		b.Run(s.String(), func(b *testing.B) {
			c, err := config.Parse("scale.yaml", []byte(scaleYAML(s)))
			if err != nil {
				b.Fatal(err)
			}
			e, err := engine.New(c, nil)
			if err != nil {
				b.Fatal(err)
			}
			groups := make([]string, g)
			for i := range groups {
				groups[i] = fmt.Sprintf("g%04d", i)
			}
			req := engine.Request{Queue: scalePath(s.depth), User: "dave", Groups: groups, Action: policy.Submit}
			if res, err := e.Check(ctx, req); err != nil || !res.Allowed || res.By.Queue != "root" {
				b.Fatalf("%+v, %v", res, err)
			}
			b.ReportAllocs()
			m, n := benchcpu.Start(), 0
			for b.Loop() {
				res, _ := e.Check(ctx, req)
				sinkAllowed = res.Allowed
				n++
			}
			m.Stop(b, n)
		})
	}
}

// BenchmarkDecideFirst is engine.Check for a user the engine has not
// decided for yet (a user's first decision): the groups supplied with
// the request (mode given), a different user on every request, out of
// 20,000 taking turns.
//
//	go test -run '^$' -bench DecideFirst -benchmem -count 6 ./engine/
func BenchmarkDecideFirst(b *testing.B) {
	ctx := context.Background()
	for _, d := range []int{1, 10} {
		s := scale{groups: 64, depth: d, entries: 1000, queues: 100}
		b.Run(s.String(), func(b *testing.B) {
			c, err := config.Parse("scale.yaml", []byte(scaleYAML(s)))
			if err != nil {
				b.Fatal(err)
			}
			e, err := engine.New(c, nil)
			if err != nil {
				b.Fatal(err)
			}
			groups := make([]string, s.groups)
			for i := range groups {
				groups[i] = fmt.Sprintf("g%04d", i)
			}
			users := make([]string, 20000)
			for i := range users {
				users[i] = fmt.Sprintf("user-%05d", i)
			}
			req := engine.Request{Queue: scalePath(s.depth), User: users[0], Groups: groups, Action: policy.Submit}
			if res, err := e.Check(ctx, req); err != nil || !res.Allowed || res.By.Queue != "root" {
				b.Fatalf("%+v, %v", res, err)
			}
			b.ReportAllocs()
			m, n := benchcpu.Start(), 0
			for b.Loop() {
				req.User = users[n%len(users)]
				res, _ := e.Check(ctx, req)
				sinkAllowed = res.Allowed
				n++
			}
			m.Stop(b, n)
		})
	}
}

// BenchmarkCompileScale is the policy's part of loading the
// configurations of BenchmarkDecideCached: policy.Compile, from
// partitions already parsed.
//
//	go test -run '^$' -bench CompileScale -benchmem -count 6 ./engine/
func BenchmarkCompileScale(b *testing.B) {
	for _, s := range scaleAxes() {
		c, err := config.Parse("scale.yaml", []byte(scaleYAML(s)))
		if err != nil {
			b.Fatal(err)
		}
		specs := make([]policy.Partition, len(c.Partitions))
		for i := range c.Partitions {
			specs[i] = c.Partitions[i].Partition
		}
		b.Run(s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := policy.Compile(specs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
