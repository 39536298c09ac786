package ldap

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkResolveNested measures one uncached lookup of nina (three
// levels: emea-team, data-eng-emea, data-eng) at depths 0, 1 and 2, and of
// wide (60 groups, two chunks at level 1) at depth 2, over a pooled
// connection to slapd on loopback.
func BenchmarkResolveNested(b *testing.B) {
	s := newNestedDirectory(b)
	for _, bc := range []struct {
		user   string
		depth  int
		groups int
	}{{"nina", 0, 2}, {"nina", 1, 3}, {"nina", 2, 4}, {"wide", 2, 61}} {
		b.Run(fmt.Sprintf("%s/depth=%d", bc.user, bc.depth), func(b *testing.B) {
			cfg := baseConfig(s, GroupSearchMember)
			cfg.NestedGroups = bc.depth
			r := newResolverT(b, cfg)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				in, err := r.Resolve(ctx, bc.user)
				if err != nil || len(in.Groups) != bc.groups {
					b.Fatal(in, err)
				}
			}
		})
	}
}
