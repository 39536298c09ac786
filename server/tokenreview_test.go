package server_test

import (
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/hack/authtest"
	"github.com/usherhq/usher/server"
)

// counter returns the value of the counter name{label="value"}.
func counter(t *testing.T, s *server.Server, name, label, value string) float64 {
	t.Helper()
	mfs, err := server.RegistryOf(s).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}

// Invented bearer tokens cost at most the bucket's TokenReviews: past it,
// a new token gets 429 with Retry-After and is not reviewed, while a
// token in the cache keeps working; every outcome is counted.
func TestTokenReviewsAreRateLimited(t *testing.T) {
	api := authtest.New(t)
	api.AddToken("alice-token", authtest.User{Name: "alice", Groups: []string{"dev"}})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, AccessAuth: []string{server.AccessAuthKubernetes}, Kubeconfig: api.Kubeconfig(t, dir),
		TokenReviewCache: auth.TokenOptions{ReviewRate: 1e-6, ReviewBurst: 2}}, nil)
	alice := caller{token: "alice-token"}
	ask := `{"queue":"root.dev","user":"alice","groups":["dev"]}`
	h.as(alice, "POST", "/v1/access", ask).want(t, "alice", 200)
	h.as(caller{token: "invented-1"}, "POST", "/v1/access", ask).want(t, "an invented token", 401)
	for range 3 {
		a := h.as(caller{token: "invented-2"}, "POST", "/v1/access", ask)
		a.want(t, "an invented token past the bucket", 429, "too many new credentials")
		if a.header.Get("Retry-After") != "1" {
			t.Errorf("429 without Retry-After: %v", a.header)
		}
	}
	h.as(alice, "POST", "/v1/access", ask).want(t, "alice, cached, past the bucket", 200)
	if n := api.TokenReviews.Load(); n != 2 {
		t.Errorf("%d TokenReviews, want 2", n)
	}
	for result, want := range map[string]float64{"authenticated": 1, "unauthenticated": 1, "error": 0, "ratelimited": 3} {
		if got := counter(t, h.srv, "usher_tokenreviews_total", "result", result); got != want {
			t.Errorf("usher_tokenreviews_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	if lines := grepLines(h.logs.String(), "authentication failed"); lines != "" {
		t.Errorf("refused tokens were logged as failures:\n%s", lines)
	}
}
