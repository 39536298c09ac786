package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestVersionCommand: usher version and usher --version print the version,
// the commit and the Go version, one per line.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errOut, code := run(t, args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: code %d stderr %q", args, code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "usher ") || !strings.HasPrefix(lines[1], "commit: ") ||
			lines[2] != "go: "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
			t.Fatalf("%v: %q", args, out)
		}
	}
	if _, errOut, code := run(t, "version", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}

// TestVersionOfBuiltBinary builds usher from a git repository holding
// this checkout's files, where the commit comes from Go's build
// information (vcs.revision, and vcs.modified once a file changes), and
// with -ldflags -X, as the Dockerfile builds it, where the stamped values
// win. (A repository of its own: Go stamps nothing in a git worktree,
// whose .git is a file.)
func TestVersionOfBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	files, err := exec.Command("git", "-C", "../../..", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join("../../..", f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet committed
		} else if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=usher", "-c", "user.email=usher@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = src
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	commit := git("rev-parse", "HEAD")
	build := func(name string, flags ...string) string {
		t.Helper()
		bin := filepath.Join(dir, name)
		// -buildvcs=true: GOFLAGS may switch stamping off, as sandboxes do.
		cmd := exec.Command("go", append([]string{"build", "-buildvcs=true", "-o", bin}, append(flags, "./cmd/usher")...)...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", name, err, out)
		}
		return string(out)
	}
	if out := build("checkout"); !strings.HasPrefix(out, "usher ") || !strings.Contains(out, "\ncommit: "+commit+"\n") {
		t.Errorf("built from a clean checkout at %s:\n%s", commit, out)
	}
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := build("modified"); !strings.Contains(out, "\ncommit: "+commit+" (modified)\n") {
		t.Errorf("built from a modified checkout:\n%s", out)
	}
	out := build("stamped", "-ldflags", "-X github.com/usherhq/usher/cmd/usher/cli.Version=v9.8.7 -X github.com/usherhq/usher/cmd/usher/cli.Commit=c0ffee")
	if want := "usher v9.8.7\ncommit: c0ffee\ngo: "; !strings.HasPrefix(out, want) {
		t.Errorf("stamped build:\n%s\nwant prefix %q", out, want)
	}
}
