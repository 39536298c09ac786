package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

// invalid parses src, which must have errors, and returns its errors and
// warnings as lint prints them.
func invalid(t *testing.T, src string) (errs, warns []string) {
	t.Helper()
	_, err := config.Parse("q.yaml", []byte(src))
	var inv *config.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("want an InvalidError, got %v", err)
	}
	return diagStrings(inv.Diagnostics), diagStrings(inv.Warnings)
}

// A bad regular expression, or any other error, no longer hides the
// warnings: the unanchored patterns beside it and the lints that need the
// whole file are reported in the same run.
func TestEveryProblemInOnePass(t *testing.T) {
	errs, warns := invalid(t, `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            submitacl: dev
          - name: b
            submitacl: " dev"
          - name: c
            submitacl: " Dev"
          - name: bad.name
admissionController:
  accessControl:
    systemUsers: ["system:serviceaccount:kube-system:.*", "^a(b$"]
    externalUsers: ["spark-operator"]
`)
	if len(errs) != 2 || !strings.Contains(errs[0], `q.yaml:14:19: queue name "bad.name" is invalid`) ||
		!strings.Contains(errs[1], `q.yaml:17:59: admissionController.accessControl.systemUsers[1]: invalid regular expression "^a(b$"`) {
		t.Errorf("errors: %q", errs)
	}
	want := []string{
		`q.yaml:9:24: warning: submitacl "dev" lists dev as a user, but dev is a group`,
		`q.yaml:13:24: warning: submitacl " Dev": group "Dev" differs from "dev" (line 11) only in case`,
		`q.yaml:17:19: warning: admissionController.accessControl.systemUsers: pattern "system:serviceaccount:kube-system:.*" is not anchored`,
		`q.yaml:18:21: warning: admissionController.accessControl.externalUsers: pattern "spark-operator" is not anchored`,
	}
	if len(warns) != len(want) {
		t.Fatalf("warnings: %q", warns)
	}
	for i, w := range want {
		if !strings.HasPrefix(warns[i], w) {
			t.Errorf("warning %d: %q, want %q…", i, warns[i], w)
		}
	}
}

// Every diagnostic has a code config.Codes describes.
func TestDiagnosticCodes(t *testing.T) {
	_, err := config.Parse("q.yaml", []byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitAcl: x\n        submitacl: \"a,a\"\n"))
	var inv *config.InvalidError
	if !errors.As(err, &inv) {
		t.Fatal(err)
	}
	all := append(inv.Diagnostics, inv.Warnings...)
	var codes []string
	for _, d := range all {
		if config.Codes[d.Code] == "" {
			t.Errorf("%s: code %q is not in Codes", d, d.Code)
		}
		codes = append(codes, d.Code)
	}
	if !slices.Equal(codes, []string{config.CodeUnknownKey, "acl-entry"}) || inv.Diagnostics[0].Suggestion != "submitacl" {
		t.Errorf("codes %q, suggestion %q", codes, inv.Diagnostics[0].Suggestion)
	}
}

// Dead configuration is a warning at its position: placement rules that
// can never place, a parent-only subtree nobody can submit to, the lines
// of a users-to-groups file skip keeps unread (the Spark driver's), and
// unknownuser left unsaid where a directory is configured.
func TestDeadConfiguration(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users.txt")
	os.WriteFile(users, []byte("alice: dev\nsystem:serviceaccount:spark:driver: spark\n"), 0o600)
	cfg := filepath.Join(dir, "q.yaml")
	os.WriteFile(cfg, []byte(`partitions:
  - name: default
    usergroupresolver:
      type: file
      file: users.txt
    placementrules:
      - name: user
        create: true
        parent:
          name: fixed
          value: root.tenants
      - name: fixed
        value: root.shared
      - name: provided
    queues:
      - name: root
        queues:
          - name: shared
            submitacl: "*"
          - name: closed
            parent: true
            queues:
              - name: inner
                parent: true
`), 0o600)
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := diagStrings(c.Warnings)
	want := []string{
		users + `:2:1: warning: user "system:serviceaccount:spark:driver": this line is never read: skip "system:" of the usergroupresolver at ` + cfg + `:4 matches the name`,
		cfg + `:4:13: warning: usergroupresolver type file: unknownuser is not set, so a user the directory does not know is refused`,
		cfg + `:11:18: warning: partition default: placement rule 1 parent value: never places: the parent rule's queue root.tenants does not exist and the parent rule's create is false`,
		cfg + `:14:9: warning: partition default: placement rule 3: never reached: placement rule 2 before it places every application in root.shared`,
		cfg + `:23:23: warning: parent queue root.closed.inner has no child queues and nobody can submit to those placement creates in it`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s", strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("warning %d:\n%s\nwant %s…", i, got[i], w)
		}
	}
	// Said explicitly, with the driver's line read through a namemapping
	// or not skipped, there is nothing to say about the resolver.
	for _, resolver := range []string{
		"      unknownuser: deny\n      skip: [\"system:node:\"]\n",
		"      unknownuser: given-groups\n      namemapping:\n        - {pattern: 'sa-(.+)', replacement: 'system:serviceaccount:spark:$1'}\n",
	} {
		c, err := config.Parse(cfg, []byte("partitions:\n  - name: default\n    usergroupresolver:\n      type: file\n      file: "+users+"\n"+resolver+
			"    queues:\n      - name: root\n        submitacl: \"*\"\n"))
		if err != nil || len(c.Warnings) != 0 {
			t.Errorf("%s: %v %q", resolver, err, diagStrings(c.Warnings))
		}
	}
}
