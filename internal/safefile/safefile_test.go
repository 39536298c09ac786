package safefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/safefile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("secret content"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, broke, err := safefile.Read(file, 100, 0); err != nil || broke != nil || string(b) != "secret content" {
		t.Fatalf("%q %v %v", b, broke, err)
	}
	// Not regular: refused unread, and a FIFO without a writer does not
	// block the open.
	for _, p := range []string{fifo, "/dev/zero", dir} {
		if _, _, err := safefile.Read(p, 100, 0); !errors.Is(err, safefile.ErrNotRegular) {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, limit := range []int64{13, 1} {
		_, _, err := safefile.Read(file, limit, 0)
		if err == nil || !strings.Contains(err.Error(), "larger than the") || strings.Contains(err.Error(), "secret") {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	// What releases before the rules read is read, and the broken rule
	// said.
	if b, broke, err := safefile.Read(file, 5, 100); err != nil || string(b) != "secret content" || broke == nil || !strings.Contains(broke.Error(), "larger than the 5 byte limit") {
		t.Errorf("legacy size: %q %v %v", b, broke, err)
	}
	if b, broke, err := safefile.Read("/dev/null", 5, 100); err != nil || len(b) != 0 || !errors.Is(broke, safefile.ErrNotRegular) {
		t.Errorf("legacy /dev/null: %q %v %v", b, broke, err)
	}
	if _, _, err := safefile.Read("/dev/zero", 5, 100); err == nil || !strings.Contains(err.Error(), "larger than the 100 byte limit") {
		t.Errorf("legacy /dev/zero: %v", err)
	}
}

// A pipe whose writer never writes is given up on after Timeout.
func TestReadDeadline(t *testing.T) {
	defer func(d time.Duration) { safefile.Timeout = d }(safefile.Timeout)
	safefile.Timeout = 50 * time.Millisecond
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, _, err := safefile.Read(fifo, 5, 100); err == nil || !strings.Contains(err.Error(), "not read within") {
		t.Fatalf("%v", err)
	}
}
