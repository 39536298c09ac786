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

// A sink that stops taking audit records holds no review up: the
// BufferedWriter keeps the lines in memory (past MaxPending it drops them
// and counts them in usher_audit_records_dropped_total) and writes them
// once the sink takes them again.
func TestStalledAuditSinkHoldsNoReviewUp(t *testing.T) {
	const reviews = 40
	w := &gatedWriter{open: make(chan struct{})}
	bw := server.NewBufferedWriter(w, time.Millisecond)
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, enforcedYAML)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{ConfigPath: cfg, WebhookAuth: server.WebhookAuthNone, Listener: ln, AuditDropped: bw.Dropped,
		Logger: slog.New(slog.NewJSONHandler(bw, nil)), AccessAuth: []string{server.AccessAuthNone},
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
	if m := regexp.MustCompile(`(?m)^usher_audit_records_dropped_total (\d+)$`).FindSubmatch(metrics); m == nil || string(m[1]) != "0" {
		t.Fatalf("usher_audit_records_dropped_total: %q in\n%s", m, metrics)
	}
	stop()
	if err := bw.Close(); runErr != nil || err != nil {
		t.Fatal(runErr, err)
	}
	if got := strings.Count(w.String(), `"msg":"audit"`); got < reviews {
		t.Fatalf("%d audit records written once the sink took them, want %d:\n%s", got, reviews, w.String())
	}
}
