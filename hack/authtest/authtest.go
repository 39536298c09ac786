// Package authtest is a stand-in Kubernetes API server for tests of
// delegated authentication: it answers TokenReviews and
// SubjectAccessReviews over real HTTPS, on 127.0.0.1, from tables the test
// fills, and counts what it was asked. Tests reach it through a kubeconfig
// file, so the client code under test is the one production uses.
package authtest

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// ClientToken is the token the API server expects from usher itself; the
// kubeconfig of Kubeconfig carries it.
const ClientToken = "usher-service-account-token"

// APIAudience is the API server's own audience: a TokenReview without
// spec.audiences asks for it, and a token is issued for it unless
// User.Audiences says otherwise.
const APIAudience = "https://kubernetes.default.svc"

// User is a user the API server knows by a token.
type User struct {
	Name   string
	Groups []string
	// Audiences the token is issued for; nil: APIAudience.
	Audiences []string
}

// APIServer is the stand-in API server.
type APIServer struct {
	srv *httptest.Server

	mu     sync.Mutex
	tokens map[string]User
	grants map[string][]string // user or "group:NAME" -> "verb resource.group" / "verb /path"

	// TokenReviews and SARs count the reviews answered.
	TokenReviews, SARs atomic.Int64
	// Fail makes every review answer 500.
	Fail atomic.Bool
	// IgnoreAudiences answers TokenReviews as an API server that does not
	// know audiences: spec.audiences unread, status.audiences unset.
	IgnoreAudiences atomic.Bool
}

// New starts an API server; it stops when the test ends.
func New(t testing.TB) *APIServer {
	t.Helper()
	a := &APIServer{tokens: map[string]User{}, grants: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", a.tokenReview)
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", a.sar)
	a.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+ClientToken {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
			return
		}
		if a.Fail.Load() {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcd is on fire","code":500}`, http.StatusInternalServerError)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// AddToken makes token authenticate as u.
func (a *APIServer) AddToken(token string, u User) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens[token] = u
}

// Grant lets subject (a user name, or "group:NAME") do what, written
// "create accessreviews.usher.io" or "get /metrics".
func (a *APIServer) Grant(subject, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.grants[subject] = append(a.grants[subject], what)
}

// Kubeconfig writes a kubeconfig for this server into dir and returns its
// path.
func (a *APIServer) Kubeconfig(t testing.TB, dir string) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
	path := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: usher
  user:
    token: %s
contexts:
- name: usher
  context: {cluster: test, user: usher}
current-context: usher
`, a.srv.URL, base64.StdEncoding.EncodeToString(ca), ClientToken)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (a *APIServer) tokenReview(w http.ResponseWriter, r *http.Request) {
	a.TokenReviews.Add(1)
	var tr authenticationv1.TokenReview
	if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	u, ok := a.tokens[tr.Spec.Token]
	a.mu.Unlock()
	// As kube-apiserver: the audiences asked for (by default its own)
	// that the token was issued for.
	want, has := tr.Spec.Audiences, u.Audiences
	if len(want) == 0 {
		want = []string{APIAudience}
	}
	if has == nil {
		has = []string{APIAudience}
	}
	var auds []string
	for _, a := range want {
		if slices.Contains(has, a) {
			auds = append(auds, a)
		}
	}
	if !a.IgnoreAudiences.Load() {
		ok = ok && len(auds) > 0
	}
	if !ok || a.IgnoreAudiences.Load() {
		auds = nil
	}
	tr.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, Audiences: auds}
	if ok {
		tr.Status.User = authenticationv1.UserInfo{Username: u.Name, UID: "uid-" + u.Name,
			Groups: append(slices.Clone(u.Groups), "system:authenticated")}
	} else {
		tr.Status.Error = "invalid bearer token"
	}
	tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenReview"
	writeJSON(w, &tr)
}

func (a *APIServer) sar(w http.ResponseWriter, r *http.Request) {
	a.SARs.Add(1)
	var s authorizationv1.SubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var what string
	switch sp := s.Spec; {
	case sp.ResourceAttributes != nil:
		what = sp.ResourceAttributes.Verb + " " + sp.ResourceAttributes.Resource + "." + sp.ResourceAttributes.Group
	case sp.NonResourceAttributes != nil:
		what = sp.NonResourceAttributes.Verb + " " + sp.NonResourceAttributes.Path
	}
	subjects := []string{s.Spec.User}
	for _, g := range s.Spec.Groups {
		subjects = append(subjects, "group:"+g)
	}
	a.mu.Lock()
	for _, sub := range subjects {
		if slices.Contains(a.grants[sub], what) {
			s.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "granted to " + sub}
		}
	}
	a.mu.Unlock()
	s.APIVersion, s.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	writeJSON(w, &s)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
