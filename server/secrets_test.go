package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/hack/slapdtest"
	"github.com/usherhq/usher/server"
)

// secretYAML is a partition whose groups come only from the directory
// (groups: resolve), with the queue check on, so that /v1/access and
// /mutate both need a bind. %[1]s is the URL, %[2]s the bind password
// setting.
const secretYAML = `partitions:
  - name: default
    groups: resolve
    usergroupresolver:
      type: ldap
      ldap:
        urls: [%[1]q]
        binddn: %[3]s
        %[2]s
        userbasedn: %[4]s
        groupsearch: member
        groupbasedn: %[5]s
        timeout: 1s
      cache: {positivettl: 1ms, negativettl: 1ms}
    queues:
      - name: root
        submitacl: "*"
admissionController:
  enforceQueueACLs: true
`

// assertNoSecret fails when secret appears in any of the texts.
func assertNoSecret(t *testing.T, secret string, where string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, secret) {
			t.Fatalf("%s carries the secret %q:\n%s", where, secret, s)
		}
	}
}

// No response (and no log line) ever carries the bind password or the
// content of a secret file, whatever breaks: a bind the directory
// refuses, a directory that cannot be reached, a malformed password file,
// a password written where the name of its file or variable belongs.
func TestNoSecretInAnyResponse(t *testing.T) {
	s := slapdtest.New(t)
	s.AddLDIF(t, fmt.Sprintf("dn: uid=alice,%s\nobjectClass: inetOrgPerson\nuid: alice\ncn: alice\nsn: alice\n", slapdtest.PeopleDN))
	dir := t.TempDir()
	canary := fmt.Sprintf("usher-canary-%d", time.Now().UnixNano())
	config := func(url, passwordSetting string) string {
		return fmt.Sprintf(secretYAML, url, passwordSetting, slapdtest.ServiceDN, slapdtest.PeopleDN, slapdtest.GroupsDN)
	}
	secretFile := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	closed := "ldap://127.0.0.1:1"

	// Running configurations that fail at lookup time: every response
	// path that reports the failure is asked.
	for _, tt := range []struct{ name, url, password string }{
		{"bind refused", s.URL, "bindpasswordfile: " + secretFile("wrong", canary+"\n")},
		{"directory unreachable", closed, "bindpasswordfile: " + secretFile("right", canary+"\n")},
		{"malformed password file", s.URL, "bindpasswordfile: " + secretFile("malformed", canary+"\nsecond line\x00\r\n")},
		{"password in the environment", closed, "bindpasswordenv: USHER_TEST_BIND_PASSWORD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("USHER_TEST_BIND_PASSWORD", canary)
			cfg := filepath.Join(t.TempDir(), "q.yaml")
			writeFile(t, cfg, config(tt.url, tt.password))
			h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
			code, body := h.post("/v1/access", "application/json", `{"queue":"root","user":"alice"}`)
			if code == 200 {
				t.Fatalf("/v1/access decided without groups: %s", body)
			}
			assertNoSecret(t, canary, "/v1/access", body)
			_, review := h.post("/mutate", "application/json", podCreate("u1", "root"))
			if !strings.Contains(review, `"allowed":false`) {
				t.Fatalf("/mutate must fail closed: %s", review)
			}
			assertNoSecret(t, canary, "/mutate", review)
			_, ready := h.get("/readyz")
			_, metrics := h.get("/metrics")
			assertNoSecret(t, canary, "/readyz and /metrics", ready, metrics)
			assertNoSecret(t, canary, "the log", h.logs.String())
		})
	}

	// Reloads that fail because of the secret: refused, and neither
	// /readyz nor the log repeats the secret.
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, config(s.URL, "bindpasswordfile: "+s.ServicePasswordFile))
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	if code, body := h.post("/v1/access", "application/json", `{"queue":"root","user":"alice"}`); code != 200 {
		t.Fatalf("the good configuration must decide: %d %s", code, body)
	}
	for _, tt := range []struct{ name, password string }{
		{"password where its variable's name belongs", "bindpasswordenv: " + canary},
		{"password where its file's name belongs", "bindpasswordfile: " + canary},
		{"empty password file", "bindpasswordfile: " + secretFile("empty", "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, cfg, config(s.URL, tt.password))
			ok, err := h.srv.Reload()
			if ok || err == nil {
				t.Fatal("the reload must be refused")
			}
			_, ready := h.get("/readyz")
			assertNoSecret(t, canary, "/readyz", ready)
			assertNoSecret(t, canary, "the log of the refused reload", h.logs.String())
			assertNoSecret(t, canary, "the reload error", err.Error())
		})
	}
	assertNoSecret(t, s.ServicePassword, "the log", h.logs.String())

	// A TLS key file that is not a key: the start-up error does not quote it.
	keyFile := secretFile("tls.key", canary+"\n")
	certFile := secretFile("tls.crt", canary+"\n")
	if _, err := server.New(server.Options{TLSCertFile: certFile, TLSKeyFile: keyFile}); err == nil {
		t.Fatal("a malformed key must be refused")
	} else {
		assertNoSecret(t, canary, "the TLS error", err.Error())
	}
}
