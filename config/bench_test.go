package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/hack/benchcpu"
	"github.com/usherhq/usher/hack/queuegen"
)

// generateYAML writes a configuration of queues queues (root, 10 per
// department, 9 leaves per team) holding entries ACL entries, half users
// and half groups.
func generateYAML(queues, entries int) []byte { return queuegen.Config(queues, entries, nil) }

// BenchmarkLoad10kQueues parses, validates, lints and compiles 10,000
// queues with 100,000 ACL entries. cpu-ns/op is the CPU time of the
// benchmark's own thread (hack/benchcpu): the collector's work on the
// other core is not in it.
func BenchmarkLoad10kQueues(b *testing.B) {
	data := generateYAML(10000, 100000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	m, n := benchcpu.Start(), 0
	for b.Loop() {
		c, err := config.Parse("gen.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Warnings) != 0 {
			b.Fatalf("warnings: %v", c.Warnings[0])
		}
		n++
	}
	m.Stop(b, n)
}

// BenchmarkLoadFile10kQueues is BenchmarkLoad10kQueues read from a file
// by Load, as usher serve reads it on every reload: Load first tells a
// usher YAML file from YuniKorn's ConfigMap forms.
func BenchmarkLoadFile10kQueues(b *testing.B) {
	data := generateYAML(10000, 100000)
	path := filepath.Join(b.TempDir(), "gen.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	m, n := benchcpu.Start(), 0
	for b.Loop() {
		if _, err := config.Load(path); err != nil {
			b.Fatal(err)
		}
		n++
	}
	m.Stop(b, n)
}

func TestGeneratedConfigIsValid(t *testing.T) {
	c, err := config.Parse("gen.yaml", generateYAML(10000, 100000))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Snapshot.Partition("default")
	if got := len(p.Queues()); got != 10000 {
		t.Fatalf("%d queues", got)
	}
}

// BenchmarkLoadYuniKornConfigMap10kQueues is BenchmarkLoad10kQueues as
// the queues.yaml of YuniKorn's ConfigMap, which is also checked against
// YuniKorn's strict decoder's schema.
func BenchmarkLoadYuniKornConfigMap10kQueues(b *testing.B) {
	for _, name := range []string{"configmap/usher-system/usher-config", "configmap/yunikorn/yunikorn-configs"} {
		b.Run(filepath.Base(name), func(b *testing.B) {
			data := map[string]string{"queues.yaml": string(generateYAML(10000, 100000))}
			b.ReportAllocs()
			for b.Loop() {
				c, err := config.FromConfigMap(name, data, config.Strict())
				if err != nil || len(c.Warnings) != 0 {
					b.Fatal(err, c.Warnings)
				}
			}
		})
	}
}
