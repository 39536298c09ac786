package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/config"
)

type countingCloser struct{ n atomic.Int32 }

func (c *countingCloser) Close() error { c.n.Add(1); return nil }

// swap builds cfg on g and retires g, as package serving does.
func swap(t testing.TB, g *Generation, cfg *config.Config) *Generation {
	t.Helper()
	next, err := New(cfg, g)
	if err != nil {
		t.Fatal(err)
	}
	g.Retire(next, time.Minute)
	return next
}

func parse(t *testing.T, src string) *config.Config {
	t.Helper()
	c, err := config.Parse("q.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A resolver replaced by a reload is closed after the grace period; one
// whose settings did not change is kept open; Close closes the rest.
func TestReplacedResolversAreClosed(t *testing.T) {
	const osYAML = "partitions:\n  - name: default\n    usergroupresolver: {type: os}\n    queues: [{name: root}]\n  - name: other\n    usergroupresolver: {type: os}\n    queues: [{name: root}]\n"
	e, err := New(parse(t, osYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	closers := map[string]*countingCloser{}
	for name, p := range e.parts {
		closers[name] = &countingCloser{}
		p.resolver.Closer = closers[name]
	}
	// "default" changes resolver type, "other" stays the same.
	next := "partitions:\n  - name: default\n    queues: [{name: root}]\n  - name: other\n    usergroupresolver: {type: os}\n    queues: [{name: root}]\n"
	g, err := New(parse(t, next), e)
	if err != nil {
		t.Fatal(err)
	}
	e.Retire(g, time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for closers["default"].n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if closers["default"].n.Load() != 1 || closers["other"].n.Load() != 0 {
		t.Fatalf("closed: default %d, other %d", closers["default"].n.Load(), closers["other"].n.Load())
	}
	if err := g.Close(); err != nil || closers["other"].n.Load() != 1 {
		t.Fatalf("Close: %v, other closed %d times", err, closers["other"].n.Load())
	}
}
