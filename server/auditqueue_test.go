package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// gatedWriter holds every write of an audit record until open is closed,
// as a full disk or a stalled log pipe would; other writes pass.
type gatedWriter struct {
	open chan struct{}
	mu   sync.Mutex
	b    bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"msg":"audit"`)) {
		<-w.open
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *gatedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// With Options.AuditQueue, a sink that stops taking audit records holds
// no review up: the records beyond the queue are dropped and counted in
// usher_audit_records_dropped_total, and the queued ones are written
// when the server stops. (Without it, each review waits for its record
// to be written.)
func TestAuditQueueKeepsSlowSinkOffTheRequestPath(t *testing.T) {
	const queue, reviews = 8, 40
	w := &gatedWriter{open: make(chan struct{})}
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, enforcedYAML)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{ConfigPath: cfg, WebhookAuth: server.WebhookAuthNone, Listener: ln, AuditQueue: queue,
		Logger: slog.New(slog.NewJSONHandler(w, nil)), AccessAuth: []string{server.AccessAuthNone},
		Getenv: func(string) (string, bool) { return "", false }, ReloadInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srv.CAPEM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var runErr error
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			select {
			case <-w.open:
			default:
				close(w.open)
			}
			cancel()
			runErr = <-done
		})
	}
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	base := "https://" + ln.Addr().String()
	for i := range reviews {
		resp, err := client.Post(base+"/mutate", "application/json", strings.NewReader(podCreate(fmt.Sprintf("u-%d", i), "dev")))
		if err != nil {
			t.Fatalf("review %d with the audit sink stalled: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"allowed":true`) {
			t.Fatalf("review %d: %s", i, body)
		}
	}
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^usher_audit_records_dropped_total (\d+)$`).FindSubmatch(metrics)
	if m == nil {
		t.Fatalf("no usher_audit_records_dropped_total in\n%s", metrics)
	}
	dropped, _ := strconv.Atoi(string(m[1]))
	// The queue holds queue records and the writer one more, stalled.
	if dropped < reviews-queue-1 || dropped > reviews-queue {
		t.Fatalf("%d records dropped of %d with a queue of %d", dropped, reviews, queue)
	}
	stop()
	if runErr != nil {
		t.Fatal(runErr)
	}
	if got := strings.Count(w.String(), `"msg":"audit"`); got != reviews-dropped {
		t.Fatalf("%d audit records written on shutdown, want %d:\n%s", got, reviews-dropped, w.String())
	}
}
