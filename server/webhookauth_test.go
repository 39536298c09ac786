package server_test

import (
	"crypto/x509"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usherhq/usher/hack/authtest"
	"github.com/usherhq/usher/server"
)

// webhookCA is the CA of the API server's client certificate in these
// tests, written to a file of its own.
func webhookCA(t *testing.T) (*authtest.CA, string) {
	ca := authtest.NewCA(t, "apiserver-client-ca")
	return ca, ca.WriteFile(t, t.TempDir())
}

// In client-cert mode (usher serve's default) only the API server's
// certificate is answered: a caller without one, with one of another CA,
// of another name or not meant for client authentication gets 401 on
// every webhook path, is counted, and leaves no audit record.
func TestWebhookClientCert(t *testing.T) {
	ca, caFile := webhookCA(t)
	h := start(t, server.Options{WebhookAuth: server.WebhookAuthClientCert, WebhookClientCAFile: caFile}, nil)
	apiserver := ca.Issue(t, "kube-apiserver", nil, authtest.CertOptions{})
	alice := ca.Issue(t, "alice", nil, authtest.CertOptions{})
	serverUsage := ca.Issue(t, "kube-apiserver", nil, authtest.CertOptions{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	forged := authtest.NewCA(t, "apiserver-client-ca").Issue(t, "kube-apiserver", nil, authtest.CertOptions{})

	for _, tc := range []struct {
		name string
		c    caller
		path string
		want string
	}{
		{"no certificate", caller{}, "/mutate", "no client certificate"},
		{"no certificate", caller{}, "/validate", "no client certificate"},
		{"no certificate", caller{}, "/validate-config", "no client certificate"},
		{"another name", caller{cert: &alice}, "/mutate", `the client certificate names \"alice\", not kube-apiserver`},
		{"another CA", caller{cert: &forged}, "/mutate", "the client certificate does not verify"},
		{"a server certificate", caller{cert: &serverUsage}, "/validate", "the client certificate does not verify"},
	} {
		h.as(tc.c, "POST", tc.path, podReview).want(t, tc.name+" "+tc.path, 401,
			`"error":"usher: only the API server may call `+tc.path+` (--webhook-auth client-cert): `+tc.want)
	}
	h.as(caller{cert: &apiserver}, "POST", "/mutate", podReview).want(t, "the API server", 200, `"allowed":true`, `"patch"`)

	_, m := h.get("/metrics")
	for sample, want := range map[string]string{
		`usher_webhook_callers_total{handler="mutate",result="refused"}`:          "3",
		`usher_webhook_callers_total{handler="validate",result="refused"}`:        "2",
		`usher_webhook_callers_total{handler="validate-config",result="refused"}`: "1",
		`usher_webhook_callers_total{handler="mutate",result="verified"}`:         "1",
		`usher_webhook_auth_mode{mode="client-cert"}`:                             "1",
	} {
		if got := metricValue(m, sample); got != want {
			t.Errorf("%s = %q, want %s", sample, got, want)
		}
	}
	if _, r := h.get("/readyz"); !strings.Contains(r, "webhook callers: client-cert") {
		t.Errorf("/readyz does not say the mode:\n%s", r)
	}
	if n := strings.Count(h.logs.String(), `"uid":"705ab4f5`); n != 1 {
		t.Fatalf("%d audit records of the review, want 1 (the API server's):\n%s", n, h.logs.String())
	}
	if !strings.Contains(h.logs.String(), `"webhook":"mutate","caller":"verified"`) {
		t.Fatalf("the audit record does not say the caller was verified:\n%s", h.logs.String())
	}
}

// trapBody fails the test when the refused request's body is read.
type trapBody struct{ t *testing.T }

func (b trapBody) Read([]byte) (int, error) {
	b.t.Error("the body of a refused caller was read")
	return 0, net.ErrClosed
}

// A refused caller costs no read of its body: it is refused before the
// body budget, the decision and the audit hook.
func TestWebhookRefusedBeforeTheBody(t *testing.T) {
	_, caFile := webhookCA(t)
	srv, err := server.New(server.Options{WebhookClientCAFile: caFile, AccessAuth: []string{server.AccessAuthNone}, Logger: discardLogger(),
		Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/mutate", "/validate", "/validate-config"} {
		req := httptest.NewRequest("POST", path, trapBody{t})
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = 1 << 20
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 401 || rec.Header().Get("Connection") != "close" {
			t.Fatalf("%s: %d %v %s, want 401 and the connection closed", path, rec.Code, rec.Header(), rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if m := rec.Body.String(); strings.Contains(m, "usher_admission_reviews_total{") || metricValue(m, `usher_body_memory_in_use_bytes{budget="shared"}`) != "0" {
		t.Fatalf("a refused caller reached the review or holds body memory:\n%s", rec.Body)
	}
}

// In report mode every caller is answered; each is counted as verified or
// not, and its audit record says which.
func TestWebhookReport(t *testing.T) {
	ca, caFile := webhookCA(t)
	h := start(t, server.Options{WebhookAuth: server.WebhookAuthReport, WebhookClientCAFile: caFile}, nil)
	apiserver := ca.Issue(t, "kube-apiserver", nil, authtest.CertOptions{})
	h.as(caller{}, "POST", "/mutate", podReview).want(t, "no certificate", 200, `"allowed":true`)
	h.as(caller{cert: &apiserver}, "POST", "/mutate", podReview).want(t, "the API server", 200, `"allowed":true`)
	_, m := h.get("/metrics")
	for sample, want := range map[string]string{
		`usher_webhook_callers_total{handler="mutate",result="unverified"}`: "1",
		`usher_webhook_callers_total{handler="mutate",result="verified"}`:   "1",
		`usher_webhook_auth_mode{mode="report"}`:                            "1",
	} {
		if got := metricValue(m, sample); got != want {
			t.Errorf("%s = %q, want %s", sample, got, want)
		}
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"caller":"unverified"`) || !strings.Contains(logs, `"caller":"verified"`) || !strings.Contains(logs, "--webhook-auth report") {
		t.Fatalf("the audit records do not tell the callers apart, or report mode is not logged:\n%s", logs)
	}
	if _, r := h.get("/readyz"); !strings.Contains(r, "webhook callers: report") {
		t.Errorf("/readyz does not say the mode:\n%s", r)
	}
}

func TestWebhookAuthOptions(t *testing.T) {
	_, caFile := webhookCA(t)
	for _, tt := range []struct {
		name string
		opts server.Options
		want []string
	}{
		{"the default without a CA", server.Options{}, []string{"--webhook-auth client-cert (the default) needs --webhook-client-ca FILE", "--webhook-auth report", "none"}},
		{"an unknown mode", server.Options{WebhookAuth: "mtls"}, []string{`--webhook-auth "mtls": want client-cert, report or none`}},
		{"a CA none would ignore", server.Options{WebhookAuth: "none", WebhookClientCAFile: caFile}, []string{"--webhook-client-ca is given but --webhook-auth none"}},
		{"a CA file without certificates", server.Options{WebhookClientCAFile: "/dev/null"}, []string{"--webhook-client-ca:", "no PEM"}},
		{"no common name", server.Options{WebhookAuth: "report", WebhookClientCNs: []string{}}, []string{"--webhook-client-cn: give the common names"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = func(string) (string, bool) { return "", false }
			tt.opts.Logger, tt.opts.AccessAuth = discardLogger(), []string{server.AccessAuthNone}
			_, err := server.New(tt.opts)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err %v, want %q in it", err, w)
				}
			}
		})
	}
	logs := &syncBuffer{}
	none := server.Options{WebhookAuth: "none", AccessAuth: []string{server.AccessAuthNone}, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		Getenv: func(string) (string, bool) { return "", false }}
	if _, err := server.New(none); err != nil || !strings.Contains(logs.String(), "WEBHOOK CALLERS ARE NOT CHECKED") {
		t.Fatalf("--webhook-auth none: %v, logs:\n%s", err, logs)
	}
}

// With a webhook listener, the webhook paths are served there (with the
// health checks) and nowhere else, and the rest is not served there, so a
// NetworkPolicy on the webhook port admits the API server alone to them.
func TestWebhookListener(t *testing.T) {
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, server.Options{WebhookListener: wl}, nil)
	hooks := *h
	hooks.base = "https://" + wl.Addr().String()
	for _, tc := range []struct {
		h          *harness
		method     string
		path, body string
		code       int
	}{
		{h, "POST", "/mutate", podReview, 404},
		{h, "POST", "/validate", podReview, 404},
		{h, "POST", "/validate-config", podReview, 404},
		{h, "POST", "/v1/access", `{"user":"alice","queue":"root"}`, 200},
		{h, "GET", "/metrics", "", 200},
		{h, "GET", "/readyz", "", 200},
		{&hooks, "POST", "/mutate", podReview, 200},
		{&hooks, "POST", "/validate", podReview, 200},
		{&hooks, "GET", "/healthz", "", 200},
		{&hooks, "GET", "/readyz", "", 200},
		{&hooks, "POST", "/v1/access", `{"user":"alice","queue":"root"}`, 404},
		{&hooks, "GET", "/metrics", "", 404},
	} {
		a := tc.h.as(caller{}, tc.method, tc.path, tc.body)
		if a.code != tc.code {
			t.Errorf("%s %s%s: %d %s, want %d", tc.method, tc.h.base, tc.path, a.code, a.body, tc.code)
		}
	}
}
