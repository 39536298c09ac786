package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

// FuzzParse feeds arbitrary text to the loader: it never panics, every
// error is an *InvalidError whose diagnostics name the file, and an
// accepted configuration is compiled and has a root in every partition.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(config.DefaultYAML())
	f.Add([]byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: u1  g1\n"))
	f.Add([]byte("partitions: [{name: x, queues: [{name: root, adminacl: \" a\", queues: [{name: b}]}]}]"))
	f.Add([]byte("a: &x [*x]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse("f.yaml", data)
		if err != nil {
			var ie *config.InvalidError
			if !errors.As(err, &ie) || len(ie.Diagnostics) == 0 {
				t.Fatalf("error without diagnostics: %v", err)
			}
			for _, d := range ie.Diagnostics {
				if !strings.HasPrefix(d.String(), "f.yaml") {
					t.Fatalf("diagnostic without file: %q", d)
				}
			}
			return
		}
		if c.Snapshot == nil {
			t.Fatal("accepted but not compiled")
		}
		for _, name := range c.Snapshot.Partitions() {
			p, err := c.Snapshot.Partition(name)
			if err != nil || !p.Has("root") {
				t.Fatalf("partition %s without root: %v", name, err)
			}
		}
	})
}

// FuzzLoadForms feeds arbitrary files to Load, which tells YuniKorn's
// forms apart (ConfigMaps, several documents, a List, a ConfigMap's data,
// Helm values): it never panics, and an accepted configuration is
// compiled with a root in every partition.
func FuzzLoadForms(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "yunikorn-docs", "*.yaml"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("kind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: yunikorn-configs}\n  data: {service.policyGroup: g, g.yaml: 'partitions: [{name: d, queues: [{name: a}, {name: b}]}]'}\n"))
	f.Add([]byte("---\n---\nkind: ConfigMap\ndata: {}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path)
		if err != nil {
			return
		}
		for _, name := range c.Snapshot.Partitions() {
			p, err := c.Snapshot.Partition(name)
			if err != nil || !p.Has("root") {
				t.Fatalf("partition %s without root: %v", name, err)
			}
		}
	})
}
