package server_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/usherhq/usher/server"
)

// A reload reads the file once: what it hashes is what it parses, so the
// generation's sum always names the configuration in service, even when
// the file is replaced while it is read. inotify counts the opens (each
// followed by its close, which keeps inotify from merging them).
func TestReloadReadsTheFileOnce(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, enforcedYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	writeFile(t, cfg, strings.Replace(enforcedYAML, "root.dev}", "root.dev }", 1))
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, cfg, syscall.IN_OPEN|syscall.IN_CLOSE_NOWRITE); err != nil {
		t.Fatal(err)
	}
	if ok, err := h.srv.Reload(); !ok || err != nil {
		t.Fatalf("Reload() = %v, %v", ok, err)
	}
	opens := 0
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&syscall.IN_OPEN != 0 {
				opens++
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
	if opens != 1 {
		t.Fatalf("a reload opened the configuration %d times, want 1", opens)
	}
}
