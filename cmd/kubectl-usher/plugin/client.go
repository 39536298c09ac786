package plugin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/usherhq/usher/decision"
)

// usherClient asks usher's /v1/access with the caller's kubeconfig credentials.
type usherClient struct {
	base, path string // path: "" for /v1/access
	http       *http.Client
}

// usherClient is a client for usher with the caller's credentials, without
// impersonation (said in the body): through the API server (access.usher.io),
// or with --usher-server at usher's address, with usher's CA.
func (o *options) usherClient() (*usherClient, error) {
	cfg, err := o.restConfig(false)
	if err != nil {
		return nil, err
	}
	c := &usherClient{base: strings.TrimSuffix(cfg.Host, "/") + "/apis/access.usher.io/v1alpha1", path: "/accessreviews"}
	if o.usherServer != "" {
		u, err := url.Parse(o.usherServer)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("--usher-server %q: want https://HOST[:PORT]", o.usherServer)
		}
		cfg.Host = strings.TrimSuffix(o.usherServer, "/")
		cfg.APIPath = ""
		cfg.TLSClientConfig.Insecure = false
		cfg.TLSClientConfig.CAFile = o.usherCA
		cfg.TLSClientConfig.CAData = nil
		cfg.TLSClientConfig.ServerName = o.usherServerName
		cfg.Proxy = nil
		c.base, c.path = cfg.Host, ""
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for usher at %s: %w", c.base, err)
	}
	hc.CheckRedirect = noRedirects
	c.http = hc
	return c, nil
}

// noRedirects refuses redirects: the transport adds the caller's
// credentials to every request, so one would carry them wherever it points.
func noRedirects(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("redirected to %q, which the plugin does not follow: it would send your credentials there", req.URL.Redacted())
}

// maxAnswer bounds what the plugin reads of an answer.
const maxAnswer = 8 << 20

// access asks POST /v1/access.
func (c *usherClient) access(ctx context.Context, req decision.AccessRequest) (*decision.Output, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+cmp.Or(c.path, "/v1/access"), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, reachError(c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("reading usher's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error     string `json:"error"`
			Message   string `json:"message"` // the API server's Status
			RequestID string `json:"requestID"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && cmp.Or(e.Error, e.Message) != "" {
			msg = cmp.Or(e.Error, e.Message)
		}
		if c.path != "" && resp.StatusCode == http.StatusNotFound {
			msg += "; the API server serves no access.usher.io: usher is installed without its aggregated API " +
				"(chart value aggregatedAPI.enabled), or give --usher-server (docs/kubectl-usher.md)"
		}
		if id := cmp.Or(e.RequestID, resp.Header.Get("X-Request-Id")); id != "" && !strings.Contains(msg, id) {
			msg += " (request id " + id + ")"
		}
		return nil, fmt.Errorf("usher answered %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), msg)
	}
	var out decision.Output
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("usher's answer is not the JSON of /v1/access: %w", err)
	}
	return &out, nil
}

// reachError explains a connection failure, and how to reach usher from outside.
func reachError(base string, err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) && strings.HasSuffix(strings.TrimSuffix(dns.Name, "."), ".svc") {
		return fmt.Errorf("reaching usher at %s: %w; outside the cluster, forward a port to usher's Service "+
			"(kubectl port-forward -n NAMESPACE svc/usher 8443:443) and give --usher-server https://127.0.0.1:8443 "+
			"--usher-tls-server-name usher.NAMESPACE.svc --usher-certificate-authority CA.pem (see docs/kubectl-usher.md)", base, err)
	}
	return fmt.Errorf("reaching usher at %s: %w", base, err)
}

// Identity is a user and groups, as the API server authenticated them.
type Identity struct {
	User   string   `json:"user"`
	UID    string   `json:"uid,omitempty"`
	Groups []string `json:"groups"`
}

// selfSubjectReview asks the API server who the caller is, as kubectl auth whoami.
func selfSubjectReview(ctx context.Context, kube *rest.Config) (Identity, error) {
	cs, err := kubernetes.NewForConfig(kube)
	if err != nil {
		return Identity{}, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return Identity{}, fmt.Errorf("asking the API server who you are (SelfSubjectReview): %w", err)
	}
	ui := r.Status.UserInfo
	return Identity{User: ui.Username, UID: ui.UID, Groups: orEmpty(ui.Groups)}, nil
}
