package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/identity"
)

// resolverYAML is a partition whose usergroupresolver block is block,
// indented under the key (six spaces).
func resolverYAML(block string) string {
	return "partitions:\n  - name: default\n    groups: merge\n    usergroupresolver:\n" + block + "    queues:\n      - name: root\n"
}

func TestLookupPolicySettings(t *testing.T) {
	c := mustParse(t, resolverYAML(`      type: test
      users:
        alice: [dev]
      skip: ["system:serviceaccount:", "system:node:"]
      unknownuser: given-groups
      namemapping:
        - pattern: 'oidc:([^@]+)@example\.com'
          replacement: $1
        - pattern: '(?P<short>[^@]+)@EXAMPLE\.COM'
          replacement: ${short}
      overrides:
        spark-svc: [spark, etl]
        nobody: []
`))
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings: %v", diagStrings(c.Warnings))
	}
	pol := c.Partitions[0].Resolver.Policy
	if !slices.Equal(pol.Skip, []string{"system:serviceaccount:", "system:node:"}) || pol.Unknown != identity.UnknownGivenGroups ||
		len(pol.Mapping) != 2 || !slices.Equal(pol.Overrides["spark-svc"], []string{"spark", "etl"}) {
		t.Fatalf("policy = %+v", pol)
	}
	if _, ok := pol.Overrides["nobody"]; !ok {
		t.Error("an override with no groups is dropped")
	}
	for user, want := range map[string]string{"oidc:alice@example.com": "alice", "alice@EXAMPLE.COM": "alice", "alice": "alice"} {
		if got, _, err := pol.DirectoryName(user); err != nil || got != want {
			t.Errorf("DirectoryName(%q) = %q, %v; want %q", user, got, err, want)
		}
	}

	// Without the keys: system: users are skipped, unknown users denied.
	def := mustParse(t, resolverYAML("      type: test\n      users: {alice: [dev]}\n")).Partitions[0].Resolver.Policy
	if !slices.Equal(def.Skip, identity.DefaultSkip) || def.Unknown != identity.UnknownDeny || def.Mapping != nil {
		t.Fatalf("default policy = %+v", def)
	}
	// skip: [] looks everyone up.
	none := mustParse(t, resolverYAML("      type: test\n      users: {alice: [dev]}\n      skip: []\n")).Partitions[0].Resolver.Policy
	if none.Skip == nil || len(none.Skip) != 0 {
		t.Fatalf("skip: [] = %q", none.Skip)
	}
}

// TestLookupPolicyLint checks that each new setting's mistakes are
// reported at FILE:LINE:COL of the value they are about.
func TestLookupPolicyLint(t *testing.T) {
	const head = "      type: test\n      users: {alice: [dev]}\n" // lines 5-6
	for _, tc := range []struct {
		name  string
		block string
		want  []string // prefixes of the diagnostics, in order
		warn  bool
	}{
		{name: "unknownuser value", block: head + "      unknownuser: allow\n",
			want: []string{`q.yaml:7:20: unknownuser "allow": want deny or given-groups`}},
		{name: "skip not a list", block: head + "      skip: everyone\n",
			want: []string{`q.yaml:7:13: skip must be a list of name prefixes`}},
		{name: "skip empty prefix", block: head + "      skip: [\"system:\", \"\"]\n",
			want: []string{`q.yaml:7:25: skip: an empty prefix would skip every user`}},
		{name: "skip prefix no name has", block: head + "      skip: [\"a b\"]\n",
			want: []string{`q.yaml:7:14: skip: no user name starts with "a b"`}},
		{name: "skip redundant", block: head + "      skip: [\"system:\", \"system:node:\"]\n", warn: true,
			want: []string{`q.yaml:7:25: warning: skip: "system:node:" has no effect`}},
		{name: "pattern does not compile", block: head + "      namemapping:\n        - pattern: 'oidc:(.+'\n          replacement: $1\n",
			want: []string{`q.yaml:8:20: namemapping rule 1: pattern "oidc:(.+": missing closing )`}},
		{name: "rule without replacement", block: head + "      namemapping:\n        - pattern: 'x'\n",
			want: []string{`q.yaml:8:11: namemapping rule 1 needs pattern`}},
		{name: "unknown key in a rule", block: head + "      namemapping:\n        - match: 'x'\n",
			want: []string{`q.yaml:8:11: namemapping rule 1: unknown key "match"`}},
		{name: "replacement names a missing group", block: head + "      namemapping:\n        - pattern: 'oidc:(.+)'\n          replacement: $2\n",
			want: []string{`q.yaml:9:24: namemapping rule 1: replacement "$2" refers to group 2, but the pattern has 1`}},
		{name: "replacement $1x", block: head + "      namemapping:\n        - pattern: 'oidc:(.+)'\n          replacement: $1x\n",
			want: []string{`q.yaml:9:24: namemapping rule 1: replacement "$1x" refers to the group "1x"`}},
		{name: "shadowed by a catch-all", warn: true, block: head + "      namemapping:\n        - pattern: '(.+)'\n          replacement: $1\n        - pattern: 'oidc:(.+)'\n          replacement: $1\n",
			want: []string{`q.yaml:10:20: warning: namemapping rule 2 can never apply: rule 1 (line 8), tried first, matches every name`}},
		{name: "shadowed by a wider prefix rule", warn: true, block: head + "      namemapping:\n        - pattern: 'oidc:(.+)'\n          replacement: $1\n        - pattern: 'oidc:([^@]+)@example\\.com'\n          replacement: $1\n",
			want: []string{`q.yaml:10:20: warning: namemapping rule 2 can never apply: rule 1 (line 8), tried first, matches every name tried`}},
		{name: "literal shadowed", warn: true, block: head + "      namemapping:\n        - pattern: '[a-z]+'\n          replacement: u\n        - pattern: 'bob'\n          replacement: robert\n",
			want: []string{`q.yaml:10:20: warning: namemapping rule 2 can never apply: rule 1 (line 8), tried first, matches "bob"`}},
		{name: "pattern needs a comma", warn: true, block: head + "      namemapping:\n        - pattern: 'CN=(.+),OU=x'\n          replacement: $1\n",
			want: []string{`q.yaml:8:20: warning: namemapping rule 1 can never apply: every name it matches contains ','`}},
		{name: "pattern matching a skipped prefix", warn: true, block: head + "      namemapping:\n        - pattern: 'system:serviceaccount:(.+)'\n          replacement: $1\n",
			want: []string{`q.yaml:8:20: warning: namemapping rule 1 can never apply: every name it matches starts with "system:"`}},
		{name: "override groups not a list", block: head + "      overrides:\n        svc: etl\n",
			want: []string{`q.yaml:8:14: overrides: the groups of svc must be a list`}},
		{name: "override bad group", block: head + "      overrides:\n        svc: [\"a,b\"]\n",
			want: []string{`q.yaml:8:15: overrides: groups of svc: name "a,b" contains a comma`}},
		{name: "override bad user", block: head + "      overrides:\n        \"a b\": [etl]\n",
			want: []string{`q.yaml:8:9: overrides: user: name "a b" contains whitespace`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse("q.yaml", []byte(resolverYAML(tc.block)))
			var got []string
			if tc.warn {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				got = diagStrings(c.Warnings)
			} else {
				var ie *config.InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("want an *InvalidError, got %v", err)
				}
				got = diagStrings(ie.Diagnostics)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("diagnostic %d = %q, want prefix %q", i, got[i], w)
				}
			}
		})
	}
}

// TestLDAPSettingsLint checks that the ldap block's mistakes, the nested
// group settings among them, are reported at the key they are about.
func TestLDAPSettingsLint(t *testing.T) {
	const head = "      type: ldap\n      ldap:\n        urls: [ldap://127.0.0.1:389]\n        binddn: cn=svc,dc=x\n        bindpasswordfile: /run/pw\n        userbasedn: ou=people,dc=x\n" // lines 5-10
	for _, tc := range []struct {
		name, block, want string
	}{
		{"nestedgroups too deep", "        groupbasedn: ou=groups,dc=x\n        nestedgroups: 11\n",
			`q.yaml:12:23: ldap: nestedgroups 11 is not a depth from 0 to 10`},
		{"nestedgroups with memberuid", "        groupsearch: memberuid\n        groupbasedn: ou=groups,dc=x\n        nestedgroups: 2\n",
			`q.yaml:13:23: ldap: nestedgroups needs groups that list their member groups by DN`},
		{"inchain with nestedgroups", "        groupbasedn: ou=groups,dc=x\n        inchain: true\n        nestedgroups: 2\n",
			`q.yaml:13:23: ldap: nestedgroups is not used with inchain`},
		{"inchain with memberuid", "        groupsearch: memberuid\n        groupbasedn: ou=groups,dc=x\n        inchain: true\n",
			`q.yaml:13:18: ldap: inchain expands member DNs`},
		{"memberof nesting without groupbasedn", "        groupsearch: memberof\n        nestedgroups: 1\n",
			`q.yaml:7:9: ldap: groupbasedn is required with nested groups`},
		{"lowercasegroups not a bool", "        groupbasedn: ou=groups,dc=x\n        lowercasegroups: sometimes\n",
			`q.yaml:12:26: ldap: cannot unmarshal !!str ` + "`sometimes`" + ` into bool`},
		{"a url", "        groupbasedn: ou=groups,dc=x\n",
			`q.yaml:7:26: ldap: urls[1] "http://b": scheme must be ldap or ldaps`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block := head + tc.block
			if tc.name == "a url" {
				block = strings.Replace(block, "[ldap://127.0.0.1:389]", "[ldap://a, http://b]", 1)
			}
			_, err := config.Parse("q.yaml", []byte(resolverYAML(block)))
			var ie *config.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("want an *InvalidError, got %v", err)
			}
			got := diagStrings(ie.Diagnostics)
			if len(got) == 0 || !strings.HasPrefix(got[0], tc.want) {
				t.Fatalf("got %q, want prefix %q", got, tc.want)
			}
		})
	}
}
