package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/cmd/usher/cli"
	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/hack/slapdtest"
)

// TestExplainEnterpriseIdentity: explain shows both names of a mapped
// user, a nested group's provenance, a skipped service account and an
// override, in text and in JSON (checked against the schema).
func TestExplainEnterpriseIdentity(t *testing.T) {
	s := slapdtest.New(t)
	s.AddLDIF(t, fmt.Sprintf(`
dn: uid=alice,%[1]s
objectClass: inetOrgPerson
uid: alice
cn: alice
sn: alice

dn: cn=emea-team,%[2]s
objectClass: groupOfNames
cn: emea-team
member: uid=alice,%[1]s

dn: cn=data-eng-emea,%[2]s
objectClass: groupOfNames
cn: data-eng-emea
member: cn=emea-team,%[2]s

dn: cn=data-eng,%[2]s
objectClass: groupOfNames
cn: data-eng
member: cn=data-eng-emea,%[2]s
`, slapdtest.PeopleDN, slapdtest.GroupsDN))
	cfg := fmt.Sprintf(`partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: ldap
      namemapping:
        - pattern: 'oidc:([^@]+)@example\.com'
          replacement: $1
      overrides:
        spark-svc: [data-eng]
      ldap:
        urls: [%q]
        binddn: %s
        bindpasswordfile: %s
        userbasedn: %s
        groupbasedn: %s
        nestedgroups: 2
        timeout: 2s
    queues:
      - name: root
        queues:
          - name: data
            submitacl: " data-eng"
          - name: k8s
            submitacl: " system:authenticated"
`, s.URL, slapdtest.ServiceDN, s.ServicePasswordFile, slapdtest.PeopleDN, slapdtest.GroupsDN)
	path := filepath.Join(t.TempDir(), "ent.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"mapped name and nested groups", []string{"--queue", "root.data", "--user", "oidc:alice@example.com"}, []string{
			"allowed", "identity:", "  user    oidc:alice@example.com",
			"  lookup  as alice (namemapping rule 1); ACLs match oidc:alice@example.com",
			"  groups  data-eng (ldap via emea-team > data-eng-emea)", "data-eng-emea (ldap via emea-team)", "emea-team (ldap)",
		}},
		{"service account", []string{"--queue", "root.k8s", "--user", "system:serviceaccount:spark:driver", "--groups", "system:authenticated"}, []string{
			"allowed", `  lookup  none: names starting with "system:" are not looked up (skip); the given groups only`,
			"  groups  system:authenticated (given)",
		}},
		{"override", []string{"--queue", "root.data", "--user", "spark-svc"}, []string{
			"allowed", "  lookup  none: a static override gives the groups", "  groups  data-eng (override)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := run(t, append([]string{"explain", "--config", path}, tc.args...)...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d: %s%s", code, out, errs)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}

	out, errs, code := run(t, "explain", "--config", path, "--queue", "root.data", "--user", "oidc:alice@example.com", "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if errs := loadSchema(t).validate("$", v); len(errs) > 0 {
		t.Fatalf("against docs/decision.schema.json:\n%s\n%s", strings.Join(errs, "\n"), out)
	}
	var o decision.Output
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	l := o.Identity.Lookup
	if o.Identity.User != "oidc:alice@example.com" || l == nil || l.DirectoryName != "alice" || l.Rule != 1 || l.Summary == "" {
		t.Fatalf("identity %+v lookup %+v", o.Identity, l)
	}
	if g := o.Identity.Groups[0]; g != (decision.Group{Name: "data-eng", Source: "ldap via emea-team > data-eng-emea"}) {
		t.Fatalf("first group %+v", g)
	}
}

// TestLintLookupSettings: usher lint places the lookup settings' mistakes
// at FILE:LINE:COL.
func TestLintLookupSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.yaml")
	src := `partitions:
  - name: default
    usergroupresolver:
      type: test
      users: {alice: [dev]}
      unknownuser: allow
      namemapping:
        - pattern: '(.+)'
          replacement: $1
        - pattern: 'oidc:(.+)'
          replacement: $1
    queues:
      - name: root
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := run(t, "lint", path)
	all := out + errs
	if code == cli.ExitOK {
		t.Fatalf("lint passed:\n%s", all)
	}
	for _, want := range []string{
		path + `:6:20: unknownuser "allow": want deny or given-groups`,
		path + `:10:20: warning: namemapping rule 2 can never apply: rule 1 (line 8), tried first, matches every name`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("lint output lacks %q:\n%s", want, all)
		}
	}
}
