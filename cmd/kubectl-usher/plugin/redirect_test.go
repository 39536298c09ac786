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

	"k8s.io/client-go/rest"

	"github.com/usherhq/usher/decision"
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
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: usher.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := newUsherClient(&rest.Config{Host: "https://api.example", BearerToken: "alice-secret-token"}, usherConfig{Server: usher.URL, CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.access(context.Background(), decision.AccessRequest{User: "alice", Queue: "root", Action: "submit"})
	if err == nil || !strings.Contains(err.Error(), elsewhere.URL) || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("error %v, want one naming the redirect to %s", err, elsewhere.URL)
	}
	if v := got.Load(); v != nil {
		t.Errorf("the redirect was followed: %s", v)
	}
}
