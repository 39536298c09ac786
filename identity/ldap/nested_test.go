package ldap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	goldap "github.com/go-ldap/ldap/v3"

	"github.com/usherhq/usher/hack/slapdtest"
)

// nestedTree is a three-level tree and a cycle, over the fixture:
//
//	nina  in emea-team, in data-eng-emea, in data-eng (three levels)
//	ole   in data-eng directly
//	cy    in cyc-a; cyc-a in cyc-b and cyc-b in cyc-a (a cycle)
//	nina  in Data-Science (mixed case)
//	wide  in 60 groups wide-00..59, each in wide-top (more than one chunk)
var nestedTree = person("nina", "ou=people", 2001) + person("ole", "ou=people", 2002) + person("cy", "ou=people", 2003) +
	person("wide", "ou=people", 2004) + `
dn: cn=emea-team,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: emea-team
member: uid=nina,ou=people,dc=example,dc=org

dn: cn=data-eng-emea,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: data-eng-emea
member: cn=emea-team,ou=groups,dc=example,dc=org

dn: cn=data-eng,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: data-eng
member: cn=data-eng-emea,ou=groups,dc=example,dc=org
member: uid=ole,ou=people,dc=example,dc=org

dn: cn=Data-Science,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: Data-Science
member: uid=nina,ou=people,dc=example,dc=org

dn: cn=cyc-a,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: cyc-a
member: uid=cy,ou=people,dc=example,dc=org

dn: cn=cyc-b,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: cyc-b
member: cn=cyc-a,ou=groups,dc=example,dc=org
` + wideGroups()

func wideGroups() string {
	var b strings.Builder
	b.WriteString(`
dn: cn=wide-top,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: wide-top
`)
	for i := range 60 {
		fmt.Fprintf(&b, "member: cn=wide-%02d,ou=groups,dc=example,dc=org\n", i)
	}
	for i := range 60 {
		fmt.Fprintf(&b, "\ndn: cn=wide-%02d,ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: wide-%02d\nmember: uid=wide,ou=people,dc=example,dc=org\n", i, i)
	}
	return b.String()
}

// newNestedDirectory starts a slapd with the fixture and nestedTree, the
// cycle closed once both groups exist.
func newNestedDirectory(t testing.TB) *slapdtest.Server {
	t.Helper()
	s := newDirectory(t)
	s.AddLDIF(t, nestedTree)
	// Close the cycle: cyc-a gets cyc-b as a member.
	c := s.Dial(t)
	defer c.Close()
	if err := c.Bind(slapdtest.RootDN, s.RootPassword); err != nil {
		t.Fatal(err)
	}
	mod := goldap.NewModifyRequest("cn=cyc-a,ou=groups,dc=example,dc=org", nil)
	mod.Add("member", []string{"cn=cyc-b,ou=groups,dc=example,dc=org"})
	if err := c.Modify(mod); err != nil {
		t.Fatalf("closing the cycle: %v", err)
	}
	return s
}

// resolveSources resolves user and returns "group(source)" for each group.
func resolveSources(t *testing.T, r *Resolver, user string) []string {
	t.Helper()
	in, err := r.Resolve(context.Background(), user)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", user, err)
	}
	out := make([]string, len(in.Groups))
	for i, g := range in.Groups {
		out[i] = g + "(" + string(in.SourceOf(i)) + ")"
	}
	return out
}

func TestNestedGroups(t *testing.T) {
	s := newNestedDirectory(t)
	for _, mode := range []GroupSearch{GroupSearchMember, GroupSearchMemberOf} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := baseConfig(s, mode)
			cfg.GroupBaseDN = slapdtest.GroupsDN
			for _, tc := range []struct {
				depth    int
				user     string
				want     []string
				searches uint64 // searches of the lookup, the user's included
			}{
				// Today's behaviour: only the user's own groups.
				{depth: 0, user: "nina", want: []string{"Data-Science(ldap)", "emea-team(ldap)"}},
				{depth: 1, user: "nina", want: []string{"Data-Science(ldap)", "data-eng-emea(ldap via emea-team)", "emea-team(ldap)"}},
				// A nested member granted through two levels.
				{depth: 2, user: "nina", searches: 2, want: []string{"Data-Science(ldap)", "data-eng(ldap via emea-team > data-eng-emea)",
					"data-eng-emea(ldap via emea-team)", "emea-team(ldap)"}},
				// Deeper than the tree: the search stops when a level finds nothing new.
				{depth: 10, user: "nina", searches: 3, want: []string{"Data-Science(ldap)", "data-eng(ldap via emea-team > data-eng-emea)",
					"data-eng-emea(ldap via emea-team)", "emea-team(ldap)"}},
				{depth: 2, user: "ole", searches: 1, want: []string{"data-eng(ldap)"}},
				// The cycle ends: cyc-a is found again at level 2 and not expanded.
				{depth: 10, user: "cy", searches: 2, want: []string{"cyc-a(ldap)", "cyc-b(ldap via cyc-a)"}},
				// 60 groups at level 0: two chunks for level 1, one more level finds nothing.
				{depth: 2, user: "wide", searches: 2 + 1, want: nil},
			} {
				t.Run(fmt.Sprintf("%s depth %d", tc.user, tc.depth), func(t *testing.T) {
					c := cfg
					c.NestedGroups = tc.depth
					proxy := newCounter(t, strings.TrimPrefix(s.URL, "ldap://"))
					c.URLs = []string{proxy.URL}
					r := newResolverT(t, c)
					got := resolveSources(t, r, tc.user)
					if tc.user == "wide" {
						if len(got) != 61 || got[60] != "wide-top(ldap via wide-00)" {
							t.Fatalf("wide: %d groups, last %q", len(got), got[len(got)-1])
						}
					} else if !slices.Equal(got, tc.want) {
						t.Fatalf("groups of %s = %q, want %q", tc.user, got, tc.want)
					}
					if tc.searches == 0 {
						return
					}
					// One user search, one search for the own groups (member) or
					// none (memberof), then tc.searches nested searches.
					want := 1 + tc.searches
					if mode == GroupSearchMember {
						want++
					}
					if got := proxy.searches.Load(); got != want {
						t.Errorf("%d searches, want %d (one per level and chunk)", got, want)
					}
				})
			}
		})
	}
}

func TestLowerCaseGroups(t *testing.T) {
	s := newNestedDirectory(t)
	cfg := baseConfig(s, GroupSearchMember)
	cfg.LowerCaseGroups = true
	cfg.NestedGroups = 1
	r := newResolverT(t, cfg)
	got := resolveSources(t, r, "nina")
	want := []string{"data-eng-emea(ldap via emea-team)", "data-science(ldap)", "emea-team(ldap)"}
	if !slices.Equal(got, want) {
		t.Fatalf("groups = %q, want %q", got, want)
	}
}

// TestInChainFilter checks the filter of Active Directory's in-chain
// search; slapd does not implement the matching rule, so the search itself
// cannot be run here.
func TestInChainFilter(t *testing.T) {
	got := InChainFilter("(objectClass=group)", "member", `CN=Doe\, Jane (ops),OU=People,DC=corp,DC=example`)
	want := `(&(objectClass=group)(member:1.2.840.113556.1.4.1941:=CN=Doe\5c, Jane \28ops\29,OU=People,DC=corp,DC=example))`
	if got != want {
		t.Fatalf("InChainFilter =\n %s\nwant\n %s", got, want)
	}
	if _, err := goldap.CompileFilter(got); err != nil {
		t.Fatalf("the filter does not compile: %v", err)
	}
}

func TestNestedConfig(t *testing.T) {
	base := Config{URLs: []string{"ldap://127.0.0.1"}, UserBaseDN: "dc=x", GroupBaseDN: "dc=x"}
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"depth too deep", func(c *Config) { c.NestedGroups = MaxNestedGroups + 1 }, "nestedgroups"},
		{"negative depth", func(c *Config) { c.NestedGroups = -1 }, "nestedgroups"},
		{"memberuid cannot nest", func(c *Config) { c.GroupSearch = GroupSearchMemberUID; c.NestedGroups = 2 }, "nestedgroups"},
		{"memberuid no inchain", func(c *Config) { c.GroupSearch = GroupSearchMemberUID; c.InChain = true }, "inchain"},
		{"inchain and depth", func(c *Config) { c.InChain = true; c.NestedGroups = 2 }, "nestedgroups"},
		{"memberof nesting needs groupbasedn", func(c *Config) { c.GroupSearch = GroupSearchMemberOf; c.GroupBaseDN = ""; c.NestedGroups = 1 }, "groupbasedn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			err := c.Validate()
			fe, ok := err.(*FieldError)
			if !ok || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
	// memberof with nesting accepts the member search's settings.
	c := base
	c.GroupSearch, c.NestedGroups, c.MemberAttr = GroupSearchMemberOf, 2, "member"
	if err := c.Validate(); err != nil {
		t.Fatalf("memberof with nestedgroups: %v", err)
	}
	if d := c.WithDefaults(); d.GroupFilter != "(objectClass=groupOfNames)" {
		t.Errorf("memberof nested GroupFilter default = %q", d.GroupFilter)
	}
}

// TestInChainSearchRuns runs the in-chain search against slapd, which does
// not implement the matching rule and finds nothing with it: the lookup
// still succeeds with the user's own groups, in three searches (user,
// groups, in-chain). What Active Directory returns cannot be tested here.
func TestInChainSearchRuns(t *testing.T) {
	s := newNestedDirectory(t)
	for _, mode := range []GroupSearch{GroupSearchMember, GroupSearchMemberOf} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := baseConfig(s, mode)
			cfg.GroupBaseDN = slapdtest.GroupsDN
			cfg.InChain = true
			proxy := newCounter(t, strings.TrimPrefix(s.URL, "ldap://"))
			cfg.URLs = []string{proxy.URL}
			r := newResolverT(t, cfg)
			got := resolveSources(t, r, "nina")
			if want := []string{"Data-Science(ldap)", "emea-team(ldap)"}; !slices.Equal(got, want) {
				t.Fatalf("groups = %q, want %q", got, want)
			}
			want := uint64(3)
			if mode == GroupSearchMemberOf {
				want = 2
			}
			if n := proxy.searches.Load(); n != want {
				t.Errorf("%d searches, want %d", n, want)
			}
		})
	}
}
