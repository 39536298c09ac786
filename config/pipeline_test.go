package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/config"
)

func env(kv ...string) config.Option {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return config.WithEnv(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

func errorLines(t *testing.T, err error) []string {
	t.Helper()
	var invalid *config.InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("want an *InvalidError, got %v", err)
	}
	return diagStrings(invalid.Diagnostics)
}

// Admission settings errors are placed from the typed error's setting,
// item and field: the key of the second queue source, the queue of a
// mapping entry, an item of a pattern list.
func TestAdmissionErrorsAtTheirItem(t *testing.T) {
	src := queuesOnly + `admissionController:
  enforceQueueACLs: true
  queueSources:
    - {kind: label, key: team, scheduler: kueue}
    - kind: annotation
      key: " spaced"
      scheduler: kueue
  queueMapping:
    table:
      - {value: x, queue: "root..a"}
  accessControl:
    externalGroups: ["^ok$", "("]
`
	_, err := config.Parse("q.yaml", []byte(src))
	got := errorLines(t, err)
	want := []string{
		`q.yaml:11:12: admissionController.queueSources[1].key: " spaced" is not a label or annotation key`,
		`q.yaml:15:27: admissionController.queueMapping.table[0].queue: "root..a" is not a queue path: name 1 is empty`,
		`q.yaml:17:30: admissionController.accessControl.externalGroups[1]: invalid regular expression "("`,
	}
	if len(got) != len(want) {
		t.Fatalf("got:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("got  %s\nwant %s", got[i], want[i])
		}
	}
}

// The environment is applied by the pipeline: a bad variable is an error
// named by the variable, a variable's bad pattern too, and the settings it
// sets are in force.
func TestEnvironmentInThePipeline(t *testing.T) {
	for _, tt := range []struct {
		vars []string
		want string
	}{
		{[]string{"ADMISSION_CONTROLLER_TRUST_CONTROLLERS", "sometimes"}, `environment: ADMISSION_CONTROLLER_TRUST_CONTROLLERS: invalid boolean "sometimes"`},
		{[]string{"ADMISSION_CONTROLLER_SYSTEM_USERS", "^ok$,("}, `environment: ADMISSION_CONTROLLER_SYSTEM_USERS[1]: invalid regular expression "("`},
	} {
		_, err := config.Parse("q.yaml", []byte(queuesOnly), env(tt.vars...))
		if got := errorLines(t, err); len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
			t.Errorf("%v: got %q, want %q", tt.vars, got, tt.want)
		}
	}
	c, err := config.Parse("q.yaml", []byte(queuesOnly+"admissionController:\n  accessControl:\n    bypassAuth: false\n"),
		env("ADMISSION_CONTROLLER_BYPASS_AUTH", "true", "ADMISSION_CONTROLLER_EXTERNAL_GROUPS", ""))
	if err != nil {
		t.Fatal(err)
	}
	ac := c.Admission.Config().AccessControl
	if !ac.BypassAuth || ac.ExternalGroups == nil || len(ac.ExternalGroups) != 0 {
		t.Fatalf("overrides not in force: %+v", ac)
	}
	if w := diagStrings(c.Warnings); len(w) != 1 || !strings.HasPrefix(w[0], "environment: warning: ADMISSION_CONTROLLER_BYPASS_AUTH: is true") {
		t.Fatalf("warnings %q", w)
	}
	// Without WithEnv nothing is read.
	if c, err := config.Parse("q.yaml", []byte(queuesOnly)); err != nil || c.Admission.Config().AccessControl.BypassAuth {
		t.Fatal(err)
	}
}

// In a ConfigMap manifest, problems of flat keys are at the key's value and
// problems of the queues.yaml block at the manifest's own lines; setting
// the admission controller both ways is an error at the block.
func TestManifestPositions(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "cm.yaml")
	write := func(s string) {
		if err := os.WriteFile(manifest, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	head := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  queues.yaml: |\n"
	write(head + indent(queuesOnly, "    ") + "  admissionController.partition: prod\n  admissionController.accessControl.systemUsers: \"^a$, b\"\n")
	_, err := config.Load(manifest)
	got := errorLines(t, err)
	if len(got) != 1 || !strings.HasPrefix(got[0], manifest+`:11:34: admissionController.partition: "prod" names no partition`) {
		t.Fatalf("got %q", got)
	}
	write(head + indent(queuesOnly, "    ") + "  admissionController.accessControl.systemUsers: \"^a$, b\"\n")
	c, err := config.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if w := diagStrings(c.Warnings); len(w) != 1 || !strings.HasPrefix(w[0], manifest+`:11:56: warning: admissionController.accessControl.systemUsers: pattern "b" is not anchored`) {
		t.Fatalf("warnings %q", w)
	}
	write(head + indent(queuesOnly+"admissionController: {enforceQueueACLs: true}\n", "    ") + "  admissionController.accessControl.bypassAuth: \"true\"\n")
	_, err = config.Load(manifest)
	if got := errorLines(t, err); len(got) != 1 || !strings.HasPrefix(got[0], manifest+":11:26: the admission controller is set both here and as admissionController.* keys") {
		t.Fatalf("got %q", got)
	}
}

// Compile's errors are typed: errors.As finds each SettingError with its
// setting, item and field, so no reader splits message strings.
func TestSettingErrorsAreTyped(t *testing.T) {
	_, err := settings.Config{QueueSources: []settings.QueueSource{{Kind: "label", Key: "a"}, {Kind: "tag", Key: "b"}}}.Compile()
	var se *settings.SettingError
	if !errors.As(err, &se) || se.Setting != "admissionController.queueSources" || se.Index != 1 || se.Field != "kind" {
		t.Fatalf("%#v", se)
	}
}

// A pattern list of the wrong shape is placed from the typed error the
// YAML decoder passes on: the item, line and column.
func TestPatternShapeErrorAtTheItem(t *testing.T) {
	_, err := config.Parse("q.yaml", []byte(queuesOnly+"admissionController:\n  accessControl:\n    systemUsers: [\"^a$\", {x: 1}]\n"))
	if got := errorLines(t, err); len(got) != 1 || got[0] != "q.yaml:8:26: admissionController: item 1 of the pattern list is not a string" {
		t.Fatalf("got %q", got)
	}
}
