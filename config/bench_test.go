package config_test

import (
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/internal/queuegen"
)

// generateYAML writes a configuration of queues queues (root, 10 per
// department, 9 leaves per team) holding entries ACL entries, half users
// and half groups.
func generateYAML(queues, entries int) []byte { return queuegen.Config(queues, entries, nil) }

// BenchmarkLoad10kQueues parses, validates, lints and compiles 10,000
// queues with 100,000 ACL entries.
func BenchmarkLoad10kQueues(b *testing.B) {
	data := generateYAML(10000, 100000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := config.Parse("gen.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Warnings) != 0 {
			b.Fatalf("warnings: %v", c.Warnings[0])
		}
	}
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
