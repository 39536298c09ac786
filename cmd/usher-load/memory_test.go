package main

import (
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// memoryCeiling is the most memory (VmHWM) `usher serve` on its default
// settings may reach under the slow-body attack below; docs/benchmarks.md
// states it and deploy/deployment.yaml's limit (256Mi) is above it with
// margin.
const memoryCeiling = 160 << 20

// The real `usher serve` binary, attacked over TLS by 64 connections that
// each send a 7 MiB body but its last byte and stall (reconnecting when
// answered), while pod reviews (HTTP/1.1 and HTTP/2) and /healthz must all
// keep succeeding, stays under memoryCeiling. USHER_BIN names another
// binary to attack (say, one built from an older commit).
func TestServeMemoryUnderSlowBodies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/status")
	}
	dir := t.TempDir()
	bin := os.Getenv("USHER_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "usher")
		build := exec.Command("go", "build", "-o", bin, "github.com/usherhq/usher/cmd/usher")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	ca := filepath.Join(dir, "ca.pem")
	logs, err := os.Create(filepath.Join(dir, "usher.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := exec.Command(bin, "serve", "--addr", "fd:3", "--ca-out", ca)
	addr := serveSocket(t, cmd)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), "GOMEMLIMIT=", "GOGC=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	roots := x509.NewCertPool()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pem, err := os.ReadFile(ca); err == nil && roots.AppendCertsFromPEM(pem) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("usher serve wrote no certificate")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := dialCheck(addr, roots, 30*time.Second); err != nil {
		t.Fatalf("usher serve does not answer: %v", err)
	}
	_, idle, _ := readRSS(pid)
	res := attack(attackConfig{addr: addr, roots: roots, conns: 64, bodyBytes: 7 << 20, duration: 12 * time.Second, reviewers: 4, pid: pid})
	t.Logf("usher %s (pid %d), idle VmHWM %.1f MiB\n%s", bin, pid, float64(idle)/(1<<20), res)
	select {
	case err := <-exited:
		t.Fatalf("usher serve died under the attack: %v", err)
	default:
	}
	for _, f := range res.failures {
		t.Log(f)
	}
	if res.hwm > memoryCeiling {
		t.Errorf("usher's VmHWM reached %.1f MiB; the ceiling is %d MiB", float64(res.hwm)/(1<<20), memoryCeiling>>20)
	}
	if res.reviewsFailed > 0 || res.healthFailed > 0 || res.reviewsOK < 10 || res.healthOK < 5 {
		t.Errorf("under attack: %d reviews ok, %d failed; %d health checks ok, %d failed", res.reviewsOK, res.reviewsFailed, res.healthOK, res.healthFailed)
	}
	if res.stalled < 64 {
		t.Errorf("only %d slow bodies were sent", res.stalled)
	}
}
