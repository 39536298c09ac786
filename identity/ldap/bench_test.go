package ldap

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/hack/slapdtest"
)

// BenchmarkResolveCold measures one uncached lookup against a real slapd on
// loopback (slapd shares the CPUs with the benchmark). "pooled" reuses a
// bound connection, as a running resolver does; "newconn" opens, (StartTLS,)
// and binds a connection every time, as after an outage.
func BenchmarkResolveCold(b *testing.B) {
	s := newDirectory(b)
	cases := []struct {
		name    string
		mode    GroupSearch
		tls     bool
		newConn bool
	}{
		{name: "member/pooled", mode: GroupSearchMember},
		{name: "memberof/pooled", mode: GroupSearchMemberOf},
		{name: "memberuid/pooled", mode: GroupSearchMemberUID},
		{name: "member/starttls/pooled", mode: GroupSearchMember, tls: true},
		{name: "member/newconn", mode: GroupSearchMember, newConn: true},
		{name: "member/starttls/newconn", mode: GroupSearchMember, tls: true, newConn: true},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			cfg := baseConfig(s, bc.mode)
			if bc.tls {
				cfg.StartTLS, cfg.CAFile = true, s.CAFile
			}
			r := newResolverT(b, cfg)
			mustResolve(b, r, "alice", map[GroupSearch][]string{
				GroupSearchMember: {"dev", "ops"}, GroupSearchMemberOf: {"dev", "ops"}, GroupSearchMemberUID: {"pdev", "pops"},
			}[bc.mode]...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if bc.newConn {
					r.pool.flush()
				}
				if _, err := r.Resolve(ctx, "alice"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResolveManyGroups is one lookup of a user in 200 groups.
func BenchmarkResolveManyGroups(b *testing.B) {
	s := slapdtest.New(b)
	var ldif strings.Builder
	ldif.WriteString(person("many", "ou=people", 1))
	for i := range 200 {
		fmt.Fprintf(&ldif, "\ndn: cn=g%03d,ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: g%03d\nmember: uid=many,ou=people,dc=example,dc=org\n", i, i)
	}
	s.AddLDIF(b, ldif.String())
	for _, mode := range []GroupSearch{GroupSearchMember, GroupSearchMemberOf} {
		b.Run(string(mode), func(b *testing.B) {
			r := newResolverT(b, baseConfig(s, mode))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				in, err := r.Resolve(ctx, "many")
				if err != nil || len(in.Groups) != 200 {
					b.Fatal(in, err)
				}
			}
		})
	}
}

// BenchmarkResolveConcurrent runs lookups from GOMAXPROCS goroutines
// through pools of several sizes.
func BenchmarkResolveConcurrent(b *testing.B) {
	s := newDirectory(b)
	for _, size := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("poolsize=%d", size), func(b *testing.B) {
			cfg := baseConfig(s, GroupSearchMember)
			cfg.PoolSize = size
			r := newResolverT(b, cfg)
			users := []string{"alice", "bob", "carol"}
			b.ReportAllocs()
			b.SetParallelism(4) // 4×GOMAXPROCS goroutines: more than the pool has connections
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for i := 0; pb.Next(); i++ {
					if _, err := r.Resolve(ctx, users[i%len(users)]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
