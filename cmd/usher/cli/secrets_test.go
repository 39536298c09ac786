package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// usher lint never prints a bind password, wherever it was written by
// mistake: inline under a key of its own, where the name of its variable
// belongs, or where the name of its file belongs. Nor does check when the
// bind then fails.
func TestLintNeverPrintsTheBindPassword(t *testing.T) {
	const canary = "usher-canary-Zq8-pw"
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte(canary+"\n"), 0o600)
	base := `partitions:
  - name: default
    usergroupresolver:
      type: ldap
      ldap:
        urls: ["ldap://127.0.0.1:1"]
        binddn: cn=usher,dc=example,dc=org
        %s
        userbasedn: ou=people,dc=example,dc=org
        groupbasedn: ou=groups,dc=example,dc=org
    queues:
      - name: root
        submitacl: "*"
`
	for _, tt := range []struct {
		name, setting string
		code          int
		want          string
	}{
		{"inline under a key of its own", "bindpassword: " + canary, 1, `unknown key "bindpassword"`},
		{"where the variable's name belongs", "bindpasswordenv: " + canary, 1, `bindpasswordenv is not the name of an environment variable`},
		{"where the file's name belongs", "bindpasswordfile: " + canary, 0, ""},
		{"in the file", "bindpasswordfile: " + pwFile, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "q.yaml")
			os.WriteFile(cfg, []byte(strings.Replace(base, "%s", tt.setting, 1)), 0o600)
			out, errs, code := run(t, "lint", cfg)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("lint: exit %d, want %d; stdout:\n%s\nstderr:\n%s\nwant %q", code, tt.code, out, errs, tt.want)
			}
			if strings.Contains(out+errs, canary) {
				t.Fatalf("lint printed the password:\n%s%s", out, errs)
			}
			if tt.code != 0 {
				return
			}
			// The directory is unreachable and the password wrong: check
			// fails, without printing it either.
			out, errs, code = run(t, "check", "--config", cfg, "--queue", "root", "--user", "alice")
			if code != 2 || strings.Contains(out+errs, canary) {
				t.Fatalf("check: exit %d (want 2), and never the password:\n%s%s", code, out, errs)
			}
		})
	}
}
