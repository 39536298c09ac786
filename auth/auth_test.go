package auth_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/cluster"
	"github.com/usherhq/usher/hack/authtest"
)

// TestKubeReviewer sends real TokenReviews and SubjectAccessReviews over
// HTTPS to a stand-in API server found through a kubeconfig file.
func TestKubeReviewer(t *testing.T) {
	api := authtest.New(t)
	api.AddToken("alice-token", authtest.User{Name: "alice", Groups: []string{"dev"}})
	api.Grant("group:ops", "create accessreviews.usher.io")
	kube, err := cluster.Load(api.Kubeconfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := kube.Config
	rev, err := auth.NewKubeReviewer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ta := auth.NewTokenAuthenticator(rev, auth.TokenOptions{})
	ctx := context.Background()
	u, ok, err := ta.AuthenticateToken(ctx, "alice-token")
	if err != nil || !ok || u.Name != "alice" || !slices.Equal(u.Groups, []string{"dev", "system:authenticated"}) || u.UID != "uid-alice" {
		t.Fatalf("alice: %+v %v %v", u, ok, err)
	}
	if _, ok, err := ta.AuthenticateToken(ctx, "forged"); ok || err != nil {
		t.Fatalf("forged token: ok=%v err=%v", ok, err)
	}
	z := auth.NewSARAuthorizer(rev, auth.SAROptions{})
	ask := auth.Attributes{Verb: "create", APIGroup: "usher.io", Resource: "accessreviews"}
	ask.User = auth.User{Name: "bob", Groups: []string{"ops"}}
	if d, reason, err := z.Authorize(ctx, ask); d != auth.Allow || err != nil || reason != "granted to group:ops" {
		t.Fatalf("bob: %v %q %v", d, reason, err)
	}
	ask.User = u
	if d, _, err := z.Authorize(ctx, ask); d != auth.NoOpinion || err != nil {
		t.Fatalf("alice: %v %v", d, err)
	}

	t.Run("an API server outage is an error, not a rejection", func(t *testing.T) {
		api.Fail.Store(true)
		defer api.Fail.Store(false)
		if _, ok, err := ta.AuthenticateToken(ctx, "new-token"); ok || err == nil {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
		ask.User = auth.User{Name: "carol"}
		if d, _, err := z.Authorize(ctx, ask); d == auth.Allow || err == nil {
			t.Fatalf("%v %v", d, err)
		}
	})
	t.Run("usher's own credential is rejected", func(t *testing.T) {
		cfg := *cfg
		cfg.BearerToken = "wrong"
		rev, _ := auth.NewKubeReviewer(&cfg)
		if _, err := rev.CreateTokenReview(ctx, nil); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestClientCert(t *testing.T) {
	ca := authtest.NewCA(t, "usher-clients")
	other := authtest.NewCA(t, "someone-else")
	a, err := auth.NewClientCertAuthenticator(ca.WriteFile(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		chain  []*x509.Certificate
		want   string
		groups []string
	}{
		{"CN is the user, O the groups", []*x509.Certificate{ca.Issue(t, "alice", []string{"dev", "ops"}, authtest.CertOptions{}).Leaf}, "alice", []string{"dev", "ops", "system:authenticated"}},
		{"system:authenticated once", []*x509.Certificate{ca.Issue(t, "alice", []string{"system:authenticated"}, authtest.CertOptions{}).Leaf}, "alice", []string{"system:authenticated"}},
		{"another CA", []*x509.Certificate{other.Issue(t, "alice", nil, authtest.CertOptions{}).Leaf}, "", nil},
		{"a server certificate", []*x509.Certificate{ca.Issue(t, "alice", nil, authtest.CertOptions{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}).Leaf}, "", nil},
		{"expired", []*x509.Certificate{ca.Issue(t, "alice", nil, authtest.CertOptions{NotAfter: time.Now().Add(-time.Minute)}).Leaf}, "", nil},
		{"no common name", []*x509.Certificate{ca.Issue(t, "", []string{"dev"}, authtest.CertOptions{}).Leaf}, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, err := a.Verify(tt.chain)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted as %+v", u)
				}
				return
			}
			if err != nil || u.Name != tt.want || !slices.Equal(u.Groups, tt.groups) {
				t.Fatalf("%+v %v", u, err)
			}
		})
	}
	r, _ := http.NewRequest("GET", "/", nil)
	if _, ok, err := a.AuthenticateRequest(r); ok || err != nil {
		t.Fatalf("plain HTTP request: ok=%v err=%v", ok, err)
	}
	if _, err := auth.NewClientCertAuthenticator("/nonexistent"); err == nil {
		t.Fatal("missing CA file accepted")
	}
}

func TestBearerToken(t *testing.T) {
	for h, want := range map[string]string{"Bearer abc": "abc", "bearer abc ": "abc", "Basic abc": "", "Bearer": "", "": ""} {
		r, _ := http.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		if got := auth.BearerToken(r); got != want {
			t.Errorf("%q: %q, want %q", h, got, want)
		}
	}
}
