package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// sample returns the value of the sample written exactly as name (labels
// included) on /metrics, or -1 when there is none.
func (h *harness) sample(name string) float64 {
	h.t.Helper()
	_, body := h.get("/metrics")
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// A review naming 60,000 groups, and a /v1/access request naming more
// than --max-groups, are refused with the limit and the count, and
// counted by source.
func TestGroupsOverLimit(t *testing.T) {
	h := start(t, server.Options{NoAudit: true}, nil)
	groups := make([]string, 60000)
	for i := range groups {
		groups[i] = fmt.Sprintf("CN=group-%06d,OU=Groups,DC=example,DC=com", i)
	}
	code, body := h.post("/mutate", "application/json", hostileReview("u1", "Pod", "CREATE", "team-a", "p", "bob", groups))
	if code != 200 || !strings.Contains(body, `"allowed":false`) || !strings.Contains(body, "names 60000 groups, more than the limit of 2048") {
		t.Fatalf("%d %.400s", code, body)
	}
	short := make([]string, 2049)
	for i := range short {
		short[i] = strconv.Itoa(i)
	}
	acc, _ := json.Marshal(map[string]any{"queue": "root", "user": "bob", "groups": short, "action": "submit"})
	code, body = h.post("/v1/access", "application/json", string(acc))
	if code != 400 || !strings.Contains(body, "2049 groups, more than the limit of 2048") {
		t.Fatalf("/v1/access: %d %.400s", code, body)
	}
	for src, want := range map[string]float64{"request": 1, "annotation": 0, "access": 1} {
		if got := h.sample(`usher_admission_groups_over_limit_total{source="` + src + `"}`); got != want {
			t.Errorf("source %s counted %v, want %v", src, got, want)
		}
	}

	// --max-groups 2: three groups are too many, two are not.
	h = start(t, server.Options{NoAudit: true, MaxGroups: 2}, nil)
	if _, body := h.post("/mutate", "application/json", hostileReview("u2", "Pod", "CREATE", "team-a", "p", "bob", groups[:3])); !strings.Contains(body, "names 3 groups, more than the limit of 2") {
		t.Fatalf("three groups: %.400s", body)
	}
	if _, body := h.post("/mutate", "application/json", hostileReview("u3", "Pod", "CREATE", "team-a", "p", "bob", groups[:2])); !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("two groups: %.400s", body)
	}
}

// Reviews whose callers leave while usher waits for the directory end at
// once and give their share of the body budget back: the directory here
// accepts connections and never answers, with a lookup timeout of ten
// minutes, so only the callers' leaving can end the reviews.
func TestAbandonedReviewsReleaseBudget(t *testing.T) {
	dir, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := dir.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		dir.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, fmt.Sprintf(`partitions:
  - name: default
    groups: resolve
    usergroupresolver:
      type: ldap
      ldap:
        urls: ["ldap://%s"]
        userbasedn: ou=people,dc=example,dc=com
        groupsearch: member
        groupbasedn: ou=groups,dc=example,dc=com
        timeout: 10m
    queues:
      - name: root
        submitacl: "*"
admissionController:
  enforceQueueACLs: true
`, dir.Addr()))
	h := start(t, server.Options{ConfigPath: cfg, NoAudit: true}, nil)
	const n = 6
	body := largeReview("u", 300<<10) // past the small-body reserve: charged to the shared budget
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/mutate", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := h.client.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("a review was answered (%s) while the directory was silent", resp.Status)
			}
		})
	}
	charged := float64(n * (2*len(body) + 8<<10))
	poll(t, "the reviews holding their bodies' share", func() bool {
		return h.sample(`usher_body_memory_in_use_bytes{budget="shared"}`) == charged
	})
	cancel()
	wg.Wait()
	poll(t, "the abandoned reviews giving their share back", func() bool {
		return h.sample(`usher_body_memory_in_use_bytes{budget="shared"}`) == 0 &&
			h.sample(`usher_http_request_duration_seconds_count{code="200",handler="mutate"}`) == n
	})
	if f := h.metric("usher_group_cache_resolver_failures_total"); f != 0 {
		t.Errorf("the directory lookup ended (%v failures): the reviews did not stop for their callers", f)
	}
}

// poll waits for cond, failing the test after a minute.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
