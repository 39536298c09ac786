package plugin

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/cmd/usher/cli"
	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/hack/authtest"
)

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

// placedConfig places with the provided rule, then a tag rule on the
// namespace (not for contractors), then root.default; queue ACLs are
// enforced.
const placedConfig = `partitions:
  - name: default
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
        filter:
          type: deny
          groups: [contractors]
        parent:
          name: fixed
          value: root.tenants
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: ops
            submitacl: " ops"
          - name: ml
            queues:
              - name: training
                submitacl: " dev"
          - name: tenants
            parent: true
            submitacl: " dev,ops"
          - name: default
            submitacl: " ops"
admissionController:
  enforceQueueACLs: true
`

// placedAnswer is what a surface answers for a submission: whether it is
// allowed, the queue the work runs in ("" when rejected), and the queue
// its marker asked for when that is another.
type placedAnswer struct {
	allowed      bool
	queue, asked string
}

// TestOneAnswerForASubmission: for the same pod (its user and groups, its
// queue marker, its namespace), the admission webhook (with the server's
// authorizers, its response and its audit record), POST /v1/access, usher
// check, explain and place, and kubectl usher can-i and why answer the
// same placed queue, and say the same queue was asked for when placement
// chose another: an ACL that falls through, a queue that does not exist
// and is not created, YuniKorn's '.' to "_dot_", the root.default
// fallback.
func TestOneAnswerForASubmission(t *testing.T) {
	e := newEnvWith(t, placedConfig)
	users := map[string][]string{"alice": {"dev"}, "bob": {"ops"}, "eve": {"contractors"}, "dan": {"contractors", "ops"}}
	for u, gs := range users {
		e.kubeconfig[u] = e.writeKubeconfig(u, gs)
	}
	for i, c := range []struct {
		name, user, marker string
		want               placedAnswer
	}{
		{"an ACL falls through", "alice", "root.ops", placedAnswer{true, "root.tenants.e2e", "root.ops"}},
		{"create: false", "alice", "root.nosuch", placedAnswer{true, "root.tenants.e2e", "root.nosuch"}},
		{"the dots of a name without root.", "alice", "ml.training", placedAnswer{true, "root.tenants.e2e", "root.ml.training"}},
		{"the root.default fallback", "dan", "root.ml.training", placedAnswer{true, "root.default", "root.ml.training"}},
		{"placed where it asks", "bob", "root.ops", placedAnswer{true, "root.ops", ""}},
		{"no marker", "alice", "", placedAnswer{true, "root.tenants.e2e", ""}},
		{"rejected", "eve", "root.ops", placedAnswer{false, "", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			groups := append(append([]string{}, users[c.user]...), "system:authenticated")
			got := map[string]placedAnswer{}
			got["webhook"] = e.webhookAnswer(t, fmt.Sprintf("uid-%d", i), c.user, groups, c.marker, c.want)
			got["/v1/access"] = e.accessAnswer(t, c.user, groups, c.marker)
			for _, cmd := range []string{"check", "explain", "place"} {
				args := []string{cmd, "--config", e.config, "--user", c.user, "--groups", strings.Join(groups, ","), "--tag", "namespace=e2e", "-o", "json"}
				if c.marker != "" {
					args = append(args, "--queue", c.marker)
				}
				got["usher "+cmd] = cliAnswer(t, args)
			}
			if c.marker != "" {
				r := e.run(c.user, "", "can-i", "submit", c.marker, "-n", "e2e", "-o", "json")
				var a decision.Output
				if err := json.Unmarshal([]byte(r.out), &a); err != nil || a.Placement == nil {
					t.Fatalf("can-i: %v\n%s%s", err, r.out, r.errOut)
				}
				got["kubectl usher can-i"] = placedAnswer{a.Allowed && r.code == 0, a.Placement.Queue, a.Placement.Asked}
				if warned := strings.Contains(r.errOut, "Warning: "); warned != (c.want.asked != "") ||
					warned && (!strings.Contains(r.errOut, c.want.queue) || !strings.Contains(r.errOut, fmt.Sprintf("%q", c.want.asked))) {
					t.Errorf("can-i: stderr %q, want a warning only when placed elsewhere", r.errOut)
				}
			}
			r := e.run(c.user, podManifest(c.marker), "why", "-f", "-", "-n", "e2e", "--dry-run=false", "-o", "json")
			var w WhyOutput
			if err := json.Unmarshal([]byte(r.out), &w); err != nil || len(w.Objects) != 1 || w.Objects[0].Decision == nil || w.Objects[0].Decision.Placement == nil {
				t.Fatalf("why: %v\n%s%s", err, r.out, r.errOut)
			}
			d := w.Objects[0].Decision
			got["kubectl usher why"] = placedAnswer{d.Allowed, d.Placement.Queue, d.Placement.Asked}
			for surface, a := range got {
				if a != c.want {
					t.Errorf("%s answers %+v, want %+v", surface, a, c.want)
				}
			}
		})
	}
}

// podManifest is a pod labelled queue=marker (none when marker is "").
func podManifest(marker string) string {
	labels := ""
	if marker != "" {
		labels = fmt.Sprintf(", labels: {queue: %q}", marker)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: p%s}\nspec: {containers: [{name: c, image: x}]}\n", labels)
}

// webhookAnswer sends the pod's CREATE to usher's mutating webhook and
// reads the answer from the response (its warning) and the audit record.
func (e *env) webhookAnswer(t *testing.T, uid, user string, groups []string, marker string, want placedAnswer) placedAnswer {
	t.Helper()
	labels := "{}"
	if marker != "" {
		labels = fmt.Sprintf(`{"queue":%q}`, marker)
	}
	g, _ := json.Marshal(groups)
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,
	  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":"e2e","operation":"CREATE","userInfo":{"username":%q,"groups":%s},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":%s},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`,
		uid, user, g, labels)
	body := e.post(t, "/mutate", review, nil)
	var rv struct {
		Response struct {
			Allowed  bool
			Warnings []string
		}
	}
	if err := json.Unmarshal(body, &rv); err != nil {
		t.Fatalf("/mutate: %v\n%s", err, body)
	}
	warned := len(rv.Response.Warnings) == 1 && strings.Contains(rv.Response.Warnings[0], fmt.Sprintf("asks for queue %q", want.asked)) &&
		strings.Contains(rv.Response.Warnings[0], fmt.Sprintf("in queue %q", want.queue))
	if warned != (want.asked != "") || len(rv.Response.Warnings) > 1 {
		t.Errorf("/mutate warnings %q, want one naming %q and %q only when placed elsewhere", rv.Response.Warnings, want.asked, want.queue)
	}
	var rec struct{ Queue, QueueAsked string }
	for line := range strings.Lines(e.logs.String()) {
		if strings.Contains(line, `"uid":"`+uid+`"`) {
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := placedAnswer{allowed: rv.Response.Allowed, asked: rec.QueueAsked}
	if a.allowed {
		a.queue = rec.Queue
	}
	return a
}

// accessAnswer asks POST /v1/access, as the user, where the pod goes.
func (e *env) accessAnswer(t *testing.T, user string, groups []string, marker string) placedAnswer {
	t.Helper()
	req, _ := json.Marshal(decision.AccessRequest{User: user, Groups: groups, Place: true, Queue: marker, Tags: map[string]string{"namespace": "e2e"}})
	cert := e.ca.Issue(t, user, groups[:len(groups)-1], authtest.CertOptions{})
	var a decision.Output
	if body := e.post(t, "/v1/access", string(req), &cert); json.Unmarshal(body, &a) != nil || a.Placement == nil {
		t.Fatalf("/v1/access: %s", body)
	}
	return placedAnswer{a.Allowed, a.Placement.Queue, a.Placement.Asked}
}

// post sends body to usher at path (with a client certificate) and
// returns the answer's body.
func (e *env) post(t *testing.T, path, body string, cert *tls.Certificate) []byte {
	t.Helper()
	ca, err := os.ReadFile(e.usherCA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	tc := &tls.Config{RootCAs: roots}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := c.Post(e.usherURL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	return b
}

// cliAnswer runs usher (cli.Run) and reads its decision object.
func cliAnswer(t *testing.T, args []string) placedAnswer {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}, args)
	var o decision.Output
	if err := json.Unmarshal(out.Bytes(), &o); err != nil || o.Placement == nil || code == 2 {
		t.Fatalf("usher %s: exit %d %v\n%s%s", strings.Join(args, " "), code, err, out.String(), errb.String())
	}
	return placedAnswer{o.Allowed && code == 0, o.Placement.Queue, o.Placement.Asked}
}
