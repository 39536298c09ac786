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

// TestYuniKornDocumentation loads every YAML example with partitions: of
// YuniKorn's user guide and design pages (testdata/yunikorn-docs, each
// naming its page): the ones YuniKorn's own validator accepts must load,
// and the ones it refuses must not. YuniKorn's verdicts are read from its
// configuration code (pkg/common/configs: a strict YAML decoder, then
// Validate): a partition without queues is "queue config is not set", a
// queue name outside ^[a-zA-Z0-9_:#/@-]{1,64}$ is invalid, and an unknown
// key (resources has only guaranteed and max) fails the decoder.
func TestYuniKornDocumentation(t *testing.T) {
	yunikornRefuses := map[string]string{
		"preemption-57.yaml":           `queue names with "..." placeholders`,
		"queue-config-48.yaml":         "partitions without queues",
		"queue-config-87.yaml":         "a partition without queues",
		"quota-preemption-43.yaml":     "a partition without queues",
		"quota-preemptor-46.yaml":      "a tab in the indentation",
		"quota-preemptor-67.yaml":      "a <name of the queue> placeholder",
		"quota-preemptor-86.yaml":      "resources has no key quota.preemption.delay",
		"quota-preemptor-99.yaml":      "resources has no key quota.preemption.delay",
		"sorting-policies-94.yaml":     "a partition without queues",
		"sorting-policies-141.yaml":    "a partition without queues",
		"usergroup-resolution-46.yaml": "a partition without queues",
	}
	files, err := filepath.Glob("testdata/yunikorn-docs/*.yaml")
	if err != nil || len(files) != 31 {
		t.Fatalf("%d examples, want 31: %v", len(files), err)
	}
	loaded := 0
	for _, f := range files {
		base := filepath.Base(f)
		head, _ := os.ReadFile(f)
		if !strings.HasPrefix(string(head), "# From YuniKorn's documentation") {
			t.Errorf("%s does not name the page it comes from", base)
		}
		_, err := config.Load(f)
		why, refused := yunikornRefuses[base]
		var invalid *config.InvalidError
		switch {
		case err == nil && refused:
			t.Errorf("%s loads, but YuniKorn refuses it (%s)", base, why)
		case err != nil && !refused:
			t.Errorf("%s: YuniKorn accepts it, usher does not:\n%v", base, err)
		case err != nil && !errors.As(err, &invalid):
			t.Errorf("%s: not a positioned diagnostic: %v", base, err)
		}
		if err == nil {
			loaded++
		}
	}
	if loaded != 20 {
		t.Errorf("%d examples load, want 20", loaded)
	}
}

// The notes on the documentation's examples say where YuniKorn put their
// queues.
func TestYuniKornDocumentationNotes(t *testing.T) {
	c, err := config.Load("testdata/yunikorn-docs/placement-rules-367.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := diagStrings(c.Warnings)
	want := []string{"testdata/yunikorn-docs/placement-rules-367.yaml:6:9: warning: partition default: the top-level queue is production, not root: YuniKorn inserts a root queue above it, so its path is root.production"}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
}
