package auth_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/internal/pki"
)

// TestRequestHeader: over real TLS, the headers name the caller only when
// the front proxy's certificate (its CA, an allowed name) comes with them;
// anyone else who sends X-Remote-User is not authenticated.
func TestRequestHeader(t *testing.T) {
	frontCA, err := pki.Issue(pki.Spec{CommonName: "front-proxy-ca", IsCA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := pki.Issue(pki.Spec{CommonName: "another-ca", IsCA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list := func(s ...string) string { b, _ := json.Marshal(s); return string(b) }
	a, err := auth.NewRequestHeader(map[string]string{"requestheader-client-ca-file": string(pki.CertPEM(frontCA)),
		"requestheader-allowed-names": list("front-proxy-client"), "requestheader-username-headers": list("X-Remote-User"),
		"requestheader-group-headers": list("X-Remote-Group"), "requestheader-extra-headers-prefix": list("X-Remote-Extra-")})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan any, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.AuthenticateRequest(r)
		if !ok || err != nil {
			got <- err
			return
		}
		got <- u
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()
	ask := func(ca *tls.Certificate, cn string) any {
		t.Helper()
		c := srv.Client()
		if ca != nil {
			crt, err := pki.Issue(pki.Spec{CommonName: cn}, ca)
			if err != nil {
				t.Fatal(err)
			}
			tr := c.Transport.(*http.Transport).Clone()
			tr.TLSClientConfig.Certificates = []tls.Certificate{crt}
			c = &http.Client{Transport: tr}
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header["X-Remote-User"] = []string{"alice"}
		req.Header["X-Remote-Group"] = []string{"dev", "system:authenticated"}
		req.Header["X-Remote-Extra-Authentication.kubernetes.io%2fpod-Uid"] = []string{"u1"}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return <-got
	}
	want := auth.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"authentication.kubernetes.io/pod-uid": {"u1"}}}
	if u := ask(&frontCA, "front-proxy-client"); !reflect.DeepEqual(u, want) {
		t.Errorf("the front proxy: %+v, want %+v", u, want)
	}
	for what, u := range map[string]any{"no certificate": ask(nil, ""), "another CA": ask(&otherCA, "front-proxy-client"),
		"a name not allowed": ask(&frontCA, "mallory")} {
		if _, ok := u.(auth.User); ok {
			t.Errorf("%s: authenticated as %+v", what, u)
		}
	}
	if _, err := auth.NewRequestHeader(map[string]string{}); err == nil {
		t.Error("no CA: no error")
	}
}
