package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"
)

func fileResolver(path string) string {
	return fmt.Sprintf("partitions:\n  - name: default\n    usergroupresolver:\n      type: file\n      file: %s\n    queues:\n      - name: root\n        submitacl: \"*\"\n", path)
}

// upgradeWarnings returns the warnings of c about what a later release
// refuses.
func upgradeWarnings(c *Config) []string {
	var out []string
	for _, w := range c.Warnings {
		if w.Upgrade {
			out = append(out, w.String())
		}
	}
	return out
}

// A users-to-groups file that is not a regular file, or is above the
// table's cap, loaded before: it still loads, with a warning saying a
// later release refuses it; with Strict (lint, policy tests) it is an
// error, and a FIFO is never read then.
func TestUsersFileUpgradeRules(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	line := "#" + strings.Repeat("x", 1022) + "\n"
	if err := os.WriteFile(big, []byte(strings.Repeat(line, 17<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, why string }{
		{"/dev/null", "not a regular file"}, {fifo, "not a regular file"}, {big, "larger than the 16777216 byte limit"},
	} {
		cfg, err := Parse("q.yaml", []byte(fileResolver(c.path)))
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if w := upgradeWarnings(cfg); len(w) != 1 || !strings.Contains(w[0], c.why) || !strings.Contains(w[0], "docs/upgrade.md") {
			t.Errorf("%s: upgrade warnings %q", c.path, w)
		}
		_, err = Parse("q.yaml", []byte(fileResolver(c.path)), Strict())
		var inv *InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s, strict: %v", c.path, err)
		}
	}
}

// A configuration of more YAML nodes than maxNodes loads with a warning
// (it loaded before the cap), and is an error with Strict.
func TestNodeCap(t *testing.T) {
	defer func(n int) { maxNodes = n }(maxNodes)
	maxNodes = 20
	doc := "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n"
	for i := range 10 {
		doc += fmt.Sprintf("          - name: q%d\n", i)
	}
	cfg, err := Parse("q.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if w := upgradeWarnings(cfg); len(w) != 1 || !strings.Contains(w[0], "YAML nodes") {
		t.Errorf("upgrade warnings %q", w)
	}
	if _, err := Parse("q.yaml", []byte(doc), Strict()); err == nil || !strings.Contains(err.Error(), "YAML nodes") {
		t.Errorf("strict: %v", err)
	}
}

// At most maxDiagnostics errors and warnings each are listed, then how
// many more there are; a message is cut to a bounded length.
func TestDiagnosticsCapped(t *testing.T) {
	_, err := Parse("q.yaml", []byte("partitions: ["+strings.Repeat("a,", 299)+"a]\n"))
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Diagnostics) != maxDiagnostics+1 || inv.Diagnostics[maxDiagnostics].Msg != "and 200 more errors" {
		t.Fatalf("%d diagnostics, last %v", len(inv.Diagnostics), inv.Diagnostics[len(inv.Diagnostics)-1])
	}
	cfg, err := Parse("q.yaml", []byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n"+
		"admissionController:\n  accessControl:\n    systemUsers: [\"^"+strings.Repeat("x", 1<<20)+"\"]\n"))
	if err != nil || len(cfg.Warnings) != 1 || len(cfg.Warnings[0].Msg) > 2<<10 || !strings.Contains(cfg.Warnings[0].Msg, "cut ") {
		t.Fatalf("%v %.3000v", err, cfg.Warnings)
	}
}

// NodeBound is never below the nodes yaml.v3 builds.
func FuzzNodeBound(f *testing.F) {
	for _, s := range []string{"? \n? \n", "[:,:,:]", "[?:,?:]", "{?,?,?}", "- ? : \n- ? :\n", "-\n-\n", "a:\nb:\n",
		"[[[]]]", "&a [*a, *a]", "a: |\n  x, y\n", "\"a\": b", "? - - -\n", ":\n:\n", "a:\u2028b:\u2028", "[a:,b:]", "{a,b,c}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(text), &doc) != nil {
			return
		}
		if n, b := countNodes(&doc, 1<<30), NodeBound(text); n > b {
			t.Fatalf("%q: %d nodes, bound %d", text, n, b)
		}
	})
}

// The LDAP resolver's CA bundle and password file are read when it is
// built; one that is not a regular file is said now, at its key.
func TestLDAPFilesUpgradeRules(t *testing.T) {
	doc := "partitions:\n  - name: default\n    usergroupresolver:\n      type: ldap\n      ldap:\n        urls: [ldaps://ldap.example.com]\n" +
		"        cafile: /dev/null\n        userbasedn: ou=people,dc=example,dc=com\n        groupbasedn: ou=groups,dc=example,dc=com\n    queues:\n      - name: root\n        submitacl: \"*\"\n"
	cfg, err := Parse("q.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if w := upgradeWarnings(cfg); len(w) != 1 || !strings.HasPrefix(w[0], "q.yaml:7:17: warning: ldap cafile: not a regular file") {
		t.Errorf("upgrade warnings %q", w)
	}
	if _, err := Parse("q.yaml", []byte(doc), Strict()); err == nil || !strings.Contains(err.Error(), "ldap cafile: not a regular file") {
		t.Errorf("strict: %v", err)
	}
	if cfg, err := Parse("q.yaml", []byte(doc), InRequest(nil)); err != nil || len(upgradeWarnings(cfg)) != 0 {
		t.Errorf("in a request, no file is looked at: %v", err)
	}
}

// The digests of delegated administration expand aliases, and stop with
// an error past maxNodes nodes reached through them (a billion laughs
// would otherwise be hashed).
func TestDigestAliases(t *testing.T) {
	defer func(n int) { maxNodes = n }(maxNodes)
	maxNodes = 200
	doc := "partitions:\n  - name: default\n    queues:\n      - name: root\n        properties: &p {a: 1, b: 2}\n        queues:\n"
	for i := range 10 {
		doc += fmt.Sprintf("          - name: q%d\n            properties: *p\n", i)
	}
	cfg, err := Parse("q.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := Parse("q.yaml", []byte(strings.Replace(doc, "b: 2", "b: 3", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Digests["default/root.q9"] == changed.Digests["default/root.q9"] {
		t.Error("a change of an anchor leaves the digest of a queue that aliases it")
	}
	doc += "          - name: laughs\n            properties: {x: &l [*p, *p, *p, *p, *p, *p, *p, *p, *p, *p], y: [*l, *l, *l, *l, *l, *l, *l, *l, *l, *l]}\n"
	if _, err := Parse("q.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), "aliases expand the configuration by more than 200 YAML nodes") {
		t.Errorf("got %v", err)
	}
}
