// Package server is `usher serve`: the decision API and the Kubernetes
// admission webhook over TLS, with health, readiness, metrics and hot
// reload.
//
// Rules this package enforces:
//   - TLS always: a certificate from files, re-read when they change, or a
//     self-signed one generated at start for local use.
//   - The HTTP edge only translates: bodies are capped, methods and content
//     types checked, panics recovered and counted, every bad input answered
//     with a clear error; decisions come from package engine and package
//     admission.
//   - The configuration is read by config.Load, as every command reads it
//     (file, ConfigMap manifest or mounted directory, ADMISSION_CONTROLLER_*
//     overrides), and served as one engine generation: policy, resolvers
//     and admission settings change together, in one atomic swap.
//   - A configuration change on disk is swapped in atomically; an invalid
//     one is refused, logged (with the reason), counted and shown on
//     /readyz (without the reason) while the last good configuration keeps
//     serving. Decisions never wait for a reload.
//   - One audit record per decision, unless switched off.
//   - /v1/access and /metrics answer only authenticated callers (a bearer
//     token checked with a TokenReview, or a client certificate), unless
//     authentication is switched off explicitly; a caller asks about
//     itself unless RBAC lets it ask about others. The webhooks answer
//     only the API server, identified by its client certificate, unless
//     told to answer anyone (webhookauth.go); an AdmissionReview only
//     decides about the object its sender sent.
//   - No error text carries directory internals to a caller: a failed
//     group lookup is reported as such with a request id, the detail goes
//     to the log.
//   - Nothing a caller sends grows memory without bound: request bodies
//     share a memory budget and a request that does not fit is refused
//     with 429 before its body is read (shed.go); metric labels come from
//     closed sets; audit strings are cut to a bounded length.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/cluster"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/internal/pki"
	"github.com/usherhq/usher/internal/safefile"
	"github.com/usherhq/usher/serving"
)

// Options configure a Server. Zero values take the documented defaults,
// applied in withDefaults.
type Options struct {
	// ConfigPath is a usher YAML file, a ConfigMap manifest or a mounted
	// ConfigMap directory. Default: "" (the embedded default, no reload).
	ConfigPath string
	// ConfigMaps, instead of ConfigPath, are ConfigMaps read and watched
	// through the Kubernetes API (credentials: Kubeconfig, or the pod's
	// service account), merged as YuniKorn merges yunikorn-defaults and
	// yunikorn-configs (a later key wins; yunikorn-defaults first). A
	// change is in service within about a second, on every replica; an
	// invalid one is refused and the last good generation keeps serving.
	// See docs/configuration-sources.md.
	ConfigMaps []ConfigMapRef
	// Addr is the listen address, HOST:PORT, or fd:N for a listening
	// socket inherited as file descriptor N (see Listen). Default
	// "127.0.0.1:8443".
	Addr string
	// Listener, when set, is used instead of listening on Addr (tests).
	Listener net.Listener
	// WebhookAddr, when set, is the listen address of the webhook paths
	// (/mutate, /validate, /validate-config), which then serves only them,
	// /healthz and /readyz, with the same TLS configuration; Addr then
	// serves everything else, and not them. Default "": Addr serves all.
	WebhookAddr string
	// WebhookListener, when set, is used instead of listening on
	// WebhookAddr (tests), with the same effect.
	WebhookListener net.Listener
	// WebhookAuth says who may call the webhook paths: WebhookAuthClientCert,
	// WebhookAuthReport or WebhookAuthNone (webhookauth.go). Default
	// WebhookAuthClientCert.
	WebhookAuth string
	// WebhookClientCAFile is a PEM bundle of the CAs that issue the client
	// certificate the API server presents to the webhooks: its own, never
	// ClientCAFile's. Required by WebhookAuthClientCert. Default "".
	WebhookClientCAFile string
	// WebhookClientCNs are the common names such a certificate may have.
	// Default ["kube-apiserver"].
	WebhookClientCNs []string
	// TLSCertFile and TLSKeyFile hold the serving certificate; both or
	// neither. Default: a self-signed certificate for localhost, 127.0.0.1
	// and ::1, generated at start.
	TLSCertFile, TLSKeyFile string
	// Logger receives operational logs and audit records. Default: JSON to
	// stderr at info level.
	Logger *slog.Logger
	// AuditLog, when set, receives the audit records instead of Logger:
	// one JSON line per record, written by slog.NewJSONHandler at level
	// Info, which serializes its writes. Default: none.
	AuditLog io.Writer
	// Audit writes one record per decision and per admission review.
	// Default true; set NoAudit to switch it off.
	NoAudit bool
	// NoDenialEvents switches off the Kubernetes Event usher records on
	// the object's namespace for every admission denial (see events.go).
	// Default false: Events are recorded whenever cluster credentials are
	// available (Kubeconfig, or the pod's service account).
	NoDenialEvents bool
	// AuditQueue, when positive, takes audit records off the request
	// path: up to this many wait to be formatted and written by one
	// goroutine, and a record that finds the queue full is dropped and
	// counted (usher_audit_records_dropped_total). Run writes what is
	// queued before it returns. Default 0: each record is written by the
	// request that made it.
	AuditQueue int
	// ReloadInterval is how often the configuration is checked for changes.
	// Default 2s.
	ReloadInterval time.Duration
	// ShutdownTimeout bounds graceful shutdown. Default 10s.
	ShutdownTimeout time.Duration
	// MaxAccessBody caps the size of a /v1/access request. Default 64 KiB.
	MaxAccessBody int64
	// MaxReviewBody caps the size of an AdmissionReview on /mutate and
	// /validate. Default admission.DefaultMaxBodyBytes (7 MiB).
	MaxReviewBody int64
	// MaxGroups caps the groups of a review's request.userInfo, of a
	// user.info annotation a requester supplies, and of a /v1/access
	// request: more are refused, naming the limit and the count, and
	// counted in usher_admission_groups_over_limit_total. Default
	// admission.DefaultMaxGroups (2048).
	MaxGroups int
	// BodyMemory is the memory that the request bodies being read and
	// decoded may hold at once, all connections and HTTP/2 streams
	// together; a body is counted twice its size plus 8 KiB (see
	// shed.go). A request whose body does not fit is refused with 429 and
	// Retry-After before its body is read. Default 48 MiB: six bodies of
	// the 3 MiB the API server admits, or three of the 7 MiB cap.
	BodyMemory int64
	// SmallBodyReserve is memory, apart from BodyMemory, that only bodies
	// of at most SmallBody bytes may use, so that ordinary reviews are
	// answered while large bodies take all of BodyMemory. Default 8 MiB.
	SmallBodyReserve int64
	// SmallBody is the largest body that may use SmallBodyReserve.
	// Default 256 KiB (a pod review is a few KiB).
	SmallBody int64
	// BodyReadTimeout bounds the time a request's body may take to arrive
	// once the request has been given memory for it, so a slow body
	// cannot hold its share for longer. Default 10s (the API server's
	// default webhook timeout).
	BodyReadTimeout time.Duration
	// ReadHeaderTimeout bounds the time to read a request's headers.
	// Default 5s.
	ReadHeaderTimeout time.Duration
	// MaxHeaderBytes caps a request's headers (HTTP/1.1 and HTTP/2).
	// Default 64 KiB.
	MaxHeaderBytes int
	// MaxConcurrentStreams caps the HTTP/2 streams (requests) of one
	// connection. Default 100.
	MaxConcurrentStreams int
	// MaxConns caps the connections open at once; one beyond it is
	// closed as soon as it is accepted (usher_shed_connections_total).
	// With a webhook listener, a quarter of them are its own and the rest
	// Addr's, so that a flood on one port does not close the other.
	// Default 1024 (the API server needs a few, probes and scrapes one
	// each).
	MaxConns int
	// MaxStreamBuffer and MaxConnBuffer are the HTTP/2 flow-control
	// windows: the bytes a client may send on a stream, and on a
	// connection, before a handler reads them (memory per connection that
	// the body budget does not see). Default 256 KiB and 512 KiB.
	MaxStreamBuffer, MaxConnBuffer int
	// Getenv reads ADMISSION_CONTROLLER_* overrides. Default os.LookupEnv.
	Getenv func(string) (string, bool)

	// AccessAuth lists how callers of /v1/access and /metrics
	// authenticate: AccessAuthKubernetes, AccessAuthClientCert (or both),
	// AccessAuthAuto or AccessAuthNone alone. Default [AccessAuthAuto]:
	// kubernetes when cluster credentials are available, client-cert when
	// ClientCAFile is given, and 401 for everyone when neither is.
	AccessAuth []string
	// Kubeconfig is the kubeconfig file whose credentials send
	// TokenReviews and SubjectAccessReviews. Default "": the pod's service
	// account when usher runs in a pod ($KUBECONFIG is not read).
	Kubeconfig string
	// ClientCAFile is a PEM bundle of the CAs whose client certificates
	// authenticate callers (user: the common name, groups: the
	// organizations). Default "": client certificates are not accepted.
	ClientCAFile string
	// PrivilegedGroups may ask about anyone and read /metrics without a
	// SubjectAccessReview. Default (nil) ["system:masters"]; an empty
	// non-nil slice names none.
	PrivilegedGroups []string
	// TokenReviewCache and SubjectAccessReviewCache tune the caches of the
	// API server's answers (defaults: 10s for success and failure, 4096
	// entries, 10s timeout), and TokenReviewCache the TokenReviews'
	// audiences and rate (see auth.TokenOptions; a token refused for the
	// rate gets 429 and Retry-After).
	TokenReviewCache         auth.TokenOptions
	SubjectAccessReviewCache auth.SAROptions
}

func (o Options) withDefaults() Options {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8443"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = 2 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.MaxAccessBody <= 0 {
		o.MaxAccessBody = 64 << 10
	}
	if o.MaxReviewBody <= 0 {
		o.MaxReviewBody = admission.DefaultMaxBodyBytes
	}
	if o.MaxGroups <= 0 {
		o.MaxGroups = admission.DefaultMaxGroups
	}
	if o.BodyMemory <= 0 {
		o.BodyMemory = 48 << 20
	}
	if o.SmallBodyReserve <= 0 {
		o.SmallBodyReserve = 8 << 20
	}
	if o.SmallBody <= 0 {
		o.SmallBody = 256 << 10
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = 10 * time.Second
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 5 * time.Second
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	if o.MaxConcurrentStreams <= 0 {
		o.MaxConcurrentStreams = 100
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 1024
	}
	if o.MaxStreamBuffer <= 0 {
		o.MaxStreamBuffer = 256 << 10
	}
	if o.MaxConnBuffer <= 0 {
		o.MaxConnBuffer = 512 << 10
	}
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	if o.WebhookAuth == "" {
		o.WebhookAuth = WebhookAuthClientCert
	}
	if o.WebhookClientCNs == nil {
		o.WebhookClientCNs = []string{"kube-apiserver"}
	}
	return o
}

// Server is a running or ready-to-run usher service.
type Server struct {
	opts      Options
	log       *slog.Logger
	auditQ    *auditQueue // nil: audit records are written on the request path
	serving   *serving.Store
	admission *admission.Handler
	metrics   *metrics
	registry  *prometheus.Registry
	tlsConfig *tls.Config
	access    accessAuth
	webhook   webhookAuth
	// kube is the cluster credentials; nil with kubeErr when they did not
	// load.
	kube    *cluster.Client
	kubeErr error
	// cm is the ConfigMap source when Options.ConfigMaps is set.
	cm *cmSource
	// events records denial Events; nil when off.
	events     *denialEvents
	configInfo *prometheus.GaugeVec
	// CAPEM is the certificate of a self-signed server, nil otherwise.
	CAPEM []byte

	reloadMu   sync.Mutex
	lastSum    [32]byte
	status     atomic.Pointer[reloadStatus]
	httpServer *http.Server
	addr       atomic.Value // string, once listening
	bodies     bodyBudgets
	// conns and webhookConns limit the connections of the listeners of
	// Addr and WebhookAddr.
	conns, webhookConns connLimiter
	// parsing lets /validate-config parse one configuration at a time.
	parsing *semaphore.Weighted
}

type reloadStatus struct {
	loadedAt time.Time
	// generation says what is in service: the file, or each ConfigMap
	// with its resourceVersion, and the content's sha256.
	generation string
	failed     bool // the last reload was refused, at failedAt
	failedAt   time.Time
	failedGen  string // what was refused (no reason: see serveReady)
	// upgrade counts what a later release refuses in the configuration
	// in service (config.Diagnostic.Upgrade).
	upgrade int
	// missingGroup is config.Config.MissingGroup of the configuration in
	// service.
	missingGroup string
}

// New loads the configuration and prepares the service.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	s := &Server{opts: opts, log: opts.Logger, registry: prometheus.NewRegistry(), parsing: semaphore.NewWeighted(1)}
	if opts.AuditLog != nil && !opts.NoAudit {
		audit := slog.NewJSONHandler(opts.AuditLog, &slog.HandlerOptions{Level: slog.LevelInfo})
		s.log = slog.New(SplitAudit(opts.Logger.Handler(), audit))
	}
	if opts.AuditQueue > 0 && !opts.NoAudit {
		s.auditQ = newAuditQueue(opts.AuditQueue)
		s.log = slog.New(s.auditQ.handler(s.log.Handler()))
		registerAuditDrops(s.registry, s.auditQ)
	}
	s.bodies.shared.limit, s.bodies.small.limit, s.bodies.smallBody = opts.BodyMemory, opts.SmallBodyReserve, opts.SmallBody
	// The cluster credentials, loaded once; each user says what it does
	// without them.
	s.kube, s.kubeErr = cluster.Load(opts.Kubeconfig)
	var cfg *config.Config
	var err error
	// /readyz and usher_config_info name a file only as "file": anyone
	// who reaches the port reads /readyz.
	gen := s.genName()
	switch {
	case len(opts.ConfigMaps) > 0 && opts.ConfigPath != "":
		return nil, errors.New("give --config or --config-map, not both")
	case len(opts.ConfigMaps) > 0:
		if s.cm, err = newCMSource(opts.ConfigMaps, s.kube, s.kubeErr); err != nil {
			return nil, err
		}
		if err = s.cm.fetch(context.Background()); err != nil {
			return nil, err
		}
		cfg, s.lastSum, gen, _, err = s.loadConfigMaps(s.cm.snapshot(), nil)
	default:
		if opts.ConfigPath != "" {
			s.lastSum, _ = contentSum(opts.ConfigPath)
		}
		cfg, err = s.load()
	}
	if err != nil {
		return nil, err
	}
	s.logWarnings(cfg)
	if s.serving, err = serving.New(cfg, s.log); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(s.registry, s.serving)
	s.configInfo = newConfigInfo(s.registry)
	s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "usher_config_upgrade_warnings",
		Help: "Warnings about what a later release refuses (docs/upgrade.md) in the configuration in service."},
		func() float64 { return float64(s.status.Load().upgrade) }))
	s.conns.max, s.conns.refused = int64(opts.MaxConns), s.metrics.connsRefused
	if s.webhookListener() {
		s.webhookConns.max, s.webhookConns.refused = max(s.conns.max/4, 1), s.conns.refused
		s.conns.max -= s.webhookConns.max
	}
	s.registerBodyGauges()
	if err := s.setupDenialEvents(); err != nil {
		return nil, err
	}
	hopts := []admission.Option{
		admission.WithPanicHook(func(any) { s.metrics.panics.WithLabelValues("admission").Inc() }),
		// Settings and authorizers come from the State in service: one
		// atomic swap changes policy and admission together.
		admission.WithState(s.serving.Admission),
		admission.WithAudit(s.withDenialEvents(s.auditReview)),
		admission.WithMaxBodyBytes(opts.MaxReviewBody),
		admission.WithCaller(callerOf),
		admission.WithMaxGroups(opts.MaxGroups, func(source string) { s.metrics.groupsOver.WithLabelValues(source).Inc() }),
	}
	if s.kube != nil {
		// The adoption rule reads the new owner (docs/delete.md); without
		// cluster credentials it fails closed.
		hopts = append(hopts, admission.WithOwnerLookup(admission.OwnerLookupFunc(s.kube.Get)))
	}
	s.admission = admission.NewHandler(nil, hopts...)
	s.setGeneration(gen, s.lastSum, cfg)
	if err := s.setupAccessAuth(); err != nil {
		return nil, err
	}
	if err := s.setupWebhookAuth(); err != nil {
		return nil, err
	}
	if err := s.setupTLS(); err != nil {
		return nil, err
	}
	if s.access.clientCerts || s.webhook.ca != nil {
		// Ask for a certificate without verifying it in the handshake:
		// the webhooks' and /v1/access's have CAs of their own, and a
		// caller without one is answered (or refused) by the handler.
		s.tlsConfig.ClientAuth = tls.RequestClientCert
	}
	return s, nil
}

// load reads the configuration (or the embedded default) through the
// pipeline every command uses, with the ADMISSION_CONTROLLER_* overrides.
func (s *Server) load() (*config.Config, error) {
	return config.Load(s.opts.ConfigPath, config.WithEnv(s.opts.Getenv))
}

func (s *Server) setupTLS() error {
	switch {
	case s.opts.TLSCertFile != "" && s.opts.TLSKeyFile != "":
		src, err := newCertSource(s.opts.TLSCertFile, s.opts.TLSKeyFile, s.log)
		if err != nil {
			return err
		}
		s.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: src.get}
	case s.opts.TLSCertFile != "" || s.opts.TLSKeyFile != "":
		return errors.New("tls: give both --tls-cert and --tls-key, or neither for a self-signed certificate")
	default:
		cert, caPEM, err := pki.SelfSigned("usher (self-signed)", []string{"localhost", "127.0.0.1", "::1"}, 365*24*time.Hour)
		if err != nil {
			return err
		}
		s.CAPEM = caPEM
		s.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }}
		s.log.Warn("tls: no certificate given; serving a self-signed certificate for local use")
	}
	s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "usher_tls_certificate_expiry_timestamp_seconds",
		Help: "When the serving certificate expires (its notAfter), read when scraped."}, func() float64 {
		if c, _ := s.tlsConfig.GetCertificate(nil); c.Leaf != nil {
			return float64(c.Leaf.NotAfter.Unix())
		}
		return 0
	}))
	return nil
}

// Serving returns what serves (for tests and embedding).
func (s *Server) Serving() *serving.Store { return s.serving }

// Addr returns the address the server listens on, once Run has started.
func (s *Server) Addr() string {
	a, _ := s.addr.Load().(string)
	return a
}

// Handler returns the HTTP routes of Addr, without TLS (for tests and
// embedding): with a webhook listener, all but the webhook paths.
func (s *Server) Handler() http.Handler { return s.routes(!s.webhookListener(), true) }

// webhookListener says whether the webhook paths have a listener of their
// own.
func (s *Server) webhookListener() bool {
	return s.opts.WebhookAddr != "" || s.opts.WebhookListener != nil
}

// routes returns /healthz and /readyz, with the webhook paths and the
// others (/v1/access, /metrics) as asked.
func (s *Server) routes(webhooks, others bool) *http.ServeMux {
	mux := http.NewServeMux()
	if others {
		mux.Handle("/v1/access", s.instrument("access", withRequestID(s.limitBody("access", s.opts.MaxAccessBody, http.HandlerFunc(s.serveAccess)))))
		mux.Handle("/metrics", withRequestID(s.guardMetrics(s.metricsHandler())))
	}
	if webhooks {
		for path, h := range map[string]http.Handler{"mutate": s.admission.MutateHTTP(), "validate": s.admission.ValidateHTTP(),
			"validate-config": http.HandlerFunc(s.serveValidateConfig)} {
			mux.Handle("/"+path, s.instrument(path, s.guardWebhook(path, s.limitBody(path, s.opts.MaxReviewBody, h))))
		}
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", s.serveReady)
	return mux
}

// Run serves until ctx is done, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	ln, err := listen(s.opts.Listener, s.opts.Addr, "--addr")
	if err != nil {
		return err
	}
	main := s.Handler()
	handler := main
	lns := []net.Listener{&s.conns}
	s.conns.Listener = ln
	webhookAddr := ""
	if s.webhookListener() {
		wl, err := listen(s.opts.WebhookListener, s.opts.WebhookAddr, "--webhook-addr")
		if err != nil {
			ln.Close()
			return err
		}
		s.webhookConns.Listener, webhookAddr = wl, wl.Addr().String()
		lns = append(lns, &s.webhookConns)
		hooks := s.routes(true, false)
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if cs := connOf(r.Context()); cs != nil && cs.webhookPort {
				hooks.ServeHTTP(w, r)
				return
			}
			main.ServeHTTP(w, r)
		})
	}
	if s.auditQ != nil {
		// Last, once the requests are done: what is queued is written.
		defer s.auditQ.close()
	}
	s.addr.Store(ln.Addr().String())
	s.httpServer = &http.Server{
		Handler:           handler,
		ConnContext:       s.connContext,
		TLSConfig:         s.tlsConfig,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		// A backstop: bodies have BodyReadTimeout from the moment they
		// are given memory (limitBody).
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: s.opts.MaxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          s.opts.MaxConcurrentStreams,
			MaxReceiveBufferPerStream:     s.opts.MaxStreamBuffer,
			MaxReceiveBufferPerConnection: s.opts.MaxConnBuffer,
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.log.Info("usher serving", "addr", s.Addr(), "webhookAddr", webhookAddr, "webhookAuth", s.webhook.mode, "config", s.configName())
	done := make(chan struct{})
	go func() {
		defer close(done)
		switch {
		case s.cm != nil:
			// Each replica says on the ConfigMap which generation it
			// serves from the start.
			objs := s.cm.snapshot()
			_, _, ref, gen := s.cm.merged(objs, nil)
			s.event(ref, s.cm.object(objs, ref), "Normal", "ConfigLoaded",
				fmt.Sprintf("usher replica %s serves %s (sha256 %s)", s.cm.instance, gen, shortSum(s.lastSum)))
			s.cm.run(ctx, func() { _, _ = s.reloadConfigMaps() })
		case s.opts.ConfigPath != "":
			s.watch(ctx)
		}
	}()
	errc := make(chan error, len(lns))
	for _, l := range lns {
		go func() { errc <- s.httpServer.ServeTLS(l, "", "") }()
	}
	select {
	case err := <-errc:
		s.httpServer.Close()
		<-done
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "timeout", s.opts.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	err = s.httpServer.Shutdown(sctx)
	<-done
	s.events.shutdown()
	if cerr := s.serving.Close(); cerr != nil {
		s.log.Warn("closing resolvers", "err", cerr)
	}
	for range lns {
		if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) && err == nil {
			err = e
		}
	}
	return err
}

// listen returns ln, or a listener on addr; an error names flag.
func listen(ln net.Listener, addr, flag string) (net.Listener, error) {
	if ln != nil {
		return ln, nil
	}
	ln, err := listenAddr(addr)
	if op := (*net.OpError)(nil); errors.As(err, &op) {
		err = op.Err // a port in use, an address not on this host, a port below 1024
	}
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (%s): %w", addr, flag, err)
	}
	return ln, nil
}

// listenAddr listens on HOST:PORT, or takes over the listening socket its
// parent passed as file descriptor N when addr is fd:N (a test harness or
// a supervisor that binds the port and keeps it across restarts; systemd
// passes its first socket as fd:3).
func listenAddr(addr string) (net.Listener, error) {
	n, ok := strings.CutPrefix(addr, "fd:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	fd, err := strconv.Atoi(n)
	if err == nil && fd < 3 {
		err = errors.New("want a descriptor from 3 up (0-2 are stdin, stdout and stderr)")
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), addr)
	defer f.Close()
	return net.FileListener(f)
}

func (s *Server) configName() string {
	if s.cm != nil {
		return s.cm.names()
	}
	if s.opts.ConfigPath == "" {
		return "<embedded default>"
	}
	return s.opts.ConfigPath
}

// genName names the generation of a file or of the embedded default on
// /readyz and in usher_config_info (ConfigMaps are named with their
// resourceVersions instead).
func (s *Server) genName() string {
	if s.opts.ConfigPath == "" {
		return "embedded default"
	}
	return "file"
}

// watch polls the configuration for changes and reloads it.
func (s *Server) watch(ctx context.Context) {
	t := time.NewTicker(s.opts.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Reload()
		}
	}
}

// Reload re-reads the configuration when it changed since the last
// attempt and swaps it in when valid. It reports whether a new
// configuration was put in service and the error of a refused one. With
// ConfigMaps it reloads what the watch last saw.
func (s *Server) Reload() (bool, error) {
	if s.cm != nil {
		return s.reloadConfigMaps()
	}
	if s.opts.ConfigPath == "" {
		return false, nil
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	sum, err := contentSum(s.opts.ConfigPath)
	if err == nil && sum == s.lastSum {
		return false, nil
	}
	var cfg *config.Config
	if err == nil {
		s.lastSum = sum
		cfg, err = s.load()
	}
	return s.apply(cfg, err, s.genName(), sum)
}

// apply swaps cfg in when err is nil, or records the refusal of the
// generation gen. The last good generation keeps serving either way until
// the swap.
func (s *Server) apply(cfg *config.Config, err error, gen string, sum [32]byte) (bool, error) {
	old := s.serving.Current().Config()
	if err == nil {
		err = s.serving.Swap(cfg) // one atomic swap: policy, resolvers and admission
	}
	if err != nil {
		s.metrics.reloads.WithLabelValues("failure").Inc()
		st := *s.status.Load()
		st.failed, st.failedAt, st.failedGen = true, time.Now(), gen
		s.status.Store(&st)
		s.log.Error("configuration refused; the previous configuration keeps serving", "config", s.configName(), "refused", gen, "serving", st.generation, "err", err)
		return false, err
	}
	s.metrics.reloads.WithLabelValues("success").Inc()
	s.metrics.lastReload.SetToCurrentTime()
	s.setGeneration(gen, sum, cfg)
	// Who gained and who lost rights, on this goroutine: the new
	// generation already serves (about 50 ms at 10,000 queues).
	change := impact.Summarize(old, cfg, 5)
	s.metrics.accessChanges.WithLabelValues("gained").Add(float64(change.Gained))
	s.metrics.accessChanges.WithLabelValues("lost").Add(float64(change.Lost))
	s.metrics.accessChanges.WithLabelValues("placement").Add(float64(change.Placements))
	s.log.Info("configuration reloaded", "config", s.configName(), "generation", gen, "sha256", shortSum(sum), "access", change)
	s.logWarnings(cfg)
	releaseMemory() // old and change are dead here
	return true, nil
}

// setGeneration records the generation in service on /readyz and in
// usher_config_info, and what of cfg a later release refuses.
func (s *Server) setGeneration(gen string, sum [32]byte, cfg *config.Config) {
	st := &reloadStatus{loadedAt: time.Now(), generation: gen + " (sha256 " + shortSum(sum) + ")", missingGroup: cfg.MissingGroup}
	for _, w := range cfg.Warnings {
		if w.Upgrade {
			st.upgrade++
		}
	}
	s.status.Store(st)
	s.configInfo.Reset()
	s.configInfo.WithLabelValues(gen, shortSum(sum)).Set(1)
}

// logWarnings logs the lint warnings of a configuration put in service.
func (s *Server) logWarnings(cfg *config.Config) {
	for _, w := range cfg.Warnings {
		s.log.Warn("configuration warning", "warning", w.String())
	}
}

// contentSum hashes the configuration file, or every file of a ConfigMap
// directory. Each file is streamed into the hash (safefile: regular files
// only, at most config.MaxFileSize bytes), so polling neither holds a copy
// of the configuration nor opens a device or a pipe.
func contentSum(path string) ([32]byte, error) {
	h := sha256.New()
	st, err := os.Stat(path)
	if err != nil {
		return [32]byte{}, err
	}
	if !st.IsDir() {
		if _, err := safefile.Copy(h, path, config.MaxFileSize); err != nil {
			return [32]byte{}, err
		}
	} else {
		entries, err := os.ReadDir(path)
		if err != nil {
			return [32]byte{}, err
		}
		for _, e := range entries {
			// The kubelet's bookkeeping (..data, its timestamped
			// directory) is left out, as config.Load leaves it.
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			fmt.Fprintf(h, "%s\x00", e.Name())
			n, err := safefile.Copy(h, path+"/"+e.Name(), config.MaxFileSize)
			if err != nil {
				n = -1
			}
			fmt.Fprintf(h, "\x00%d\x00", n)
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	st := s.status.Load()
	fmt.Fprintf(w, "ready: serving the configuration loaded at %s\n", st.loadedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "generation: %s\n", st.generation)
	fmt.Fprintf(w, "webhook callers: %s (--webhook-auth)\n", s.webhook.mode)
	if st.failed {
		// Anyone who reaches the port may read /readyz: the reason of the
		// refusal (which can name files, directory servers and DNs) is
		// only in the log and, for a ConfigMap, in an Event on it.
		where := "the log"
		if s.cm != nil {
			where = "the Events of the ConfigMap (kubectl describe) or the log"
		}
		refused := ""
		if s.cm != nil {
			refused = " (" + st.failedGen + " refused)"
		}
		fmt.Fprintf(w, "configuration reload failed at %s; see %s%s; the configuration above keeps serving\n", st.failedAt.UTC().Format(time.RFC3339), where, refused)
	}
	if st.missingGroup != "" {
		fmt.Fprintf(w, "default: service.policyGroup names %q, whose key the ConfigMap lacks: serving YuniKorn's default configuration, where everyone may submit to every queue\n", st.missingGroup)
	}
	if st.upgrade > 0 {
		fmt.Fprintf(w, "upgrade: the configuration in service has %d warnings about what usher %s refuses; see the log and docs/upgrade.md\n", st.upgrade, config.RefusingRelease)
	}
}
