package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configuration whose admission settings point nowhere (it would deny
// every workload) is a lint error with its position.
func TestLintDanglingReferences(t *testing.T) {
	file := filepath.Join(t.TempDir(), "q.yaml")
	os.WriteFile(file, []byte(`partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
admissionController:
  partition: production
  enforceQueueACLs: true
`), 0o600)
	out, errs, code := run(t, "lint", file)
	want := file + `:7:14: admissionController.partition: "production" names no partition of this configuration (partitions: default)`
	if code != 1 || strings.TrimSpace(out) != want || !strings.Contains(errs, "1 error") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s\nwant %s", code, out, errs, want)
	}
}
