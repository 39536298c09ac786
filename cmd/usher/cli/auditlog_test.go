package cli_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/cmd/usher/cli"
)

// usher serve --audit-log FILE writes the audit records to FILE, in
// JSON, one per line, and not to the operational log on stderr; a pod
// created with generateName is named generateName + "*" in its record.
func TestServeAuditLogFile(t *testing.T) {
	dir := t.TempDir()
	auditPath, caPath := filepath.Join(dir, "audit.log"), filepath.Join(dir, "ca.pem")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: noEnv},
			[]string{"serve", "--config", yunikornACL, "--addr", "127.0.0.1:0", "--access-auth", "none", "--webhook-auth", "none",
				"--ca-out", caPath, "--audit-log", auditPath})
	}()
	addrRE := regexp.MustCompile(`"msg":"usher serving","addr":"([^"]+)"`)
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(errb.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("usher serve did not start:\n%s", errb.String())
	}
	pem, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"team-a","operation":"CREATE","userInfo":{"username":"alice","groups":["dev"]},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"spark-driver-","namespace":"team-a"},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`
	resp, err := client.Post("https://"+addr+"/mutate", "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("usher serve exited %d:\n%s", code, errb.String())
	}
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(auditPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v (%v), want 0600", fi.Mode(), err)
	}
	var found bool
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if rec["msg"] != "audit" {
			t.Errorf("not an audit record in the audit log: %s", line)
		}
		if rec["kind"] == "admission" && rec["uid"] == "u-1" {
			found = true
			if rec["name"] != "spark-driver-*" || rec["namespace"] != "team-a" || rec["user"] != "alice" {
				t.Errorf("record %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no admission record for u-1 in the audit log:\n%s", raw)
	}
	if strings.Contains(errb.String(), `"msg":"audit"`) {
		t.Errorf("audit records in the operational log:\n%s", errb.String())
	}
	if out.String() != "" {
		t.Errorf("stdout: %q", out.String())
	}
}

// Without --audit-log the audit records go to the operational log on
// stderr, one JSON line each among the other logs, with the keys of
// docs/audit.md in their order; with --log-level warn there are none.
func TestServeAuditToStderr(t *testing.T) {
	for _, level := range []string{"info", "warn"} {
		t.Run(level, func(t *testing.T) {
			caPath := filepath.Join(t.TempDir(), "ca.pem")
			addr, flag := inheritedSocket(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errb syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- cli.Run(ctx, &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: noEnv},
					[]string{"serve", "--config", yunikornACL, "--addr", flag, "--access-auth", "none", "--webhook-auth", "none",
						"--ca-out", caPath, "--log-level", level})
			}()
			// The socket is usher's from the start (a connection waits in
			// its backlog until usher accepts it); the CA is written
			// before usher serves.
			pool := x509.NewCertPool()
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if pem, err := os.ReadFile(caPath); err == nil && pool.AppendCertsFromPEM(pem) {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("usher serve wrote no certificate to %s:\n%s", caPath, errb.String())
				}
			}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-2",` +
				`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
				`"namespace":"team-a","operation":"CREATE","userInfo":{"username":"al\u003cice\"\u2028","groups":["dev\b"]},` +
				`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a"},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`
			resp, err := client.Post("https://"+addr+"/mutate", "application/json", strings.NewReader(review))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("usher serve exited %d:\n%s", code, errb.String())
			}
			var lines []string
			for _, line := range strings.Split(errb.String(), "\n") {
				if strings.Contains(line, `"msg":"audit","kind":"admission"`) {
					lines = append(lines, line)
				}
			}
			if level == "warn" {
				if len(lines) != 0 {
					t.Fatalf("audit records at --log-level warn:\n%s", strings.Join(lines, "\n"))
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("%d admission records on stderr, want 1:\n%s", len(lines), errb.String())
			}
			const str = `"(?:[^"\\]|\\.)*"` // a JSON string
			want := regexp.MustCompile(`^\{"time":"[^"]+","level":"INFO","msg":"audit","kind":"admission","webhook":"mutate","caller":"unchecked","uid":"u-2",` +
				`"operation":"CREATE","object":"Pod","namespace":"team-a","name":"p","user":"al<ice\\"\\u2028","groups":\["dev\\b"\],` +
				`"identity":` + str + `,"queue":` + str + `,"allowed":(true|false),"patched":(true|false),"code":\d+,"reason":` + str +
				`,"rule":` + str + `,"dryRun":false,"warned":false,"lookup":` + str + `(,"denial":\{.*\})?\}$`)
			if !want.MatchString(lines[0]) {
				t.Fatalf("audit record on stderr:\n%q", lines[0])
			}
		})
	}
}
