package auth_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/rest"

	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/cluster"
	"github.com/usherhq/usher/hack/authtest"
)

// counts records TokenOptions.Count's outcomes.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) count(r string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[r]++
}

func (c *counts) get(r string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[r]
}

func reviewer(t *testing.T, api *authtest.APIServer) *auth.KubeReviewer {
	t.Helper()
	kube, err := cluster.Load(api.Kubeconfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := kube.Config
	rev, err := auth.NewKubeReviewer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// With Audiences, a token is accepted only for one of them, as the API
// server says in status.audiences; without, only for the API server's
// own. An API server that does not know audiences names none, and then
// nothing is accepted.
func TestTokenAudiences(t *testing.T) {
	api := authtest.New(t)
	api.AddToken("usher-token", authtest.User{Name: "alice", Audiences: []string{"usher"}})
	api.AddToken("kube-token", authtest.User{Name: "bob"})
	rev := reviewer(t, api)
	ctx := context.Background()
	for _, tc := range []struct {
		audiences []string
		unaware   bool
		token     string
		ok        bool
	}{
		{[]string{"usher"}, false, "usher-token", true},
		{[]string{"usher"}, false, "kube-token", false},
		{nil, false, "kube-token", true},
		{nil, false, "usher-token", false},
		{[]string{"usher", authtest.APIAudience}, false, "kube-token", true},
		{[]string{"usher"}, true, "usher-token", false},
		{[]string{"usher"}, true, "kube-token", false},
		{nil, true, "kube-token", true},
	} {
		api.IgnoreAudiences.Store(tc.unaware)
		var c counts
		a := auth.NewTokenAuthenticator(rev, auth.TokenOptions{Audiences: tc.audiences, Count: c.count})
		_, ok, err := a.AuthenticateToken(ctx, tc.token)
		want := "unauthenticated"
		if tc.ok {
			want = "authenticated"
		}
		if err != nil || ok != tc.ok || c.get(want) != 1 {
			t.Errorf("audiences %q (API server unaware %v), %s: ok %v, err %v, counted %v; want ok %v", tc.audiences, tc.unaware, tc.token, ok, err, c.m, tc.ok)
		}
	}
}

// Invented tokens cost at most ReviewBurst TokenReviews at once: past the
// bucket, a token not in the cache is refused with ErrTooManyReviews
// without a review, while tokens in the cache keep being accepted.
func TestTokenReviewRate(t *testing.T) {
	api := authtest.New(t)
	api.AddToken("alice-token", authtest.User{Name: "alice"})
	var c counts
	a := auth.NewTokenAuthenticator(reviewer(t, api), auth.TokenOptions{ReviewRate: 1e-6, ReviewBurst: 5, Count: c.count})
	ctx := context.Background()
	if _, ok, err := a.AuthenticateToken(ctx, "alice-token"); !ok || err != nil {
		t.Fatalf("alice: %v %v", ok, err)
	}
	for i := range 20 {
		_, ok, err := a.AuthenticateToken(ctx, "invented-"+strings.Repeat("x", i))
		if ok || (i < 4) != (err == nil) || (i >= 4) != errors.Is(err, auth.ErrTooManyReviews) {
			t.Fatalf("invented token %d: ok %v, err %v", i, ok, err)
		}
	}
	if _, ok, err := a.AuthenticateToken(ctx, "alice-token"); !ok || err != nil {
		t.Fatalf("alice, cached, during the flood: %v %v", ok, err)
	}
	if n := api.TokenReviews.Load(); n != 5 {
		t.Errorf("%d TokenReviews, want 5 (the burst)", n)
	}
	if c.get("authenticated") != 1 || c.get("unauthenticated") != 4 || c.get("ratelimited") != 16 {
		t.Errorf("counted %v", c.m)
	}
}

// A redirect from the API server is not followed: the request carries
// usher's credentials, and a TokenReview the caller's token.
func TestKubeReviewerNoRedirects(t *testing.T) {
	var followed atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	defer elsewhere.Close()
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer api.Close()
	rev, err := auth.NewKubeReviewer(&rest.Config{Host: api.URL, BearerToken: "usher-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rev.CreateTokenReview(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "alice-token"}})
	if err == nil || !strings.Contains(err.Error(), "redirected to") || followed.Load() {
		t.Fatalf("error %v, followed %v", err, followed.Load())
	}
}
