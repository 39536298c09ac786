package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/internal/pki"
	"github.com/usherhq/usher/server"
)

type harness struct {
	t      *testing.T
	srv    *server.Server
	base   string
	client *http.Client
	logs   *syncBuffer
	stop   func()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs a server on a free loopback port and returns a client that
// trusts its certificate. The server stops when the test ends. Tests of
// decisions, reloads and metrics run with authentication switched off
// explicitly (--access-auth none, --webhook-auth none) unless they set
// opts.AccessAuth or opts.WebhookAuth; the tests of authentication are in
// authn_test.go and webhookauth_test.go.
func start(t *testing.T, opts server.Options, roots *x509.CertPool) *harness {
	t.Helper()
	if opts.AccessAuth == nil {
		opts.AccessAuth = []string{server.AccessAuthNone}
	}
	if opts.WebhookAuth == "" {
		opts.WebhookAuth = server.WebhookAuthNone // webhookauth_test.go tests the callers
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	opts.Listener = ln
	opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	if opts.Getenv == nil {
		opts.Getenv = func(string) (string, bool) { return "", false }
	}
	srv, err := server.New(opts)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	if roots == nil {
		roots = x509.NewCertPool()
		roots.AppendCertsFromPEM(srv.CAPEM)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	h := &harness{t: t, srv: srv, base: "https://" + ln.Addr().String(), logs: logs,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}}
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			h.stop()
		}
	})
	return h
}

func (h *harness) post(path, contentType, body string) (int, string) {
	h.t.Helper()
	resp, err := h.client.Post(h.base+path, contentType, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (h *harness) get(path string) (int, string) {
	h.t.Helper()
	resp, err := h.client.Get(h.base + path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const teamsYAML = `partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        carol: [dev]
        bob: []
    queues:
      - name: root
        queues:
          - name: dev
            submitacl: " dev"
          - name: ops
            adminacl: bob
`

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestAccessAPI(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg}, nil)

	code, body := h.post("/v1/access", "application/json", `{"queue":"root.dev","user":"alice","groups":["dev"],"action":"submit"}`)
	var res decision.Output
	if err := json.Unmarshal([]byte(body), &res); err != nil || code != 200 {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if !res.Allowed || res.DecidedBy == nil || res.DecidedBy.Entry != "dev" || res.DecidedBy.ACL != "submitacl" ||
		len(res.Identity.Groups) != 1 || res.Identity.Groups[0].Source != "given" || !strings.Contains(res.Reason, "alice may submit to root.dev") {
		t.Fatalf("response %+v", res)
	}
	// No groups: the partition's resolver is asked, and says where the group came from.
	_, body = h.post("/v1/access", "", `{"partition":"default","queue":"root.dev","user":"carol"}`)
	json.Unmarshal([]byte(body), &res)
	if !res.Allowed || res.Identity.Groups[0].Source != "test" {
		t.Fatalf("resolved: %s", body)
	}
	_, body = h.post("/v1/access", "application/json", `{"queue":"root.ops","user":"carol","action":"admin"}`)
	res = decision.Output{}
	json.Unmarshal([]byte(body), &res)
	if res.Allowed || res.DecidedBy != nil || !strings.Contains(res.Reason, "carol may not administer root.ops") {
		t.Fatalf("denied: %s", body)
	}

	bad := []struct {
		name, ctype, body string
		code              int
		msg               string
	}{
		{"not JSON", "application/json", `{"user":`, 400, "invalid JSON"},
		{"trailing data", "application/json", `{"user":"a"} {}`, 400, "more than one value"},
		{"unknown field", "application/json", `{"user":"a","qeue":"root"}`, 400, `unknown field "qeue"`},
		{"wrong type", "application/json", `{"user":"a","groups":"dev"}`, 400, `field "groups"`},
		{"missing user", "application/json", `{"queue":"root"}`, 400, "user is required"},
		{"unknown action", "application/json", `{"user":"a","action":"delete"}`, 400, `unknown action "delete"`},
		{"unknown partition", "application/json", `{"user":"a","partition":"gpu"}`, 400, "unknown partition"},
		{"unknown queue", "application/json", `{"user":"a","queue":"root.nope"}`, 400, "unknown queue"},
		{"unknown queue, with the closest name", "application/json", `{"user":"a","queue":"root.dve"}`, 400, "root.dev"},
		{"unqualified queue, with YuniKorn's placement of it", "application/json", `{"user":"a","queue":"dev.x"}`, 400, "root.dev_dot_x"},
		{"bad user name", "application/json", `{"user":"a\u0000b"}`, 400, "control character"},
		{"empty body", "application/json", ``, 400, "empty body"},
		{"resolver failure", "application/json", `{"user":"mallory","queue":"root.dev"}`, 503, `group lookup failed for user "mallory"`},
		{"content type", "text/plain", `{"user":"a"}`, 415, "want application/json"},
		{"huge body", "application/json", `{"user":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "larger than"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.post("/v1/access", tt.ctype, tt.body)
			var e struct{ Error string }
			if code != tt.code || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, tt.msg) {
				t.Fatalf("got %d %s, want %d and %q", code, body, tt.code, tt.msg)
			}
			// The server keeps serving.
			if code, _ := h.get("/healthz"); code != 200 {
				t.Fatal("server stopped serving")
			}
		})
	}
	code, _ = h.get("/v1/access")
	if code != 405 {
		t.Fatalf("GET /v1/access: %d", code)
	}
	code, body = h.get("/metrics")
	for _, want := range []string{
		`usher_decisions_total{action="submit",outcome="allowed"} 2`,
		`usher_decisions_total{action="admin",outcome="denied"} 1`,
		`usher_group_cache_misses_total{partition="default"}`,
		`usher_http_request_duration_seconds_count{code="400",handler="access"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !strings.Contains(h.logs.String(), `"msg":"audit","kind":"access","user":"alice"`) {
		t.Errorf("no audit record:\n%s", h.logs.String())
	}
}

// The acceptance example: a pod created by alice in group dev comes
// back with a patch adding her user.info.
func TestMutatePodOnEmbeddedDefault(t *testing.T) {
	h := start(t, server.Options{}, nil)
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
	  "uid":"705ab4f5-6393-11e8-b7cc-42010a800002",
	  "kind":{"group":"","version":"v1","kind":"Pod"},
	  "resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":"team-a","operation":"CREATE",
	  "userInfo":{"username":"alice","groups":["dev","system:authenticated"]},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	code, body := h.post("/mutate", "application/json", review)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var out struct {
		Response struct {
			UID     string
			Allowed bool
			Patch   []byte
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if !out.Response.Allowed || out.Response.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" {
		t.Fatalf("%s", body)
	}
	var patch []struct {
		Op, Path string
		Value    map[string]string
	}
	if err := json.Unmarshal(out.Response.Patch, &patch); err != nil || len(patch) != 1 {
		t.Fatalf("patch %s: %v", out.Response.Patch, err)
	}
	info := patch[0].Value["yunikorn.apache.org/user.info"]
	if patch[0].Op != "add" || patch[0].Path != "/metadata/annotations" || info != `{"user":"alice","groups":["dev","system:authenticated"]}` {
		t.Fatalf("patch %+v", patch)
	}
	code, _ = h.post("/mutate", "application/json", `{"apiVersion":`)
	if code != 400 {
		t.Fatalf("broken review: %d", code)
	}
	code, body = h.get("/metrics")
	if !strings.Contains(body, `usher_admission_reviews_total{kind="Pod",operation="CREATE",outcome="patched"} 1`) {
		t.Fatalf("metrics:\n%s", body)
	}
}

// A broken configuration on disk is refused; the old rules keep deciding;
// /readyz says why; a later good file is taken.
func TestReload(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: 20 * time.Millisecond}, nil)
	decide := func() bool {
		_, body := h.post("/v1/access", "application/json", `{"queue":"root.ops","user":"bob"}`)
		var res decision.Output
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatalf("%s", body)
		}
		return res.Allowed
	}
	if !decide() {
		t.Fatal("bob administers root.ops")
	}
	writeFile(t, cfg, strings.Replace(teamsYAML, "adminacl: bob", "adminacl: bob  x", 1))
	waitFor(t, func() bool { _, b := h.get("/readyz"); return strings.Contains(b, "configuration reload failed") })
	if code, body := h.get("/readyz"); code != 200 || !strings.Contains(h.logs.String(), "more than one space") {
		t.Fatalf("readyz %d %s; the log must hold the reason:\n%s", code, body, h.logs.String())
	}
	if !decide() {
		t.Fatal("the old rules must keep deciding after a refused reload")
	}
	if _, m := h.get("/metrics"); !strings.Contains(m, `usher_config_reloads_total{result="failure"} 1`) {
		t.Fatalf("failure not counted")
	}
	writeFile(t, cfg, strings.Replace(teamsYAML, "adminacl: bob", "adminacl: carol", 1))
	waitFor(t, func() bool { return !decide() })
	if _, b := h.get("/readyz"); strings.Contains(b, "failed") {
		t.Fatalf("readyz still reports the old failure: %s", b)
	}
	// The reload says who gained and who lost rights, and counts them.
	waitFor(t, func() bool { return strings.Contains(h.logs.String(), "configuration reloaded") })
	var reloaded string
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, "configuration reloaded") {
			reloaded = l
		}
	}
	if !strings.Contains(reloaded, "bob") || !strings.Contains(reloaded, "carol") {
		t.Errorf("the reload log line names neither bob's loss nor carol's gain: %s", reloaded)
	}
	_, m := h.get("/metrics")
	for _, want := range []string{`usher_reload_access_changes_total{change="gained"}`, `usher_reload_access_changes_total{change="lost"}`} {
		i := strings.Index(m, want)
		if i < 0 || strings.HasPrefix(m[i+len(want):], " 0\n") {
			t.Errorf("metrics lack a non-zero %s", want)
		}
	}
	// A file that disappears is a failure too, and the rules stay.
	os.Remove(cfg)
	waitFor(t, func() bool {
		_, m := h.get("/metrics")
		return strings.Contains(m, `usher_config_reloads_total{result="failure"} 2`)
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Certificates rotated on disk are served without a restart.
func TestCertificateRotation(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	roots := x509.NewCertPool()
	writePair := func() *x509.Certificate {
		cert, caPEM, err := pki.SelfSigned("usher (self-signed)", []string{"127.0.0.1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
		writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
		writeFile(t, certFile, string(caPEM))
		roots.AppendCertsFromPEM(caPEM)
		return cert.Leaf
	}
	first := writePair()
	h := start(t, server.Options{TLSCertFile: certFile, TLSKeyFile: keyFile}, roots)
	served := func() *x509.Certificate {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(h.base, "https://"), &tls.Config{RootCAs: roots})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	if !served().Equal(first) {
		t.Fatal("first certificate not served")
	}
	time.Sleep(1100 * time.Millisecond) // the files are checked at most once a second
	second := writePair()
	waitFor(t, func() bool { return served().Equal(second) })
	if _, err := server.New(server.Options{TLSCertFile: certFile}); err == nil {
		t.Fatal("a certificate without a key must be refused")
	}
}

func TestEnvironmentOverridesFile(t *testing.T) {
	env := map[string]string{"ADMISSION_CONTROLLER_EXTERNAL_USERS": "^airflow$"}
	h := start(t, server.Options{Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}, nil)
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
	  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":"default","operation":"CREATE","userInfo":{"username":"airflow","groups":["system:authenticated"]},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"dev\"]}"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`
	_, body := h.post("/mutate", "application/json", review)
	if !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("airflow is trusted by the environment: %s", body)
	}
	_, body = h.post("/mutate", "application/json", strings.Replace(review, `"username":"airflow"`, `"username":"bob"`, 1))
	if !strings.Contains(body, `"allowed":false`) {
		t.Fatalf("bob may not forge alice: %s", body)
	}
	if _, err := server.New(server.Options{Getenv: func(k string) (string, bool) {
		return "maybe", k == "ADMISSION_CONTROLLER_BYPASS_AUTH"
	}}); err == nil || !strings.Contains(err.Error(), "ADMISSION_CONTROLLER_BYPASS_AUTH") {
		t.Fatalf("bad environment value: %v", err)
	}
}

func TestNoAudit(t *testing.T) {
	h := start(t, server.Options{NoAudit: true}, nil)
	if code, body := h.post("/v1/access", "application/json", `{"queue":"root","user":"alice"}`); code != 200 || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("%d %s", code, body)
	}
	h.post("/mutate", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"a","operation":"CREATE","userInfo":{"username":"alice"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`)
	if strings.Contains(h.logs.String(), `"msg":"audit"`) {
		t.Fatalf("audit records written with NoAudit:\n%s", h.logs.String())
	}
	if _, m := h.get("/metrics"); !strings.Contains(m, `usher_admission_reviews_total{kind="Pod",operation="CREATE",outcome="patched"} 1`) {
		t.Fatal("reviews must still be counted without audit records")
	}
}

// TestManageWebhooksNeedsCredentials: --manage-webhooks without cluster
// credentials refuses to start, naming the flag.
func TestManageWebhooksNeedsCredentials(t *testing.T) {
	_, err := server.New(server.Options{ManageWebhooks: true, Kubeconfig: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "--manage-webhooks") {
		t.Fatalf("err %v, want one naming --manage-webhooks", err)
	}
}

// A listener that fails ends Run with its error while the caller's context
// is still live: the configuration watch stops with it.
func TestRunReturnsWhenAListenerFails(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // Accept fails at once
	srv, err := server.New(server.Options{ConfigPath: cfg, Listener: ln, Logger: slog.New(slog.DiscardHandler),
		AccessAuth: []string{server.AccessAuthNone}, WebhookAuth: server.WebhookAuthNone})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Run returned no error for a closed listener")
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its listener failing")
	}
}
