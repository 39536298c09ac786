package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/server"
)

// A short run against a real server on loopback reports throughput and
// percentiles with no failures.
func TestLoadAgainstServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Listener: ln, NoAudit: true, WebhookAuth: server.WebhookAuthNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, srv.CAPEM, 0o600)
	var out, errb bytes.Buffer
	code := run([]string{"--addr", ln.Addr().String(), "--ca", ca, "--conns", "2", "--duration", "200ms", "--max-requests", "200"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "0 failed") || !strings.Contains(out.String(), "p99") {
		t.Fatalf("code %d\n%s%s", code, out.String(), errb.String())
	}
	if code := run([]string{"--addr", "10.0.0.1:8443"}, &out, &errb); code != 2 {
		t.Fatal("a non-loopback address must be refused")
	}
}
