package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/cluster"
	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/internal/httperr"
)

// The ways a caller of /v1/access and /metrics can authenticate
// (Options.AccessAuth, --access-auth).
const (
	// AccessAuthAuto is kubernetes when cluster credentials load and
	// client-cert when Options.ClientCAFile is given; with neither, 401.
	AccessAuthAuto       = "auto"
	AccessAuthKubernetes = "kubernetes"  // bearer tokens, by TokenReview
	AccessAuthClientCert = "client-cert" // certificates of Options.ClientCAFile
	AccessAuthNone       = "none"        // anyone gets any answer: local use only
)

// The permission to ask /v1/access about someone else (ClusterRole
// usher-access-reviewer in deploy/rbac.yaml).
const (
	AccessReviewGroup    = "usher.io"
	AccessReviewResource = "accessreviews"
	AccessReviewVerb     = "create"
)

// accessAuth is the authentication and authorization of /v1/access and /metrics.
type accessAuth struct {
	off         bool
	authn       auth.Authenticator // nil: nothing configured, everyone gets 401
	authz       auth.Authorizer
	kube        bool
	clientCerts bool
	proxied     bool // the aggregation layer's front proxy (Options.AggregatedAPI)
}

// setupAccessAuth builds what Options.AccessAuth asks for.
func (s *Server) setupAccessAuth() error {
	o := s.opts
	modes := o.AccessAuth
	if len(modes) == 0 {
		modes = []string{AccessAuthAuto}
	}
	valid := sets.New(AccessAuthAuto, AccessAuthKubernetes, AccessAuthClientCert, AccessAuthNone)
	if i := slices.IndexFunc(modes, func(m string) bool { return !valid.Has(m) }); i >= 0 {
		return fmt.Errorf("--access-auth %q: want kubernetes, client-cert, a list of both, auto or none", modes[i])
	}
	want := sets.New(modes...)
	joined := strings.Join(modes, ",")
	if (want.Has(AccessAuthNone) || want.Has(AccessAuthAuto)) && want.Len() > 1 {
		return fmt.Errorf("--access-auth %s: auto and none cannot be combined with other values", joined)
	}
	a := &s.access
	if want.Has(AccessAuthNone) {
		a.off = true
		s.log.Warn("AUTHENTICATION IS OFF (--access-auth none): anyone who can reach this server gets any user's decisions and directory groups from /v1/access and reads /metrics; use it for local use and tests only")
		return nil
	}
	auto := want.Has(AccessAuthAuto)
	if o.ClientCAFile != "" && !auto && !want.Has(AccessAuthClientCert) {
		return fmt.Errorf("--client-ca is given but --access-auth %s does not include client-cert", joined)
	}
	var authns []auth.Authenticator
	var authzs []auth.Authorizer
	privileged := o.PrivilegedGroups
	if privileged == nil {
		privileged = []string{"system:masters"}
	}
	if len(privileged) > 0 {
		authzs = append(authzs, auth.PrivilegedGroups(privileged...))
	}
	if want.Has(AccessAuthKubernetes) || auto {
		switch err := s.kubeErr; {
		case errors.Is(err, cluster.ErrNoCluster) && auto:
		case err != nil && auto && o.Kubeconfig == "":
			// 401 rather than no start, so the webhooks keep serving.
			s.log.Warn("--access-auth auto: the in-cluster configuration is unusable; bearer tokens are not accepted", "err", err)
		case err != nil:
			return fmt.Errorf("--access-auth kubernetes: %w", err)
		default:
			rev, err := auth.NewKubeReviewer(s.kube.Config)
			if err != nil {
				return fmt.Errorf("--access-auth kubernetes: %w", err)
			}
			to := o.TokenReviewCache
			to.Count = func(r string) { s.metrics.tokenReviews.WithLabelValues(r).Inc() }
			authns = append(authns, auth.NewTokenAuthenticator(rev, to))
			authzs = append(authzs, auth.NewSARAuthorizer(rev, o.SubjectAccessReviewCache))
			a.kube = true
		}
	}
	if want.Has(AccessAuthClientCert) || (auto && o.ClientCAFile != "") {
		if o.ClientCAFile == "" {
			return errors.New("--access-auth client-cert needs --client-ca FILE")
		}
		cc, err := auth.NewClientCertAuthenticator(o.ClientCAFile)
		if err != nil {
			return err
		}
		// First: decided without a round trip to the API server.
		authns = append([]auth.Authenticator{cc}, authns...)
		a.clientCerts = true
	}
	if o.AggregatedAPI {
		if s.kube == nil {
			return fmt.Errorf("--aggregated-api needs cluster credentials to read the front proxy's CA: %w", s.kubeErr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cm, err := s.kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("--aggregated-api: reading kube-system/extension-apiserver-authentication: %w", err)
		}
		rh, err := auth.NewRequestHeader(cm.Data)
		if err != nil {
			return fmt.Errorf("--aggregated-api: %w", err)
		}
		// First: a proxied request carries the API server's certificate only.
		authns = append([]auth.Authenticator{rh}, authns...)
		a.proxied = true
	}
	a.authz = auth.UnionAuthorizer(authzs...)
	switch len(authns) {
	case 0:
		s.log.Warn("no authentication configured: /v1/access and /metrics answer 401 to every caller; run in a pod or give --kubeconfig FILE (bearer tokens, TokenReview), or --client-ca FILE (client certificates); --access-auth none switches authentication off for local use")
		return nil
	case 1:
		a.authn = authns[0]
	default:
		a.authn = auth.Union(authns...)
	}
	s.log.Info("access authentication", "kubernetes", a.kube, "clientCert", a.clientCerts, "aggregatedAPI", a.proxied, "privilegedGroups", privileged)
	return nil
}

// requestID returns the id set by withRequestID.
func requestID(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey{}).(string)
	return id
}

type requestIDKey struct{}

// withRequestID gives each request an id, sent back in X-Request-Id.
func withRequestID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := httperr.NewRequestID()
		w.Header().Set("X-Request-Id", id)
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// refuse answers with the JSON error body carrying the request id.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	httperr.Write(w, code, msg, requestID(r))
}

// authenticate establishes the caller of endpoint; when false, it has
// answered 401, 429 or 503.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, endpoint string) (auth.User, bool) {
	a := &s.access
	if a.off {
		return auth.User{}, true
	}
	if a.authn == nil {
		s.metrics.accessAuth.WithLabelValues(endpoint, "unauthenticated").Inc()
		s.refuse(w, r, http.StatusUnauthorized, "authentication required, but this server has none configured: run usher serve in a pod or with --kubeconfig FILE "+
			"(bearer tokens checked with a TokenReview), or with --client-ca FILE (client certificates); --access-auth none switches authentication off (local use only)")
		return auth.User{}, false
	}
	u, ok, err := a.authn.AuthenticateRequest(r)
	if ok {
		return u, true
	}
	if errors.Is(err, auth.ErrTooManyReviews) {
		// Not logged: a flood of invented tokens must not flood the log.
		w.Header()["Retry-After"] = retryAfter
		s.refuse(w, r, http.StatusTooManyRequests, "authentication: "+err.Error())
		return auth.User{}, false
	}
	if err != nil {
		s.metrics.accessAuth.WithLabelValues(endpoint, "error").Inc()
		s.log.Error("authentication failed: the credential could not be checked", "requestID", requestID(r), "endpoint", endpoint, "err", err)
		s.refuse(w, r, http.StatusServiceUnavailable, "authentication unavailable: the credential could not be checked; try again later")
		return auth.User{}, false
	}
	s.metrics.accessAuth.WithLabelValues(endpoint, "unauthenticated").Inc()
	var how []string
	if a.kube {
		w.Header().Set("WWW-Authenticate", `Bearer realm="usher"`)
		how = append(how, "a Kubernetes bearer token (Authorization: Bearer TOKEN)")
	}
	if a.clientCerts {
		how = append(how, "a client certificate")
	}
	s.refuse(w, r, http.StatusUnauthorized, "authentication required: send "+strings.Join(how, " or "))
	return auth.User{}, false
}

// authorize decides attrs for endpoint; when false, it has answered 403 or 503.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, endpoint string, attrs auth.Attributes, forbidden string) bool {
	d, reason, err := s.access.authz.Authorize(r.Context(), attrs)
	if d == auth.Allow && err == nil {
		s.metrics.accessAuth.WithLabelValues(endpoint, "allowed").Inc()
		return true
	}
	if err != nil {
		s.metrics.accessAuth.WithLabelValues(endpoint, "error").Inc()
		s.log.Error("authorization failed: the API server could not be asked", "requestID", requestID(r), "endpoint", endpoint,
			"caller", attrs.User.Name, "permission", attrs.String(), "err", err)
		s.refuse(w, r, http.StatusServiceUnavailable, "authorization unavailable; try again later")
		return false
	}
	s.metrics.accessAuth.WithLabelValues(endpoint, "forbidden").Inc()
	s.log.Info("access refused", "requestID", requestID(r), "endpoint", endpoint, "caller", attrs.User.Name,
		"permission", attrs.String(), "reason", reason)
	s.refuse(w, r, http.StatusForbidden, forbidden)
	return false
}

// authorizeAccess lets a caller ask about itself, and about others with
// the accessreviews permission.
func (s *Server) authorizeAccess(w http.ResponseWriter, r *http.Request, caller auth.User, req *decision.AccessRequest) bool {
	if s.access.off {
		return true
	}
	if aboutSelf(caller, req.User, req.Groups) {
		s.metrics.accessAuth.WithLabelValues("access", "self").Inc()
		return true
	}
	attrs := auth.Attributes{User: caller, Verb: AccessReviewVerb, APIGroup: AccessReviewGroup, Resource: AccessReviewResource}
	return s.authorize(w, r, "access", attrs, fmt.Sprintf(
		"forbidden: %q may ask only about itself (its own user name, and groups it is a member of); asking about another user or other groups needs permission to %s %s in API group %s",
		caller.Name, AccessReviewVerb, AccessReviewResource, AccessReviewGroup))
}

// aboutSelf reports whether the caller asks about its own name with none
// but its own groups.
func aboutSelf(caller auth.User, user string, groups []string) bool {
	return user == caller.Name && sets.New(caller.Groups...).HasAll(groups...)
}

// guardMetrics lets through callers allowed to get the non-resource URL
// /metrics, as kube-rbac-proxy and controller-runtime do.
func (s *Server) guardMetrics(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.access.off {
			h.ServeHTTP(w, r)
			return
		}
		caller, ok := s.authenticate(w, r, "metrics")
		if !ok {
			return
		}
		attrs := auth.Attributes{User: caller, Verb: "get", Path: "/metrics"}
		if !s.authorize(w, r, "metrics", attrs, fmt.Sprintf("forbidden: %q may not get /metrics", caller.Name)) {
			return
		}
		h.ServeHTTP(w, r)
	})
}
