package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// smallReview is an ordinary pod CREATE (about 600 bytes).
func smallReview(uid string) string {
	return hostileReview(uid, "Pod", "CREATE", "team-a", "p", "alice", []string{"dev"})
}

// largeReview is a valid pod CREATE of about size bytes (a big label).
func largeReview(uid string, size int) string {
	r := smallReview(uid)
	return strings.Replace(r, `"metadata":{"name"`, `"metadata":{"labels":{"big":"`+strings.Repeat("v", size)+`"},"name"`, 1)
}

// budgetOptions: 8 MiB for bodies (one 3 MiB body is charged 6 MiB), a
// 1 MiB reserve for bodies up to 64 KiB, 2s for a body to arrive.
func budgetOptions() server.Options {
	return server.Options{NoAudit: true, BodyMemory: 8 << 20, SmallBodyReserve: 1 << 20, SmallBody: 64 << 10,
		BodyReadTimeout: 2 * time.Second}
}

func rootsOf(h *harness) *x509.CertPool {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(h.srv.CAPEM)
	return roots
}

// stalledPost opens a TLS connection, sends the headers of a POST
// declaring length bytes and then sent bytes of the body, and stalls. It
// returns the status line of the answer (or the read error) on ch.
func stalledPost(t *testing.T, h *harness, path string, length, sent int, ch chan<- string) net.Conn {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(h.base, "https://"), &tls.Config{RootCAs: rootsOf(h), NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: usher\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, length)
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = ' '
		}
		for n := 0; n < sent; n += len(chunk) {
			if _, err := conn.Write(chunk[:min(len(chunk), sent-n)]); err != nil {
				break
			}
		}
	}()
	go func() {
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			ch <- "error: " + err.Error()
			return
		}
		ch <- strings.TrimSpace(line)
	}()
	return conn
}

// Large bodies share a memory budget: those that do not fit are refused
// with 429 and Retry-After before they are read, while small reviews and
// /healthz keep being answered; a stalled body gives its share back after
// BodyReadTimeout.
func TestBodyBudgetShedsLargeBodies(t *testing.T) {
	h := start(t, budgetOptions(), nil)
	ch := make(chan string, 4)
	for range 4 {
		c := stalledPost(t, h, "/mutate", 3<<20, 1<<20, ch)
		defer c.Close()
	}
	var refused int
	deadline := time.After(5 * time.Second) // at once, but the machine may be busy
wait:
	for refused < 3 {
		select {
		case line := <-ch:
			if !strings.Contains(line, " 429 ") {
				t.Fatalf("a large body beyond the budget got %q, want 429", line)
			}
			refused++
		case <-deadline:
			break wait
		}
	}
	if refused != 3 {
		t.Fatalf("%d of 4 stalled 3 MiB bodies were refused at once, want 3 (one fits in 8 MiB)", refused)
	}
	// While the fourth holds the shared budget: small reviews and health
	// checks pass, another large body is refused with Retry-After.
	for i := range 20 {
		if code, body := h.post("/mutate", "application/json", smallReview(fmt.Sprint(i))); code != 200 {
			t.Fatalf("small review under load: %d %s", code, body)
		}
	}
	if code, _ := h.get("/healthz"); code != 200 {
		t.Fatalf("/healthz under load: %d", code)
	}
	resp, err := h.client.Post(h.base+"/mutate", "application/json", strings.NewReader(largeReview("big", 2<<20)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "retry later") {
		t.Fatalf("a large body while the budget is held: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	// The stalled body is cut after BodyReadTimeout and gives its share back.
	select {
	case line := <-ch:
		if strings.Contains(line, " 200 ") {
			t.Fatalf("the stalled body got %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled body still holds its share after 10s (BodyReadTimeout 2s)")
	}
	waitFor(t, func() bool {
		code, _ := h.post("/mutate", "application/json", largeReview("big2", 2<<20))
		return code == 200
	})
	_, m := h.get("/metrics")
	if !strings.Contains(m, `usher_shed_requests_total{handler="mutate",reason="memory"} 4`) {
		t.Errorf("metrics:\n%s", grepLines(m, "usher_shed"))
	}
	if !strings.Contains(m, `usher_body_memory_limit_bytes{budget="shared"} 8.388608e+06`) {
		t.Errorf("metrics:\n%s", grepLines(m, "usher_body"))
	}
}

// A body of unknown length (chunked) is charged as it is read; one that
// outgrows the budget is refused with 429 and Retry-After.
func TestBodyBudgetChunked(t *testing.T) {
	// Reading 4 MiB through TLS can take seconds under -race on a busy
	// machine; this test is about the budget, not the deadline.
	opts := budgetOptions()
	opts.BodyReadTimeout = 30 * time.Second
	h := start(t, opts, nil)
	for _, path := range []string{"/mutate", "/validate", "/v1/access"} {
		body := io.MultiReader(strings.NewReader(strings.Repeat(" ", 6<<20)), strings.NewReader(`{}`)) // no length
		resp, err := h.client.Post(h.base+path, "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 429
		if path == "/v1/access" {
			want = 413 // its 64 KiB cap comes first
		}
		if resp.StatusCode != want || (want == 429 && resp.Header.Get("Retry-After") != "1") {
			t.Errorf("%s, 6 MiB chunked: %d Retry-After %q %.200s; want %d", path, resp.StatusCode, resp.Header.Get("Retry-After"), b, want)
		}
	}
	// Within the budget, a chunked review is decided as usual.
	resp, err := h.client.Post(h.base+"/mutate", "application/json", io.MultiReader(strings.NewReader(largeReview("c", 1<<20))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"allowed":true`) {
		t.Fatalf("1 MiB chunked review: %d %.300s", resp.StatusCode, b)
	}
	_, m := h.get("/metrics")
	if !strings.Contains(m, `usher_shed_requests_total{handler="validate",reason="memory"} 1`) {
		t.Errorf("metrics:\n%s", grepLines(m, "usher_shed"))
	}
	if !strings.Contains(m, `usher_body_memory_in_use_bytes{budget="shared"} 0`) || !strings.Contains(m, `usher_body_memory_in_use_bytes{budget="small"} 0`) {
		t.Errorf("budget not given back:\n%s", grepLines(m, "usher_body"))
	}
}

// HTTP/2 streams draw on the same budget: streams of one connection that
// stall with large bodies are refused beyond it, and the same connection
// still carries small reviews.
func TestBodyBudgetHTTP2(t *testing.T) {
	h := start(t, budgetOptions(), nil)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: rootsOf(h)}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	if resp, err := client.Get(h.base + "/healthz"); err != nil || resp.ProtoMajor != 2 {
		t.Fatalf("no HTTP/2: %v %v", resp, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		code int
		err  error
	}
	results := make(chan result, 4)
	var writers []*io.PipeWriter
	var mu sync.Mutex
	for range 4 {
		pr, pw := io.Pipe()
		mu.Lock()
		writers = append(writers, pw)
		mu.Unlock()
		req, _ := http.NewRequestWithContext(ctx, "POST", h.base+"/mutate", pr)
		req.ContentLength = 3 << 20
		req.Header.Set("Content-Type", "application/json")
		go func() {
			resp, err := client.Do(req)
			if err != nil {
				results <- result{0, err}
				return
			}
			resp.Body.Close()
			results <- result{resp.StatusCode, nil}
		}()
		go pw.Write([]byte(strings.Repeat(" ", 512<<10))) // then stall
	}
	refused := 0
	for refused < 3 {
		select {
		case r := <-results:
			if r.code != 429 {
				t.Fatalf("a stalled HTTP/2 stream beyond the budget got %d %v, want 429", r.code, r.err)
			}
			refused++
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 4 stalled 3 MiB streams were refused at once, want 3", refused)
		}
	}
	for i := range 10 {
		resp, err := client.Post(h.base+"/mutate", "application/json", strings.NewReader(smallReview(fmt.Sprint(i))))
		if err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			t.Fatalf("small review over HTTP/2 under load: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	for _, pw := range writers {
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}
}

// Connections beyond MaxConns are closed as soon as they are accepted;
// closing one makes room again.
func TestMaxConns(t *testing.T) {
	opts := budgetOptions()
	opts.MaxConns = 4
	h := start(t, opts, nil)
	cfg := &tls.Config{RootCAs: rootsOf(h), NextProtos: []string{"http/1.1"}}
	addr := strings.TrimPrefix(h.base, "https://")
	var held []*tls.Conn
	for range 4 {
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if c, err := tls.Dial("tcp", addr, cfg); err == nil {
		c.Close()
		t.Fatal("a fifth connection was served with MaxConns 4")
	}
	held[0].Close()
	h.client.CloseIdleConnections()
	waitFor(t, func() bool {
		resp, err := h.client.Get(h.base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && !strings.Contains(string(b), "usher_shed_connections_total 0") &&
			strings.Contains(string(b), "usher_connections_open 4")
	})
	for _, c := range held[1:] {
		c.Close()
	}
}
