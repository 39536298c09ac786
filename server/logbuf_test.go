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
