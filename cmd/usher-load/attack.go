package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// attackConfig describes a slow-body attack: conns connections that each
// declare a body of bodyBytes, send all of it but the last byte and stall,
// reconnecting whenever usher answers or closes; meanwhile small reviews
// and /healthz are sent and must keep succeeding.
type attackConfig struct {
	addr      string
	roots     *x509.CertPool
	conns     int
	bodyBytes int
	duration  time.Duration
	// reviewers send pod reviews one after another over keep-alive
	// connections (half HTTP/1.1, half HTTP/2).
	reviewers int
	// pid, when not 0, is usher's process: its RSS is sampled from
	// /proc/PID/status.
	pid int
	// politely makes a refused slow body wait for Retry-After before it
	// connects again (a client rather than an attacker).
	politely bool
	// configReviewers send /validate-config reviews one after another,
	// each a ConfigMap of configAttacks in turn.
	configReviewers int
	// enough, when set, keeps the attack going past duration (up to
	// maxDuration) until it says enough was answered: a busy machine
	// answers fewer requests in the same time, and a count taken in a
	// fixed time would fail there without anything going wrong.
	enough      func(*attackResult) bool
	maxDuration time.Duration
}

// configAttacks are the queues.yaml of the ConfigMaps the config reviewers
// send: a users-to-groups file usher must not read, a flow sequence of
// 1 MiB (refused unparsed), and the two documents of the most YAML nodes
// /validate-config parses (just under its bound of 300,000).
var configAttacks = []string{
	"partitions:\n  - name: default\n    usergroupresolver: {type: file, file: /dev/zero}\n    queues: [{name: root}]\n",
	"partitions: [" + strings.Repeat("a,", 520_000) + "a]\n",
	"partitions: [" + strings.Repeat(":,", 99_000) + ":]\n",
	strings.Repeat("? \n", 99_000),
}

type attackResult struct {
	stalled, answered  int64 // slow bodies sent; answered (any status) or cut
	refused            int64 // answered 429
	reviewsOK          int64
	reviewsFailed      int64
	healthOK           int64
	healthFailed       int64
	failures           []string // the first few failures of reviews and health checks
	p99                time.Duration
	maxRSS, hwm        int64 // bytes
	samples            int
	healthMax, revMax  time.Duration
	reviewsByProto     map[int]int64
	reviewLatencies    []time.Duration
	reviewsMu, failsMu sync.Mutex
	// configByStatus counts the /validate-config answers by HTTP status
	// (0: no answer).
	configByStatus map[int]int64
}

func (r *attackResult) fail(format string, args ...any) {
	r.failsMu.Lock()
	defer r.failsMu.Unlock()
	if len(r.failures) < 10 {
		r.failures = append(r.failures, fmt.Sprintf(format, args...))
	}
}

func (r *attackResult) String() string {
	return fmt.Sprintf("slow bodies: %d sent, %d answered (%d refused with 429)\n"+
		"small reviews: %d ok, %d failed, p99 %v, max %v (by HTTP major version %v)\n"+
		"/healthz: %d ok, %d failed, max %v\n"+
		"/validate-config attacks by HTTP status: %v\n"+
		"usher RSS: max VmRSS %.1f MiB, VmHWM %.1f MiB (%d samples)",
		r.stalled, r.answered, r.refused, r.reviewsOK, r.reviewsFailed, r.p99, r.revMax, r.reviewsByProto,
		r.healthOK, r.healthFailed, r.healthMax, r.configByStatus, float64(r.maxRSS)/(1<<20), float64(r.hwm)/(1<<20), r.samples)
}

// attack runs the attack and returns what happened.
func attack(cfg attackConfig) *attackResult {
	res := &attackResult{reviewsByProto: map[int]int64{}, configByStatus: map[int]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		start := time.Now()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for range t.C {
			elapsed := time.Since(start)
			if elapsed >= cfg.duration && (cfg.enough == nil || elapsed >= cfg.maxDuration || cfg.enough(res)) {
				cancel()
				return
			}
		}
	}()
	var wg sync.WaitGroup
	if cfg.pid != 0 {
		wg.Go(func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				if rss, hwm, err := readRSS(cfg.pid); err == nil {
					res.maxRSS, res.hwm = max(res.maxRSS, rss), max(res.hwm, hwm)
					res.samples++
				}
				select {
				case <-ctx.Done():
					if _, hwm, err := readRSS(cfg.pid); err == nil {
						res.hwm = max(res.hwm, hwm)
					}
					return
				case <-t.C:
				}
			}
		})
	}
	head := fmt.Appendf(nil, "POST /mutate HTTP/1.1\r\nHost: usher\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", cfg.bodyBytes)
	chunk := bytes.Repeat([]byte{' '}, 64<<10)
	for range cfg.conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				slowBody(ctx, cfg, head, chunk, res)
			}
		})
	}
	var bodies [][]byte
	for _, queues := range configAttacks {
		obj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]string{"name": "usher", "namespace": "usher"}, "data": map[string]string{"queues.yaml": queues}})
		b, _ := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": map[string]any{
			"uid": "1", "operation": "UPDATE", "name": "usher", "namespace": "usher", "object": json.RawMessage(obj),
			"kind": map[string]string{"version": "v1", "kind": "ConfigMap"}, "userInfo": map[string]any{"username": "mallory"}}})
		bodies = append(bodies, b)
	}
	for i := range cfg.configReviewers {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cfg.roots}}}
			for n := i; ctx.Err() == nil; n++ {
				code := 0
				resp, err := client.Post("https://"+cfg.addr+"/validate-config", "application/json", bytes.NewReader(bodies[n%len(bodies)]))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				if ctx.Err() == nil {
					res.reviewsMu.Lock()
					res.configByStatus[code]++
					res.reviewsMu.Unlock()
				}
			}
		})
	}
	// Give the slow bodies a head start, then check that usher still answers.
	select {
	case <-time.After(cfg.duration / 4):
	case <-ctx.Done():
	}
	for i := range cfg.reviewers {
		wg.Go(func() {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cfg.roots}, ForceAttemptHTTP2: i%2 == 1, MaxIdleConnsPerHost: 1}
			if i%2 == 0 {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
			}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 15 * time.Second}
			body := []byte(review)
			for ctx.Err() == nil {
				t0 := time.Now()
				resp, err := client.Post("https://"+cfg.addr+"/mutate", "application/json", bytes.NewReader(body))
				if err != nil {
					if ctx.Err() == nil {
						res.fail("review: %v", err)
						atomic.AddInt64(&res.reviewsFailed, 1)
					}
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"allowed":true`)) {
					res.fail("review: %d %.200s", resp.StatusCode, b)
					atomic.AddInt64(&res.reviewsFailed, 1)
					continue
				}
				atomic.AddInt64(&res.reviewsOK, 1)
				res.reviewsMu.Lock()
				res.reviewLatencies = append(res.reviewLatencies, d)
				res.reviewsByProto[resp.ProtoMajor]++
				res.reviewsMu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cfg.roots}}}
		for ctx.Err() == nil {
			t0 := time.Now()
			resp, err := client.Get("https://" + cfg.addr + "/healthz")
			if err != nil {
				if ctx.Err() == nil {
					res.fail("healthz: %v", err)
					atomic.AddInt64(&res.healthFailed, 1)
				}
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				res.fail("healthz: %d", resp.StatusCode)
				atomic.AddInt64(&res.healthFailed, 1)
				continue
			}
			res.healthMax = max(res.healthMax, time.Since(t0))
			atomic.AddInt64(&res.healthOK, 1)
			time.Sleep(100 * time.Millisecond)
		}
	})
	wg.Wait()
	slices.Sort(res.reviewLatencies)
	if n := len(res.reviewLatencies); n > 0 {
		res.p99 = res.reviewLatencies[min(n-1, n*99/100)]
		res.revMax = res.reviewLatencies[n-1]
	}
	return res
}

// slowBody sends one slow body on a new connection and waits for the
// answer, the connection's end or the end of the attack.
func slowBody(ctx context.Context, cfg attackConfig, head, chunk []byte, res *attackResult) {
	d := tls.Dialer{Config: &tls.Config{RootCAs: cfg.roots, NextProtos: []string{"http/1.1"}}}
	c, err := d.DialContext(ctx, "tcp", cfg.addr)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	atomic.AddInt64(&res.stalled, 1)
	answered := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			answered <- ""
			return
		}
		answered <- line
	}()
	go func() {
		if _, err := c.Write(head); err != nil {
			return
		}
		for n := 0; n < cfg.bodyBytes-1; n += len(chunk) {
			if _, err := c.Write(chunk[:min(len(chunk), cfg.bodyBytes-1-n)]); err != nil {
				return
			}
		}
		// Stall, holding the last byte back.
	}()
	select {
	case line := <-answered:
		if ctx.Err() == nil {
			atomic.AddInt64(&res.answered, 1)
			if strings.Contains(line, " 429 ") {
				atomic.AddInt64(&res.refused, 1)
				if cfg.politely {
					select {
					case <-time.After(time.Second):
					case <-ctx.Done():
					}
				}
			}
		}
	case <-ctx.Done():
	}
}

// readRSS returns VmRSS and VmHWM of a process, in bytes.
func readRSS(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

// dialCheck waits until addr accepts TLS connections.
func dialCheck(addr string, roots *x509.CertPool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: roots})
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
