package server_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// fileResolverYAML is a configuration whose partition's groups come from
// the users-to-groups file path.
func fileResolverYAML(path string) string {
	return fmt.Sprintf("partitions:\n  - name: default\n    usergroupresolver:\n      type: file\n      file: %s\n      unknownuser: deny\n    queues:\n      - name: root\n        submitacl: \"*\"\n", path)
}

// /validate-config never opens a file the request names: a FIFO (which
// would block the review for ever), /dev/zero (which would be read to the
// 64 MiB cap) and a readable secret (which would be quoted back in the
// denial) are reported as not checked, unread.
func TestValidateConfigOpensNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	writeFile(t, secret, "key: secret value with spaces\n")
	h := start(t, server.Options{ReloadInterval: time.Hour}, nil)

	for _, path := range []string{fifo, "/dev/zero", secret} {
		answer := make(chan string, 1)
		go func() {
			code, out := h.post("/validate-config", "application/json", configReview(t, "UPDATE", fileResolverYAML(path)))
			answer <- fmt.Sprint(code, " ", out)
		}()
		var out string
	wait:
		for {
			select {
			case out = <-answer:
				break wait
			default:
			}
			if path != fifo {
				out = <-answer
				break
			}
			// A writer opened without blocking finds a reader only if
			// usher opened the FIFO.
			w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err == nil {
				w.Close()
				t.Fatalf("usher opened the FIFO the request named")
			}
			if !errors.Is(err, syscall.ENXIO) {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if strings.Contains(out, "secret value") {
			t.Errorf("%s: the answer quotes the file:\n%s", path, out)
		}
		if !strings.HasPrefix(out, "200 ") || !strings.Contains(out, `"allowed":true`) || !strings.Contains(out, "not checked at admission") {
			t.Errorf("%s: want admitted with a warning that the file was not checked:\n%.2000s", path, out)
		}
	}
}

// A users-to-groups file the configuration in service reads is checked
// against the table usher already holds, without reading the file again.
func TestValidateConfigUsesServedTable(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	writeFile(t, users, "alice: dev\n")
	cfg := filepath.Join(dir, "q.yaml")
	writeFile(t, cfg, fileResolverYAML(users))
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	// Broken on disk now: usher still serves the table it read.
	writeFile(t, users, "alice dev\n")
	r := postConfigReview(t, h, configReview(t, "UPDATE", fileResolverYAML(users)))
	if !r.Allowed || len(r.Warnings) != 0 {
		t.Fatalf("want admitted against the served table, without warnings: %+v %q", r.Result, r.Warnings)
	}
}

// A configuration in a request is bounded before it is parsed (1 MiB, the
// most a ConfigMap holds), its YAML nodes are counted, at most 100
// diagnostics come back, and each value a message quotes is cut.
func TestValidateConfigBounds(t *testing.T) {
	// Parsing 1 MB takes long under the race detector on a busy machine:
	// the answer may come after the API server's longest timeout.
	h := start(t, server.Options{ReloadInterval: time.Hour, WriteTimeout: 10 * time.Minute}, nil)
	h.client.Timeout = 0
	check := func(name, queues string, allowed bool, want string) {
		t.Helper()
		r := postConfigReview(t, h, configReview(t, "UPDATE", queues))
		msg := strings.Join(r.Warnings, "\n")
		if r.Result != nil {
			msg = r.Result.Message + "\n" + msg
		}
		if r.Allowed != allowed || !strings.Contains(msg, want) {
			t.Errorf("%s: allowed %t, want %t and %q in:\n%.3000s", name, r.Allowed, allowed, want, msg)
		}
		if len(msg) > 64<<10 {
			t.Errorf("%s: the answer is %d bytes", name, len(msg))
		}
	}
	flow := func(n int) string { return "partitions: [" + strings.Repeat("a,", n) + "a]\n" }
	check("1.2 MB flow sequence", flow(600_000), false, "larger than the 1048576 bytes")
	check("1 MB flow sequence", flow(510_000), false, "YAML nodes")
	check("300 errors", flow(299), false, "and 200 more errors")
	pattern := "^" + strings.Repeat("x", 800_000)
	check("an 800 KB pattern", "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n"+
		"admissionController:\n  accessControl:\n    systemUsers: [\""+pattern+"\"]\n", true, "cut ")
}

// Parsing a configuration draws on the body budget: when the budget cannot
// hold it, the review is refused with 429 rather than parsed.
func TestValidateConfigParseBudget(t *testing.T) {
	h := start(t, server.Options{ReloadInterval: time.Hour, BodyMemory: 2 << 20, SmallBodyReserve: 1 << 20}, nil)
	big := teamsYAML + "#" + strings.Repeat(" x", 20_000) + "\n" // 60,000 nodes at most
	if code, out := h.post("/validate-config", "application/json", configReview(t, "UPDATE", big)); code != 429 {
		t.Fatalf("a configuration of up to 60,000 nodes with a 2 MiB budget: %d %.300s", code, out)
	}
	r := postConfigReview(t, h, configReview(t, "UPDATE", teamsYAML))
	if !r.Allowed {
		t.Fatalf("a small configuration: %+v", r.Result)
	}
}

// A served configuration whose users-to-groups file is not a regular file
// (it loaded before the rule) still loads, with a warning in the log, on
// /readyz and in usher_config_upgrade_warnings.
func TestServedUpgradeWarning(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, fileResolverYAML("/dev/null"))
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	if _, ready := h.get("/readyz"); !strings.Contains(ready, "docs/upgrade.md") {
		t.Errorf("/readyz:\n%s", ready)
	}
	if _, m := h.get("/metrics"); metricValue(m, "usher_config_upgrade_warnings") != "1" {
		t.Errorf("usher_config_upgrade_warnings: %q", metricValue(m, "usher_config_upgrade_warnings"))
	}
	if !strings.Contains(h.logs.String(), "not a regular file") {
		t.Errorf("log:\n%s", h.logs.String())
	}
}
