package plugin

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A redirect from --usher-server is not followed: following it would send
// the caller's API-server credentials (here a bearer token) to wherever it
// points, even over plain HTTP. The error names the target.
func TestNoRedirects(t *testing.T) {
	var got atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store("request with Authorization " + r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	usher := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/v1/access", http.StatusTemporaryRedirect)
	}))
	defer usher.Close()
	dir := t.TempDir()
	ca, kc := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: usher.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	config := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://api.example}}]\n" +
		"users: [{name: u, user: {token: alice-secret-token}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	// --as: the question needs no SelfSubjectReview from api.example.
	args := []string{"--kubeconfig", kc, "--usher-server", usher.URL, "--usher-certificate-authority", ca, "--as", "alice", "can-i", "submit", "root"}
	code := Main(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	if code != 2 || !strings.Contains(errOut.String(), elsewhere.URL) || !strings.Contains(errOut.String(), "redirect") {
		t.Errorf("exit %d, stderr %q: want 2 and an error naming the redirect to %s", code, errOut.String(), elsewhere.URL)
	}
	if v := got.Load(); v != nil {
		t.Errorf("the redirect was followed: %s", v)
	}
}

// Through the API server (no --usher-server), a redirect in the answer is
// not followed either: the transport would add the caller's token to the
// request to wherever it points, handing it to whatever serves the
// APIService.
func TestNoRedirectsThroughAPIServer(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var got atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store("request with Authorization " + r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","status":{"userInfo":{"username":"alice","groups":["system:authenticated"]}}}`))
			return
		}
		http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer api.Close()
	dir := t.TempDir()
	ca, kc := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	config := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + api.URL + ", certificate-authority: " + ca + "}}]\n" +
		"users: [{name: u, user: {token: alice-secret-token}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code := Main(context.Background(), []string{"--kubeconfig", kc, "can-i", "submit", "root"}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		func(string) string { return "" })
	if v := got.Load(); v != nil {
		t.Errorf("the redirect was followed: %s", v)
	}
	if code != 2 || !strings.Contains(errOut.String(), "redirect") {
		t.Errorf("exit %d, stderr %q: want 2 and an error naming the redirect", code, errOut.String())
	}
}
