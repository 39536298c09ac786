package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/hack/authtest"
	"github.com/usherhq/usher/server"
)

// caller is one client of the server: a bearer token, a client
// certificate, or neither.
type caller struct {
	token string
	cert  *tls.Certificate
}

type answer struct {
	code   int
	body   string
	header http.Header
}

// as sends a request as c over a connection of its own (a client
// certificate is per connection).
func (h *harness) as(c caller, method, path, body string) answer {
	h.t.Helper()
	base := h.client.Transport.(*http.Transport).TLSClientConfig
	cfg := &tls.Config{RootCAs: base.RootCAs}
	if c.cert != nil {
		cfg.Certificates = []tls.Certificate{*c.cert}
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer cl.CloseIdleConnections()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

// want fails the test unless a has code and its body contains every want.
func (a answer) want(t *testing.T, what string, code int, wants ...string) {
	t.Helper()
	if a.code != code {
		t.Fatalf("%s: %d %s, want %d", what, a.code, a.body, code)
	}
	for _, w := range wants {
		if !strings.Contains(a.body, w) {
			t.Fatalf("%s: %d %s, want %q in it", what, a.code, a.body, w)
		}
	}
}

func metricValue(body, sample string) string {
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), sample+" "); ok {
			return v
		}
	}
	return ""
}

const podReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
  "uid":"705ab4f5-6393-11e8-b7cc-42010a800002",
  "kind":{"group":"","version":"v1","kind":"Pod"},
  "resource":{"group":"","version":"v1","resource":"pods"},
  "namespace":"team-a","operation":"CREATE",
  "userInfo":{"username":"alice","groups":["dev","system:authenticated"]},
  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`

// With usher's defaults and no cluster or CA to check callers with, an
// anonymous caller gets no decision and no metrics, and learns how to turn
// authentication on (or off); the webhooks and health checks still answer.
func TestAccessRefusedByDefault(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	// An empty, non-nil AccessAuth is the default (auto); nil would make
	// the harness switch authentication off.
	h := start(t, server.Options{ConfigPath: cfg, AccessAuth: []string{}}, nil)
	anon := caller{}
	a := h.as(anon, "POST", "/v1/access", `{"queue":"root.dev","user":"alice","groups":["dev"],"action":"submit"}`)
	a.want(t, "anonymous /v1/access", 401, "--kubeconfig", "--client-ca", "--access-auth none")
	if strings.Contains(a.body, "allowed") {
		t.Fatalf("a decision leaked: %s", a.body)
	}
	h.as(anon, "GET", "/v1/access", "").want(t, "anonymous GET /v1/access", 401)
	h.as(caller{token: "anything"}, "POST", "/v1/access", `{"user":"alice"}`).want(t, "a token nobody can check", 401)
	h.as(anon, "GET", "/metrics", "").want(t, "anonymous /metrics", 401)
	h.as(anon, "GET", "/healthz", "").want(t, "/healthz", 200, "ok")
	h.as(anon, "POST", "/mutate", podReview).want(t, "/mutate", 200, `"allowed":true`, `"patch"`)
	if !strings.Contains(h.logs.String(), "no authentication configured") {
		t.Errorf("no warning at start:\n%s", h.logs.String())
	}
}

func TestAccessAuthNoneIsLoud(t *testing.T) {
	h := start(t, server.Options{AccessAuth: []string{server.AccessAuthNone}}, nil)
	h.as(caller{}, "POST", "/v1/access", `{"queue":"root","user":"alice"}`).want(t, "anonymous with auth off", 200, `"allowed":true`)
	if !strings.Contains(h.logs.String(), `"level":"WARN","msg":"AUTHENTICATION IS OFF (--access-auth none)`) {
		t.Errorf("no loud warning:\n%s", h.logs.String())
	}
}

// TestAccessKubernetes authenticates callers with TokenReviews and
// authorizes them with SubjectAccessReviews against a stand-in API server
// reached through a kubeconfig file.
func TestAccessKubernetes(t *testing.T) {
	api := authtest.New(t)
	for tok, u := range map[string]authtest.User{
		"alice-token": {Name: "alice", Groups: []string{"dev"}},
		"carol-token": {Name: "carol", Groups: []string{"reviewers"}},
		"prom-token":  {Name: "system:serviceaccount:monitoring:prometheus"},
		"root-token":  {Name: "root", Groups: []string{"system:masters"}},
	} {
		api.AddToken(tok, u)
	}
	api.Grant("group:reviewers", "create accessreviews.usher.io")
	api.Grant("system:serviceaccount:monitoring:prometheus", "get /metrics")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, AccessAuth: []string{server.AccessAuthKubernetes}, Kubeconfig: api.Kubeconfig(t, dir)}, nil)
	alice, carol, prom, root := caller{token: "alice-token"}, caller{token: "carol-token"}, caller{token: "prom-token"}, caller{token: "root-token"}

	a := h.as(caller{}, "POST", "/v1/access", `{"queue":"root.dev","user":"alice"}`)
	a.want(t, "anonymous", 401, "bearer token")
	if a.header.Get("WWW-Authenticate") == "" || a.header.Get("X-Request-Id") == "" {
		t.Errorf("401 headers: %v", a.header)
	}
	h.as(caller{token: "forged"}, "POST", "/v1/access", `{"queue":"root.dev","user":"alice"}`).want(t, "forged token", 401)

	misses := func() string {
		return metricValue(h.as(prom, "GET", "/metrics", "").body, `usher_group_cache_misses_total{partition="default"}`)
	}
	before := misses()
	// Asking about someone else without permission: 403, and no group
	// lookup is made for the invented name.
	for _, body := range []string{
		`{"queue":"root.dev","user":"bob"}`,
		`{"queue":"root.dev","user":"invented-1"}`,
		`{"queue":"root.dev","user":"alice","groups":["ops"]}`,
		`{"user":"bob","action":"kill","application":{"id":"app-1","owner":"bob","queue":"root.dev"}}`,
	} {
		h.as(alice, "POST", "/v1/access", body).want(t, "alice: "+body, 403, `\"alice\" may ask only about itself`, "accessreviews", "usher.io")
	}
	if after := misses(); after != before {
		t.Fatalf("a refused question made a group lookup: misses %s -> %s", before, after)
	}
	// About herself: her name, no groups (the resolver decides) or a
	// subset of the groups she authenticated with.
	h.as(alice, "POST", "/v1/access", `{"queue":"root.dev","user":"alice","groups":["dev"]}`).want(t, "alice about herself", 200, `"allowed":true`)
	h.as(alice, "POST", "/v1/access", `{"queue":"root.dev","user":"alice","groups":["dev","system:authenticated"]}`).want(t, "alice with all her groups", 200)
	h.as(alice, "POST", "/v1/access", `{"queue":"root","user":"alice"}`).want(t, "alice, resolver", 503, "group lookup failed") // the test resolver does not know her
	// With the permission, anyone.
	h.as(carol, "POST", "/v1/access", `{"queue":"root.dev","user":"bob"}`).want(t, "carol about bob", 200, `"allowed":false`)
	h.as(root, "POST", "/v1/access", `{"queue":"root.dev","user":"bob"}`).want(t, "system:masters about bob", 200)

	// /metrics: the non-resource URL /metrics, verb get.
	h.as(alice, "GET", "/metrics", "").want(t, "alice /metrics", 403, "/metrics")
	m := h.as(prom, "GET", "/metrics", "")
	m.want(t, "prometheus /metrics", 200, `usher_access_auth_total{endpoint="access",result="forbidden"} 4`,
		`usher_access_auth_total{endpoint="access",result="self"} 3`, `usher_access_auth_total{endpoint="metrics",result="forbidden"} 1`)
	sars := api.SARs.Load()
	h.as(root, "GET", "/metrics", "").want(t, "system:masters /metrics", 200)
	if api.SARs.Load() != sars {
		t.Error("a privileged caller needed a SubjectAccessReview")
	}
	// Tokens are cached: alice's dozen requests made one TokenReview.
	reviews := api.TokenReviews.Load()
	for range 5 {
		h.as(alice, "POST", "/v1/access", `{"queue":"root.dev","user":"alice","groups":["dev"]}`)
	}
	if api.TokenReviews.Load() != reviews {
		t.Errorf("a cached token was reviewed again")
	}

	t.Run("API server outage", func(t *testing.T) {
		api.Fail.Store(true)
		defer api.Fail.Store(false)
		api.AddToken("new-token", authtest.User{Name: "dave"})
		a := h.as(caller{token: "new-token"}, "POST", "/v1/access", `{"queue":"root.dev","user":"dave"}`)
		a.want(t, "new token during an outage", 503, "authentication unavailable")
		if strings.Contains(a.body, "etcd") || strings.Contains(a.body, "127.0.0.1") {
			t.Errorf("the answer reveals the API server's error: %s", a.body)
		}
		// prometheus's token is cached, but whether it may ask about others
		// is not: the SubjectAccessReview fails, closed.
		h.as(prom, "POST", "/v1/access", `{"queue":"root.ops","user":"bob"}`).want(t, "uncached authorization during an outage", 503, "authorization unavailable")
		if !strings.Contains(h.logs.String(), "etcd is on fire") {
			t.Error("the log lacks the API server's error")
		}
	})
}

// TestAccessClientCert authenticates callers by client certificates, over
// real TLS: the certificate's CN is the user, its O the groups.
func TestAccessClientCert(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	ca := authtest.NewCA(t, "usher-clients")
	other := authtest.NewCA(t, "kube-apiserver-clients")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, AccessAuth: []string{server.AccessAuthClientCert}, ClientCAFile: ca.WriteFile(t, dir)}, nil)
	certOf := func(c tls.Certificate) caller { return caller{cert: &c} }
	alice := certOf(ca.Issue(t, "alice", []string{"dev"}, authtest.CertOptions{}))
	root := certOf(ca.Issue(t, "root", []string{"system:masters"}, authtest.CertOptions{}))
	stranger := certOf(other.Issue(t, "root", []string{"system:masters"}, authtest.CertOptions{}))
	server := certOf(ca.Issue(t, "root", []string{"system:masters"}, authtest.CertOptions{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}))

	h.as(caller{}, "POST", "/v1/access", `{"queue":"root.dev","user":"alice"}`).want(t, "no certificate", 401, "client certificate")
	h.as(stranger, "POST", "/v1/access", `{"queue":"root.dev","user":"alice"}`).want(t, "another CA's certificate", 401)
	h.as(server, "POST", "/v1/access", `{"queue":"root.dev","user":"alice"}`).want(t, "a server certificate", 401)
	h.as(alice, "POST", "/v1/access", `{"queue":"root.dev","user":"alice","groups":["dev"]}`).want(t, "alice about herself", 200, `"allowed":true`)
	h.as(alice, "POST", "/v1/access", `{"queue":"root.dev","user":"bob"}`).want(t, "alice about bob", 403)
	h.as(root, "POST", "/v1/access", `{"queue":"root.dev","user":"bob","groups":["dev"]}`).want(t, "system:masters about bob", 200, `"allowed":true`)
	h.as(alice, "GET", "/metrics", "").want(t, "alice /metrics", 403)
	h.as(root, "GET", "/metrics", "").want(t, "system:masters /metrics", 200, "usher_access_auth_total")
	// The API server may call the webhooks with a certificate of its own
	// CA, or none: the handshake must not fail.
	h.as(stranger, "POST", "/mutate", podReview).want(t, "/mutate with another CA's certificate", 200, `"allowed":true`)
	h.as(caller{}, "POST", "/validate", podReview).want(t, "/validate without a certificate", 200)
}

func TestAccessAuthOptions(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	ca := authtest.NewCA(t, "ca").WriteFile(t, t.TempDir())
	for _, tt := range []struct {
		name string
		opts server.Options
		want string
	}{
		{"unknown value", server.Options{AccessAuth: []string{"token"}}, `--access-auth "token"`},
		{"none with others", server.Options{AccessAuth: []string{"none", "kubernetes"}}, "cannot be combined"},
		{"kubernetes without a cluster", server.Options{AccessAuth: []string{"kubernetes"}}, "no cluster"},
		{"a missing kubeconfig", server.Options{AccessAuth: []string{"kubernetes"}, Kubeconfig: "/nonexistent"}, "/nonexistent"},
		{"client-cert without a CA", server.Options{AccessAuth: []string{"client-cert"}}, "--client-ca"},
		{"a CA nobody uses", server.Options{AccessAuth: []string{"kubernetes"}, ClientCAFile: ca}, "does not include client-cert"},
		{"a CA file without certificates", server.Options{AccessAuth: []string{"client-cert"}, ClientCAFile: "/dev/null"}, "no PEM"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = func(string) (string, bool) { return "", false }
			tt.opts.Logger = discardLogger()
			_, err := server.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// The error body of a refused request is JSON with a request id.
func TestAccessErrorsAreJSON(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	h := start(t, server.Options{AccessAuth: []string{}}, nil)
	a := h.as(caller{}, "POST", "/v1/access", `{}`)
	var e struct{ Error, RequestID string }
	if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.RequestID == "" || e.RequestID != a.header.Get("X-Request-Id") {
		t.Fatalf("%s %v %v", a.body, err, a.header)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// An admission denial is read by whoever created the object: when the
// groups cannot be found it says so with a request id, and the resolver's
// error stays in the log.
func TestAdmissionHidesResolverErrors(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, `partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: test
      users:
        alice: [dev]
    queues:
      - name: root
        submitacl: "*"
admissionController:
  enforceQueueACLs: true
`)
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	review := strings.ReplaceAll(podReview, `"username":"alice"`, `"username":"mallory"`)
	review = strings.ReplaceAll(review, `"metadata":{"name":"p"`, `"metadata":{"labels":{"queue":"root"},"name":"p"`)
	a := h.as(caller{}, "POST", "/mutate", review)
	a.want(t, "mallory's pod", 200, `"allowed":false`, "group lookup failed", "request id")
	if strings.Contains(a.body, "unknown user") || strings.Contains(a.body, "test:") {
		t.Fatalf("the denial carries the resolver's error: %s", a.body)
	}
	if !strings.Contains(h.logs.String(), `unknown user \"mallory\"`) {
		t.Errorf("the log lacks the resolver's error:\n%s", h.logs.String())
	}
}
