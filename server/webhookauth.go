package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/internal/httperr"
)

// Who may call the webhook paths (Options.WebhookAuth, --webhook-auth;
// docs/security.md).
const (
	// WebhookAuthClientCert answers only a client certificate of
	// Options.WebhookClientCAFile naming one of Options.WebhookClientCNs;
	// any other caller gets 401 before its body is read.
	WebhookAuthClientCert = "client-cert"
	// WebhookAuthReport verifies and counts callers but refuses none, for
	// API servers that cannot present a certificate (EKS, GKE, AKS).
	WebhookAuthReport = "report"
	WebhookAuthNone   = "none" // local use and tests
)

// webhookAuth is the check of the webhook paths' callers.
type webhookAuth struct {
	mode string
	ca   *auth.ClientCertAuthenticator // nil: nobody is verified
	cns  []string
}

// setupWebhookAuth checks the webhook options and warns of what is not checked.
func (s *Server) setupWebhookAuth() error {
	o, a := s.opts, &s.webhook
	a.mode, a.cns = o.WebhookAuth, o.WebhookClientCNs
	switch a.mode {
	case WebhookAuthClientCert, WebhookAuthReport:
	case WebhookAuthNone:
		if o.WebhookClientCAFile != "" {
			return errors.New("--webhook-client-ca is given but --webhook-auth none checks no caller")
		}
		s.log.Warn("WEBHOOK CALLERS ARE NOT CHECKED (--webhook-auth none): anyone who can reach this server may send it reviews, " +
			"and each may cost an Event, an audit record and a directory lookup; use it for local use and tests only")
	default:
		return fmt.Errorf("--webhook-auth %q: want client-cert, report or none", a.mode)
	}
	if o.WebhookClientCAFile != "" {
		ca, err := auth.NewClientCertAuthenticator(o.WebhookClientCAFile)
		if err != nil {
			return fmt.Errorf("--webhook-client-ca: %w", err)
		}
		a.ca = ca
	} else if a.mode == WebhookAuthClientCert {
		return errors.New("--webhook-auth client-cert (the default) needs --webhook-client-ca FILE: the CA of the client certificate " +
			"kube-apiserver presents to webhooks (its AdmissionConfiguration, see docs/security.md); where the API server cannot present one, " +
			"--webhook-auth report serves every caller and counts the unverified ones, and none checks nobody (local use)")
	}
	if len(a.cns) == 0 && a.mode != WebhookAuthNone {
		return errors.New("--webhook-client-cn: give the common names of the API server's client certificate (default kube-apiserver)")
	}
	if a.mode == WebhookAuthReport {
		s.log.Warn("--webhook-auth report: webhook callers are verified and counted (usher_webhook_callers_total), none is refused",
			"clientCA", a.ca != nil, "clientCN", a.cns)
	}
	s.metrics.webhookMode.WithLabelValues(a.mode).Set(1)
	return nil
}

// connState is what a connection's requests share: whether it came
// through the webhook listener, and its caller, verified once.
type connState struct {
	webhookPort bool
	once        sync.Once
	caller, why string
}

type connKey struct{}

func connOf(ctx context.Context) *connState {
	c, _ := ctx.Value(connKey{}).(*connState)
	return c
}

// connContext gives each connection its connState.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	cs := &connState{}
	if tc, ok := c.(*tls.Conn); ok {
		lc, _ := tc.NetConn().(*limitedConn)
		cs.webhookPort = lc != nil && lc.l == &s.webhookConns
	}
	return context.WithValue(ctx, connKey{}, cs)
}

// caller says who sent r (admission.Caller*) and, unverified, why.
func (a *webhookAuth) caller(r *http.Request) (string, string) {
	switch {
	case a.mode == WebhookAuthNone:
		return admission.CallerUnchecked, ""
	case a.ca == nil:
		return admission.CallerUnverified, "no --webhook-client-ca is configured"
	case r.TLS == nil || len(r.TLS.PeerCertificates) == 0:
		return admission.CallerUnverified, "no client certificate"
	}
	u, err := a.ca.Verify(r.TLS.PeerCertificates)
	if err != nil {
		return admission.CallerUnverified, "the client certificate does not verify: " + clip.String(err.Error(), clip.Text)
	}
	if !slices.Contains(a.cns, u.Name) {
		return admission.CallerUnverified, fmt.Sprintf("the client certificate names %q, not %s", clip.String(u.Name, clip.Name), strings.Join(a.cns, " or "))
	}
	return admission.CallerVerified, ""
}

// guardWebhook lets through to h the callers the mode allows, counting
// them; one refused gets 401 before its body is read.
func (s *Server) guardWebhook(name string, h http.Handler) http.Handler {
	a := &s.webhook
	counter := func(result string) prometheus.Counter { return s.metrics.webhookCallers.WithLabelValues(name, result) }
	verified, other := counter(admission.CallerVerified), counter(admission.CallerUnchecked)
	switch a.mode {
	case WebhookAuthClientCert:
		other = counter("refused")
	case WebhookAuthReport:
		other = counter(admission.CallerUnverified)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs := connOf(r.Context())
		if cs == nil { // served without Run's connections (Handler)
			cs = &connState{}
			r = r.WithContext(context.WithValue(r.Context(), connKey{}, cs))
		}
		cs.once.Do(func() { cs.caller, cs.why = a.caller(r) })
		if cs.caller == admission.CallerVerified {
			verified.Inc()
			h.ServeHTTP(w, r)
			return
		}
		other.Inc()
		if a.mode != WebhookAuthClientCert {
			h.ServeHTTP(w, r)
			return
		}
		s.log.Debug("webhook caller refused", "handler", name, "remote", r.RemoteAddr, "reason", cs.why)
		if r.ProtoMajor == 1 {
			w.Header()["Connection"] = closeConn // the body stays unread
		}
		httperr.Write(w, http.StatusUnauthorized, "usher: only the API server may call /"+name+" (--webhook-auth client-cert): "+cs.why, "")
	})
}

// callerOf tells the admission handler who sent a review.
func callerOf(ctx context.Context) string {
	if cs := connOf(ctx); cs != nil {
		return cs.caller
	}
	return ""
}
