//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// usherBuild holds the usher binary built once per test process.
var usherBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// BuildUsher builds ./cmd/usher of the repository (found with RepoRoot)
// into a temporary directory, once per process, and returns the binary's
// path. RemoveUsherBuild deletes it.
func BuildUsher() (string, error) {
	usherBuild.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			usherBuild.err = err
			return
		}
		dir, err := os.MkdirTemp("", "usher-e2e-bin-")
		if err != nil {
			usherBuild.err = err
			return
		}
		usherBuild.dir = dir
		bin := filepath.Join(dir, "usher")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/usher")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			usherBuild.err = fmt.Errorf("e2e: go build ./cmd/usher in %s: %w\n%s", root, err, out)
			return
		}
		usherBuild.bin = bin
	})
	return usherBuild.bin, usherBuild.err
}

// RemoveUsherBuild deletes the directory BuildUsher built into, if any.
func RemoveUsherBuild() {
	if usherBuild.dir != "" {
		_ = os.RemoveAll(usherBuild.dir)
	}
}

// UsherProcess is one `usher serve` on 127.0.0.1, with a serving
// certificate from the cluster's CA. Start and Stop may be called again:
// the test process holds the listening socket from the first Start until
// Close and hands it to each run (--addr fd:3), so the address stays the
// same and no other process can take the port in between (while usher is
// stopped, connections wait in the socket's backlog and time out).
type UsherProcess struct {
	// Bin is the usher binary, ConfigPath its --config file, Addr its
	// 127.0.0.1:PORT, Cert its serving certificate.
	Bin, ConfigPath, Addr string
	Cert                  ServingCert
	// LogPath collects what every run of the process wrote on stdout and
	// stderr (usher logs and audit records).
	LogPath string
	// ReloadInterval is passed as --reload-interval.
	ReloadInterval time.Duration
	// Args are more flags of usher serve, for example --access-auth
	// kubernetes --kubeconfig FILE. Without a --webhook-auth among them,
	// usher answers only the API server's client certificate
	// (--webhook-auth client-cert --webhook-client-ca WebhookClientCA).
	Args []string
	// WebhookClientCA is the cluster's Cluster.WebhookClientCAFile.
	WebhookClientCA string
	// Env are more environment variables (NAME=VALUE), for example
	// POD_NAME, which names the replica in the Events usher records.
	Env []string

	mu     sync.Mutex
	ln     *net.TCPListener
	cmd    *exec.Cmd
	exited chan struct{}
	https  *http.Client
}

// NewUsherProcess prepares (does not start) usher serving configPath with
// a certificate issued into dir, on a free port of 127.0.0.1.
func (c *Cluster) NewUsherProcess(bin, dir, configPath string) (*UsherProcess, error) {
	cert, err := c.IssueServingCert(dir)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cert.CABundle) {
		return nil, fmt.Errorf("e2e: no certificate in the CA bundle %s", c.CAFile)
	}
	u := &UsherProcess{
		Bin: bin, ConfigPath: configPath, Cert: cert, WebhookClientCA: c.WebhookClientCAFile,
		LogPath:        filepath.Join(dir, "usher.log"),
		ReloadInterval: 200 * time.Millisecond,
		https: &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		},
	}
	return u, nil
}

// URL is https://127.0.0.1:PORT; append /mutate or /validate.
func (u *UsherProcess) URL() string { return "https://" + u.Addr }

// Start runs usher serve and waits until its /healthz answers over TLS.
// The first Start listens on a port of 127.0.0.1 the kernel chooses.
func (u *UsherProcess) Start(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cmd != nil {
		return errors.New("e2e: usher is already running")
	}
	if u.ln == nil {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return err
		}
		u.ln, u.Addr = ln, ln.Addr().String()
	}
	return u.start(ctx)
}

// Close stops usher and closes its listening socket.
func (u *UsherProcess) Close() {
	u.Stop()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ln != nil {
		u.ln.Close()
	}
}

func (u *UsherProcess) start(ctx context.Context) error {
	logf, err := os.OpenFile(u.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== usher serve on %s at %s\n", u.Addr, time.Now().Format(time.RFC3339Nano))
	sock, err := u.ln.File()
	if err != nil {
		logf.Close()
		return err
	}
	defer sock.Close() // the child has its own copy once started
	args := []string{"serve",
		"--config", u.ConfigPath, "--addr", "fd:3",
		"--tls-cert", u.Cert.CertFile, "--tls-key", u.Cert.KeyFile,
		"--log-format", "text", "--reload-interval", u.ReloadInterval.String()}
	if !slices.ContainsFunc(u.Args, func(a string) bool { return strings.HasPrefix(a, "--webhook-auth") }) {
		args = append(args, "--webhook-auth", "client-cert", "--webhook-client-ca", u.WebhookClientCA)
	}
	cmd := exec.Command(u.Bin, append(args, u.Args...)...)
	// ADMISSION_CONTROLLER_* variables override the file: keep the test
	// runner's own out of usher's environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ADMISSION_CONTROLLER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, u.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{sock}
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("e2e: starting %s: %w", u.Bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	u.cmd, u.exited = cmd, exited

	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// A request waits in the socket's backlog until usher accepts it: end
	// it when usher exits instead.
	poll, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-poll.Done():
		}
	}()
	for {
		if body, code, err := u.Get(poll, "/healthz"); err == nil && code == http.StatusOK && strings.TrimSpace(body) == "ok" {
			return nil
		}
		select {
		case <-exited:
			u.cmd = nil
			return fmt.Errorf("e2e: usher serve on %s exited before it was healthy: %s; log:\n%s", u.Addr, cmd.ProcessState, u.LogTail(20))
		case <-deadline.C:
			u.stopLocked()
			return fmt.Errorf("e2e: usher serve on %s not healthy after 2m; log:\n%s", u.Addr, u.LogTail(20))
		case <-ctx.Done():
			u.stopLocked()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop kills the process (by its pid) and waits for it to exit. It does
// nothing when usher is not running.
func (u *UsherProcess) Stop() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stopLocked()
}

func (u *UsherProcess) stopLocked() {
	if u.cmd == nil {
		return
	}
	_ = u.cmd.Process.Kill()
	<-u.exited
	u.cmd = nil
	u.https.CloseIdleConnections()
}

// Get fetches path from usher over TLS, verifying its certificate with the
// cluster's CA, and returns the body and status code.
func (u *UsherProcess) Get(ctx context.Context, path string) (body string, code int, err error) {
	return u.Do(ctx, http.MethodGet, path, "", "")
}

// Do sends a request to usher over TLS with body (JSON, when not empty)
// and, when token is not empty, "Authorization: Bearer token"; it returns
// the body and status code of the answer.
func (u *UsherProcess) Do(ctx context.Context, method, path, token, body string) (string, int, error) {
	h := map[string]string{}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return u.DoHeaders(ctx, method, path, h, body)
}

// DoHeaders is Do with the request's headers.
func (u *UsherProcess) DoHeaders(ctx context.Context, method, path string, headers map[string]string, body string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.URL()+path, strings.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := u.https.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b), resp.StatusCode, err
}

// LogTail returns the last n lines usher logged.
func (u *UsherProcess) LogTail(n int) string {
	b, err := os.ReadFile(u.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// WithOperations returns a copy of rules in which every rule also covers
// ops (those it already has are not repeated), for example WorkloadRules
// with DELETE, as the validating webhook is registered when
// enforceDeleteACLs is on (docs/delete.md).
func WithOperations(rules []admissionregistrationv1.RuleWithOperations, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	out := make([]admissionregistrationv1.RuleWithOperations, len(rules))
	for i, r := range rules {
		r.Operations = slices.Clone(r.Operations)
		for _, op := range ops {
			if !slices.Contains(r.Operations, op) {
				r.Operations = append(r.Operations, op)
			}
		}
		r.Rule.APIGroups = slices.Clone(r.Rule.APIGroups)
		r.Rule.APIVersions = slices.Clone(r.Rule.APIVersions)
		r.Rule.Resources = slices.Clone(r.Rule.Resources)
		out[i] = r
	}
	return out
}
