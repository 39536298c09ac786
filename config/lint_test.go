package config_test

import (
	"errors"
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
