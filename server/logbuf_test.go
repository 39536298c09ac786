package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

func TestBufferedWriter(t *testing.T) {
	var out syncBuffer
	b := server.NewBufferedWriter(&out, 10*time.Millisecond)
	b.Write([]byte("one\n"))
	if out.String() != "" {
		t.Fatal("written before a flush")
	}
	waitFor(t, func() bool { return out.String() == "one\n" })
	b.Write([]byte("two\n"))
	if err := b.Close(); err != nil || !strings.HasSuffix(out.String(), "two\n") {
		t.Fatalf("Close must flush: %v %q", err, out.String())
	}
}

// A writer whose sink takes nothing holds at most MaxPending bytes and
// counts what it drops; its caller never waits.
func TestBufferedWriterDropsPastMaxPending(t *testing.T) {
	stalled := make(chan struct{})
	defer close(stalled)
	b := server.NewBufferedWriter(writerFunc(func(p []byte) (int, error) { <-stalled; return len(p), nil }), time.Hour)
	line := make([]byte, 1<<20)
	for range 2*server.MaxPending>>20 + 2 {
		if n, err := b.Write(line); n != len(line) || err != nil {
			t.Fatal(n, err)
		}
	}
	// The stalled flush holds at most MaxPending bytes and the writer as
	// many again: at least two lines found it full.
	if d := b.Dropped(); d < 2 {
		t.Fatalf("dropped %d writes, want at least 2", d)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
