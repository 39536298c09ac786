package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/cmd/usher/cli"
	"github.com/usherhq/usher/hack/slapdtest"
)

// ldapConfig starts a slapd (skipped where slapd is not installed, failing
// when CI is set) holding alice in dev and bob in ops, and writes a
// configuration whose default partition reads groups from it.
func ldapConfig(t *testing.T) (*slapdtest.Server, string) {
	t.Helper()
	s := slapdtest.New(t)
	var ldif strings.Builder
	for _, u := range []string{"alice", "bob"} {
		fmt.Fprintf(&ldif, "\ndn: uid=%[1]s,%[2]s\nobjectClass: inetOrgPerson\nuid: %[1]s\ncn: %[1]s\nsn: %[1]s\n", u, slapdtest.PeopleDN)
	}
	for g, m := range map[string]string{"dev": "alice", "ops": "bob"} {
		fmt.Fprintf(&ldif, "\ndn: cn=%[1]s,%[2]s\nobjectClass: groupOfNames\ncn: %[1]s\nmember: uid=%[3]s,%[4]s\n", g, slapdtest.GroupsDN, m, slapdtest.PeopleDN)
	}
	s.AddLDIF(t, ldif.String())
	cfg := fmt.Sprintf(`partitions:
  - name: default
    usergroupresolver:
      type: ldap
      ldap:
        urls: [%q]
        binddn: %s
        bindpasswordfile: %s
        userbasedn: %s
        groupsearch: memberof
        timeout: 2s
    queues:
      - name: root
        queues:
          - name: dev
            submitacl: " dev"
          - name: k8s
            submitacl: " system:authenticated"
`, s.URL, slapdtest.ServiceDN, s.ServicePasswordFile, slapdtest.PeopleDN)
	path := filepath.Join(t.TempDir(), "ldap.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return s, path
}

func TestLDAPCheckAndExplain(t *testing.T) {
	s, cfg := ldapConfig(t)
	tests := []struct {
		name string
		args []string
		code int
		want []string // lines of stdout, in order
	}{
		{"alice is in dev", []string{"check", "--queue", "root.dev", "--user", "alice"}, cli.ExitOK,
			[]string{"allowed", `alice may submit to root.dev: group entry "dev" in submitacl of root.dev`}},
		{"bob is not", []string{"check", "--queue", "root.dev", "--user", "bob"}, cli.ExitDenied,
			[]string{"denied"}},
		{"explain shows where the group came from", []string{"explain", "--queue", "root.dev", "--user", "alice"}, cli.ExitOK,
			[]string{"allowed", "identity:", "  groups  dev (ldap)", "trail", `MATCH: group "dev"  <- decided`}},
		{"explain a denial", []string{"explain", "--queue", "root.dev", "--user", "bob"}, cli.ExitDenied,
			[]string{"denied", "  groups  ops (ldap)"}},
		{"given groups are used as they are", []string{"explain", "--queue", "root.k8s", "--user", "bob", "--groups", "system:authenticated"}, cli.ExitOK,
			[]string{"allowed", "  groups  system:authenticated (given)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := run(t, append(tt.args, "--config", cfg)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.code, out, errs)
			}
			if first := strings.SplitN(out, "\n", 2)[0]; first != tt.want[0] {
				t.Fatalf("first line %q, want %q", first, tt.want[0])
			}
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}

	// The directory down: no groups can be found, so no answer is given;
	// the reason is on stderr and the exit status is 2, never "allowed".
	s.Stop(t)
	out, errs, code := run(t, "check", "--config", cfg, "--queue", "root.dev", "--user", "alice")
	if code != cli.ExitUsage || out != "" || !strings.Contains(errs, "groups of alice") || !strings.Contains(errs, "ldap: ") {
		t.Fatalf("directory down: exit %d, stdout %q, stderr %q; want 2 and the ldap error", code, out, errs)
	}
}

// The example configuration passes lint without reading its placeholder
// password and CA files; its two Kubernetes names (system:authenticated,
// a service account) are what YuniKorn's ACL parser drops.
func TestLintLDAPExample(t *testing.T) {
	out, errs, code := run(t, "lint", "../../../examples/ldap.yaml")
	if code != cli.ExitOK || strings.Count(out, "YuniKorn's ACL parser drops") != 2 || !strings.Contains(errs, "valid, 2 warnings") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
