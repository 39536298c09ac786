package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// memoryCeiling is the most memory (VmHWM) `usher serve` on its default
// settings may reach under the attacks below; docs/benchmarks.md
// states it and deploy/deployment.yaml's limit (256Mi) is above it with
// margin.
const memoryCeiling = 160 << 20

// The real `usher serve` binary, attacked over TLS by 64 connections that
// each send a 7 MiB body but its last byte and stall (reconnecting when
// answered), while pod reviews (HTTP/1.1 and HTTP/2) and /healthz must all
// keep succeeding, stays under memoryCeiling. USHER_BIN names another
// binary to attack (say, one built from an older commit).
func TestServeMemoryUnderSlowBodies(t *testing.T) {
	res := serveUnderAttack(t, attackConfig{conns: 64, bodyBytes: 7 << 20, duration: 12 * time.Second, reviewers: 4,
		enough: answered(0), maxDuration: 2 * time.Minute})
	if res.stalled < 64 {
		t.Errorf("only %d slow bodies were sent", res.stalled)
	}
}

// The same under eight clients that send /validate-config reviews one
// after another (configAttacks: a ConfigMap naming /dev/zero as its
// users-to-groups file, a 1 MiB flow sequence, and the densest YAML usher
// parses), each answered (200, or 429 when the body budget cannot hold
// the parse).
func TestServeMemoryUnderConfigAttacks(t *testing.T) {
	res := serveUnderAttack(t, attackConfig{duration: 12 * time.Second, reviewers: 4, configReviewers: 8,
		enough: answered(10), maxDuration: 2 * time.Minute})
	var answered int64
	for code, n := range res.configByStatus {
		if code != 200 && code != 429 {
			t.Errorf("%d /validate-config reviews answered %d", n, code)
		}
		answered += n
	}
	if res.configByStatus[200] < 10 {
		t.Errorf("only %d of %d /validate-config reviews were decided", res.configByStatus[200], answered)
	}
}

// answered says when an attack has seen enough to judge usher by: 10 pod
// reviews and 5 health checks answered, and configs /validate-config
// reviews decided. The attack runs at least its duration and then until
// this holds, so that a slow machine is judged on as many answers as a
// fast one.
func answered(configs int64) func(*attackResult) bool {
	return func(r *attackResult) bool {
		r.reviewsMu.Lock()
		decided := r.configByStatus[200]
		r.reviewsMu.Unlock()
		return atomic.LoadInt64(&r.reviewsOK) >= 10 && atomic.LoadInt64(&r.healthOK) >= 5 && decided >= configs
	}
}

// serveUnderAttack starts `usher serve` on its default settings (USHER_BIN,
// or one built from this tree), attacks it as cfg says and checks that it
// stays up under memoryCeiling and that every review and health check
// succeeds.
func serveUnderAttack(t *testing.T, cfg attackConfig) *attackResult {
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
	cmd := exec.Command(bin, "serve", "--addr", "fd:3", "--ca-out", ca, "--webhook-auth", "none")
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
	cfg.addr, cfg.roots, cfg.pid = addr, roots, pid
	res := attack(cfg)
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
	return res
}

// groupsBody is a pod CREATE by bob in the groups g0 ... g(n-1), when
// inRequest, and carrying a user.info annotation naming bob in the same
// groups in reverse order, when inAnnotation.
func groupsBody(n int, inRequest, inAnnotation bool) []byte {
	groups := make([]string, n)
	for i := range groups {
		groups[i] = fmt.Sprintf("g%d", i)
	}
	list, _ := json.Marshal(groups)
	slices.Reverse(groups)
	reversed, _ := json.Marshal(groups)
	meta := `{"name":"p","namespace":"team-a"}`
	if inAnnotation {
		ann, _ := json.Marshal(`{"user":"bob","groups":` + string(reversed) + `}`)
		meta = `{"name":"p","namespace":"team-a","annotations":{"yunikorn.apache.org/user.info":` + string(ann) + `}}`
	}
	if !inRequest {
		list = []byte(`["dev"]`)
	}
	return fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",`+
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},`+
		`"namespace":"team-a","operation":"CREATE","userInfo":{"username":"bob","groups":%s},`+
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":%s,"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, list, meta)
}

// The real `usher serve` binary on its default settings, sent reviews
// naming 300,000 groups (in request.userInfo, in a user.info annotation,
// and in both in another order) by 16 clients at once, half of which give
// up after 50ms and send the next, stays under memoryCeiling, refuses
// each with the group limit, and keeps answering pod reviews and
// /healthz.
func TestServeMemoryUnderGroupAttack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/status")
	}
	bin := usherBinary(t)
	addr, roots, pid := startServe(t, bin)
	bodies := [][]byte{groupsBody(300000, true, false), groupsBody(300000, false, true), groupsBody(300000, true, true)}
	const duration = 12 * time.Second
	ctx, cancel := context.WithCancel(context.Background()) // ends when the attack below has seen enough
	defer cancel()
	var refused, abandoned, other atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: i%4 == 1}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			for n := 0; ctx.Err() == nil; n++ {
				rctx, stop := ctx, context.CancelFunc(func() {})
				if i%2 == 0 {
					rctx, stop = context.WithTimeout(ctx, 50*time.Millisecond)
				}
				req, _ := http.NewRequestWithContext(rctx, http.MethodPost, "https://"+addr+"/mutate", bytes.NewReader(bodies[n%3]))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				switch {
				case err != nil && rctx.Err() != nil:
					abandoned.Add(1)
				case err != nil:
					other.Add(1)
				default:
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 && bytes.Contains(b, []byte("names 300000 groups, more than the limit of 2048")) {
						refused.Add(1)
					} else if resp.StatusCode != 429 { // the body budget is full
						other.Add(1)
						t.Logf("%d %.200s", resp.StatusCode, b)
					}
				}
				stop()
			}
		})
	}
	res := attack(attackConfig{addr: addr, roots: roots, duration: duration, reviewers: 4, pid: pid,
		enough: answered(0), maxDuration: 2 * time.Minute})
	cancel()
	wg.Wait()
	t.Logf("usher %s (pid %d)\n300,000-group reviews: %d refused at the limit, %d abandoned, %d other\n%s",
		bin, pid, refused.Load(), abandoned.Load(), other.Load(), res)
	for _, f := range res.failures {
		t.Log(f)
	}
	if _, _, err := readRSS(pid); err != nil {
		t.Fatalf("usher serve died under the attack: %v", err)
	}
	if res.hwm > memoryCeiling {
		t.Errorf("usher's VmHWM reached %.1f MiB; the ceiling is %d MiB", float64(res.hwm)/(1<<20), memoryCeiling>>20)
	}
	if res.reviewsFailed > 0 || res.healthFailed > 0 || res.reviewsOK < 10 || res.healthOK < 5 {
		t.Errorf("under attack: %d reviews ok, %d failed; %d health checks ok, %d failed", res.reviewsOK, res.reviewsFailed, res.healthOK, res.healthFailed)
	}
	if refused.Load() < 10 {
		t.Errorf("only %d 300,000-group reviews were refused at the limit", refused.Load())
	}
}
