package plugin

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/yaml"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/hack/authtest"
	"github.com/usherhq/usher/server"
)

const testConfig = `partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: test
      users:
        alice: [ml]
        bob: [oncall]
        root: []
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: dev
            submitacl: " dev"
          - name: ops
            submitacl: " ops"
            adminacl: bob
          - name: ml
            submitacl: " ml"
`

// env is a real usher (client-certificate authentication, over TLS on
// 127.0.0.1) and an API server that answers SelfSubjectReviews for the
// same client certificates, as kube-apiserver's x509 authenticator does
// (user: CN, groups: O, plus system:authenticated).
type env struct {
	t          *testing.T
	dir        string
	config     string // usher's configuration file
	logs       *syncBuffer
	usherURL   string
	usherCA    string
	apiURL     string
	apiCA      string
	ca         *authtest.CA
	kubeconfig map[string]string
}

func newEnv(t *testing.T) *env { return newEnvWith(t, testConfig) }

// newEnvWith is newEnv with usher serving config; e.logs has usher's log
// (its audit records), as JSON lines.
func newEnvWith(t *testing.T, config string) *env {
	t.Helper()
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	dir := t.TempDir()
	e := &env{t: t, dir: dir, ca: authtest.NewCA(t, "clients"), kubeconfig: map[string]string{}, logs: &syncBuffer{}}
	cfg := filepath.Join(dir, "usher.yaml")
	e.config = cfg
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	caFile := e.ca.WriteFile(t, dir)
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(caPEM)
	srv, err := server.New(server.Options{ConfigPath: cfg, Listener: ln, WebhookAuth: server.WebhookAuthNone, AccessAuth: []string{server.AccessAuthClientCert},
		ClientCAFile: caFile, Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
		Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("usher: %v", err)
		}
	})
	e.usherURL = "https://" + ln.Addr().String()
	e.usherCA = filepath.Join(dir, "usher-ca.pem")
	if err := os.WriteFile(e.usherCA, srv.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}

	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
			http.NotFound(w, r)
			return
		}
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		c := r.TLS.PeerCertificates[0]
		if _, err := c.Verify(x509.VerifyOptions{Roots: clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		review := authenticationv1.SelfSubjectReview{}
		review.APIVersion, review.Kind = "authentication.k8s.io/v1", "SelfSubjectReview"
		review.Status.UserInfo = authenticationv1.UserInfo{Username: c.Subject.CommonName,
			Groups: append(append([]string{}, c.Subject.Organization...), "system:authenticated")}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(review)
	}))
	api.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	api.StartTLS()
	t.Cleanup(api.Close)
	e.apiURL = api.URL
	e.apiCA = filepath.Join(dir, "api-ca.pem")
	if err := os.WriteFile(e.apiCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	for user, groups := range map[string][]string{"alice": {"dev"}, "bob": {"ops"}, "root": {"system:masters"}} {
		e.kubeconfig[user] = e.writeKubeconfig(user, groups)
	}
	return e
}

// writeKubeconfig writes a kubeconfig whose user authenticates with a
// client certificate of e.ca for user in groups.
func (e *env) writeKubeconfig(user string, groups []string) string {
	t := e.t
	cert := e.ca.Issue(t, user, groups, authtest.CertOptions{})
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(e.dir, user+".crt"), filepath.Join(e.dir, user+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, user+".kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: test
  context: {cluster: test, user: %s, namespace: team-a}
current-context: test
`, e.apiURL, e.apiCA, user, certFile, keyFile, user)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type result struct {
	code        int
	out, errOut string
}

// run runs the plugin as user, with the usher flags given by the
// environment variables the plugin reads.
func (e *env) run(user string, stdin string, args ...string) result {
	e.t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(name string) string {
		switch name {
		case EnvServer:
			return e.usherURL
		case EnvCA:
			return e.usherCA
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args = append([]string{"--kubeconfig", e.kubeconfig[user]}, args...)
	code := Main(ctx, args, Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, getenv)
	return result{code, out.String(), errOut.String()}
}

func (r result) want(t *testing.T, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.out, r.errOut)
	}
	for _, w := range wants {
		if !strings.Contains(r.out+r.errOut, w) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", w, r.out, r.errOut)
		}
	}
}

func TestWhoami(t *testing.T) {
	e := newEnv(t)
	e.run("alice", "", "whoami").want(t, 0, "user:    alice", "dev, system:authenticated", "ml", "test (usher's directory)", "given (by the API server)")
	r := e.run("bob", "", "whoami", "-o", "json")
	r.want(t, 0)
	var got WhoamiOutput
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	sources := map[string]string{}
	for _, g := range got.Usher.Groups {
		sources[g.Name] = g.Source
	}
	if got.Kubernetes == nil || got.Kubernetes.User != "bob" || got.Usher.User != "bob" || sources["ops"] != "given" || sources["oncall"] != "test" || got.Partition != "default" {
		t.Fatalf("bob: %+v", got)
	}
}

// can-i exits as kubectl auth can-i: 0 yes, 1 no; errors are 2.
func TestCanI(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		user string
		args []string
		code int
		want string
	}{
		{"alice", []string{"submit", "root.dev"}, 0, "yes\n"},
		{"alice", []string{"submit", "root.ml"}, 0, "yes\n"},
		{"alice", []string{"submit", "root.ops"}, 1, "no\n"},
		{"bob", []string{"admin", "root.ops"}, 0, "yes\n"},
		{"alice", []string{"admin", "root.ops"}, 1, "no\n"},
		{"bob", []string{"kill", "root.ops", "--owner", "alice"}, 0, "yes\n"},
		{"alice", []string{"kill", "root.ops", "--owner", "bob"}, 1, "no\n"},
		{"alice", []string{"view", "root.ops", "--owner", "bob", "--view-acl", "alice"}, 0, "yes\n"},
		// A queue that does not exist: the provided rule does not create
		// it, and nothing else places the pod.
		{"alice", []string{"submit", "root.dve"}, 1, "no\n"},
		{"alice", []string{"submit", "root.dve", "--explain"}, 1, "root.dve does not exist and create is false"},
		{"alice", []string{"admin", "root.dve"}, 2, "root.dev"},
		{"alice", []string{"fly", "root.dev"}, 2, `action "fly"`},
		{"alice", []string{"kill", "root.dev"}, 2, "--owner"},
		{"alice", []string{"submit", "root.dev", "--owner", "bob"}, 2, "application actions"},
		{"alice", []string{"move", "root.dev", "--owner", "bob"}, 2, "--target"},
		{"alice", []string{"submit"}, 2, "accepts 2 arg(s)"},
		{"alice", []string{"submit", "root.dev", "-o", "xml"}, 2, `--output "xml"`},
	} {
		t.Run(strings.Join(append([]string{c.user}, c.args...), " "), func(t *testing.T) {
			e.run(c.user, "", append([]string{"can-i"}, c.args...)...).want(t, c.code, c.want)
		})
	}
	r := e.run("alice", "", "can-i", "submit", "root.ops", "-q")
	r.want(t, 1)
	if r.out != "" || r.errOut != "" {
		t.Errorf("-q printed %q %q", r.out, r.errOut)
	}
	e.run("alice", "", "can-i", "submit", "root.dev", "--explain").want(t, 0, "yes\nreason: ", `decided by: group entry "dev" in submitacl of root.dev`,
		"trail:", `root.dev submitacl " dev": matched group dev`)
	r = e.run("alice", "", "can-i", "submit", "root.ops", "-o", "json")
	r.want(t, 1)
	var a decision.Output
	if err := json.Unmarshal([]byte(r.out), &a); err != nil || a.Allowed || a.Trail == nil || len(a.Trail.Placement) == 0 {
		t.Fatalf("-o json: %v %+v\n%s", err, a, r.out)
	}
}

// --as asks usher about someone else, which usher answers only for
// callers allowed to (here: system:masters); nothing in the plugin decides
// that.
func TestAs(t *testing.T) {
	e := newEnv(t)
	e.run("alice", "", "can-i", "submit", "root.ops", "--as", "bob", "--as-group", "ops").want(t, 2, "403", "accessreviews")
	e.run("alice", "", "queues", "--as", "bob").want(t, 2, "403")
	e.run("alice", "", "whoami", "--as", "bob").want(t, 2, "403")
	e.run("root", "", "can-i", "submit", "root.ops", "--as", "bob", "--as-group", "ops").want(t, 0, "yes")
	e.run("root", "", "can-i", "submit", "root.ops", "--as", "alice", "--as-group", "dev").want(t, 1, "no")
	e.run("root", "", "whoami", "--as", "bob", "--as-group", "ops").want(t, 0, "asked about (--as)", "oncall", "given (--as-group)")
	e.run("root", "", "can-i", "submit", "root.ops", "--as-group", "ops").want(t, 2, "--as-group needs --as")
}

func TestQueues(t *testing.T) {
	e := newEnv(t)
	e.run("alice", "", "queues").want(t, 0, "partition default, user alice", "QUEUE", "root", "├── dev", "├── ops", "└── ml")
	for _, format := range []string{"json", "yaml"} {
		r := e.run("alice", "", "queues", "-o", format)
		r.want(t, 0)
		var got QueuesOutput
		if err := yaml.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, r.out)
		}
		rights := map[string]bool{}
		for _, q := range got.Queues {
			rights[q.Queue] = q.Submit
		}
		if got.Partition != "default" || got.Identity.User != "alice" || len(got.Queues) != 4 || !rights["root.dev"] || !rights["root.ml"] || rights["root.ops"] {
			t.Fatalf("%s: %+v", format, got)
		}
	}
}

// The plugin checks usher's certificate: with another CA, or none, it
// refuses to talk; and a wrong address says how usher is reached.
func TestUsherTLS(t *testing.T) {
	e := newEnv(t)
	e.run("alice", "", "can-i", "submit", "root.dev", "--usher-certificate-authority", e.apiCA).want(t, 2, "certificate")
	e.run("alice", "", "can-i", "submit", "root.dev", "--usher-server", "http://"+strings.TrimPrefix(e.usherURL, "https://")).want(t, 2, "want https://")
	e.run("alice", "", "can-i", "submit", "root.dev", "--usher-server", "https://usher.nowhere-"+fmt.Sprint(time.Now().UnixNano())+".svc").want(t, 2, "port-forward")
}

const jobTo = `apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  template:
    metadata:
      labels:
        queue: %s
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
`

// why without the dry run asks usher's decision API where placement puts
// the pods, with the trail.
func TestWhyDecision(t *testing.T) {
	e := newEnv(t)
	e.run("alice", fmt.Sprintf(jobTo, "root.ops"), "why", "-f", "-", "--dry-run=false").want(t, 1,
		"Job team-a/j", `queue marker: label queue="root.ops" on the pod template`, "usher's decision for alice: denied", "trail:")
	r := e.run("alice", fmt.Sprintf(jobTo, "root.dev"), "why", "-f", "-", "--dry-run=false", "-o", "json")
	r.want(t, 0)
	var got WhyOutput
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if len(got.Objects) != 1 || got.Objects[0].DryRun != nil || got.Objects[0].Decision == nil || !got.Objects[0].Decision.Allowed ||
		got.Objects[0].Decision.Placement == nil || got.Objects[0].Decision.Placement.Queue != "root.dev" || got.Objects[0].Namespace != "team-a" {
		t.Fatalf("%+v\n%s", got, r.out)
	}
	// An object that makes no pods is not asked about.
	r = e.run("alice", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "why", "-f", "-", "--dry-run=false")
	r.want(t, 0, "ConfigMap team-a/c", "not asked")
	e.run("alice", "", "why").want(t, 2, "-f FILE")
	e.run("alice", "kind: Job\n", "why", "-f", "-", "--dry-run=false").want(t, 2, "no kind or apiVersion")
	e.run("alice", "", "why", "-f", "-", "--dry-run=false", "--decision=false").want(t, 2, "nothing to ask")
}

func TestQueueMarker(t *testing.T) {
	for _, c := range []struct {
		manifest string
		want     *Marker
	}{
		{fmt.Sprintf(jobTo, "root.dev"), &Marker{Kind: "label", Key: "queue", Value: "root.dev", On: "pod template"}},
		{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"yunikorn.apache.org/queue":"root.a"},"labels":{"queue":"root.b"}}}`,
			&Marker{Kind: "annotation", Key: "yunikorn.apache.org/queue", Value: "root.a", On: "Pod"}},
		{`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c","labels":{"queue":"root.x"}},"spec":{"jobTemplate":{"spec":{"template":{"metadata":{"labels":{"yunikorn.apache.org/queue":"root.y"}}}}}}}`,
			&Marker{Kind: "label", Key: "yunikorn.apache.org/queue", Value: "root.y", On: "pod template"}},
		// On the workload's own metadata YuniKorn does not read it.
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"queue":"root.x"}}}`, nil},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"queue":"root.x"}}}`, nil},
	} {
		objs, err := readManifest("-", strings.NewReader(c.manifest))
		if err != nil {
			t.Fatal(err)
		}
		got := queueMarker(objs[0])
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: %+v, want %+v", c.manifest, got, c.want)
		}
	}
}
