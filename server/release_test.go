package server_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// Nothing keeps a generation alive once another replaced it: not the
// engine, the reload's impact summary, the metrics, the logs nor the
// decisions and reviews served meanwhile. Every configuration put in
// service but the last is collected after a few reloads.
func TestReloadReleasesOldGenerations(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, enforcedYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	var collected atomic.Int64
	const reloads = 5
	for i := range reloads {
		c := h.srv.Serving().Current().Config()
		runtime.AddCleanup(c, func(int) { collected.Add(1) }, i)
		_, body := h.post("/mutate", "application/json", podCreate(fmt.Sprintf("u-%d", i), "dev"))
		if !strings.Contains(body, `"allowed":true`) {
			t.Fatalf("review refused: %s", body)
		}
		if _, body := h.post("/v1/access", "application/json", `{"queue":"root.dev","user":"carol","groups":["dev"]}`); !strings.Contains(body, `"allowed":true`) {
			t.Fatalf("decision: %s", body)
		}
		writeFile(t, cfg, strings.Replace(enforcedYAML, "partition: default", fmt.Sprintf("partition: default # %d", i), 1))
		if ok, err := h.srv.Reload(); !ok || err != nil {
			t.Fatalf("reload %d: %v %v", i, ok, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for collected.Load() < reloads && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := collected.Load(); n < reloads {
		t.Fatalf("%d of the %d replaced configurations were collected", n, reloads)
	}
}
