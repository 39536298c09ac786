package acl

import (
	"fmt"
	"strings"
	"testing"
)

func groupsN(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

var sink bool

// benchACL is a realistic queue ACL: a few users and a few groups.
var benchACL = MustParse("alice,bob,system:serviceaccount:spark:driver dev,ops,team-63,data.eng")

func BenchmarkCheck(b *testing.B) {
	cases := []struct {
		name string
		sub  *Subject
		want bool
	}{
		{"UserHit", NewSubject("system:serviceaccount:spark:driver", groupsN(64, "grp-")), true},
		{"GroupHit64", NewSubject("carol", append(groupsN(63, "grp-"), "team-63")), true},
		{"Miss64", NewSubject("mallory", groupsN(64, "grp-")), false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if benchACL.Allows(c.sub) != c.want {
				b.Fatal("wrong answer")
			}
			b.ReportAllocs()
			for b.Loop() {
				sink = benchACL.Allows(c.sub)
			}
		})
		b.Run(c.name+"/Match", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = benchACL.Match(c.sub).Allowed()
			}
		})
	}
}

// BenchmarkParse measures the parser on a long list.
func BenchmarkParse(b *testing.B) {
	text := strings.Join(groupsN(50, "user"), ",") + " " + strings.Join(groupsN(50, "group"), ",")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse(text, YuniKorn); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewSubject64(b *testing.B) {
	g := groupsN(64, "grp-")
	b.ReportAllocs()
	for b.Loop() {
		_ = NewSubject("carol", g)
	}
}

// acl100k is an ACL of 100,000 entries: 50,000 users and 50,000 groups.
func acl100k() string {
	return strings.Join(groupsN(50000, "user"), ",") + " " + strings.Join(groupsN(50000, "group"), ",")
}

// BenchmarkParse100k parses an ACL of 100,000 entries (docs/benchmarks.md,
// "Loading and memory").
func BenchmarkParse100k(b *testing.B) {
	text := acl100k()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse(text, YuniKorn); err != nil {
			b.Fatal(err)
		}
	}
}
