package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// generationYAML is a configuration whose policy and admission settings
// agree only with each other: the marker value x maps to root.<q>, the
// one queue carol may submit to, and the other configuration has no such
// queue. A review that mixed the policy of one with the admission
// settings of the other would ask about a queue the policy does not have
// and be denied.
func generationYAML(q string) string {
	return fmt.Sprintf(`partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: %[1]s
            submitacl: carol
admissionController:
  enforceQueueACLs: true
  queueSources:
    - {kind: label, key: team, scheduler: kueue}
  queueMapping:
    table:
      - {value: x, queue: root.%[1]s}
`, q)
}

const generationReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-%d",
  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
  "namespace":"team","operation":"CREATE","userInfo":{"username":"carol","groups":["dev"]},
  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"team":"x"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`

// No review ever sees the policy of one configuration with the admission
// settings of another: reviews hammer /mutate while the configuration
// flips between two whose policy and admission settings are correlated,
// and every review is allowed (run with -race).
func TestReloadIsOneGeneration(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	if err := os.WriteFile(cfg, []byte(generationYAML("a")), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv, err := server.New(server.Options{
		ConfigPath:     cfg,
		ReloadInterval: time.Hour,
		Logger:         slog.New(slog.NewJSONHandler(logs, nil)),
		Getenv:         func(string) (string, bool) { return "", false },
		AccessAuth:     []string{server.AccessAuthNone},
		WebhookAuth:    server.WebhookAuthNone,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Serving().Close()
	h := srv.Handler()
	review := func(i int) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/mutate", strings.NewReader(fmt.Sprintf(generationReview, i)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, body := review(0); code != 200 || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("before any reload: %d %s", code, body)
	}

	const workers, reloads = 4, 300
	var stop atomic.Bool
	var reviews, denied atomic.Int64
	var firstDenial atomic.Value
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * 1_000_000; !stop.Load(); i++ {
				code, body := review(i)
				reviews.Add(1)
				if code != 200 || !strings.Contains(body, `"allowed":true`) {
					denied.Add(1)
					firstDenial.CompareAndSwap(nil, body)
				}
			}
		}()
	}
	queues := []string{"a", "b"}
	for i := 1; i <= reloads; i++ {
		if err := os.WriteFile(cfg, []byte(generationYAML(queues[i%2])), 0o600); err != nil {
			t.Fatal(err)
		}
		if ok, err := srv.Reload(); !ok || err != nil {
			t.Fatalf("reload %d: %v %v", i, ok, err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // let reviews run across a few generations
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := denied.Load(); n > 0 {
		t.Fatalf("%d of %d reviews were denied across %d reloads; the first:\n%v", n, reviews.Load(), reloads, firstDenial.Load())
	}
	if reviews.Load() < workers {
		t.Fatalf("only %d reviews ran", reviews.Load())
	}
	// Both configurations did decide.
	if l := logs.String(); !strings.Contains(l, `"queue":"root.a"`) || !strings.Contains(l, `"queue":"root.b"`) {
		t.Fatalf("reviews did not run under both configurations")
	}
	t.Logf("%d reviews across %d reloads, all allowed", reviews.Load(), reloads)
}
