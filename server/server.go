// Package server is `usher serve`: the decision API and the admission
// webhooks over TLS, with health, readiness, metrics and hot reload.
//
// Rules this package enforces:
//   - TLS always: a certificate from files, re-read when they change, or a
//     self-signed one for local use.
//   - The HTTP edge only translates: bodies capped, methods and content
//     types checked, panics recovered in one place (instrument), a
//     review's answered as a denial of its UID.
//   - The configuration is read once per reload from its source (source.go)
//     and served as one generation, swapped atomically; an invalid one is
//     refused, logged, counted and shown on /readyz (without the reason)
//     while the last good one keeps serving.
//   - One audit record per decision, unless switched off.
//   - /v1/access and /metrics answer only authenticated callers unless
//     switched off; a caller asks about itself unless RBAC lets it ask
//     about others. The webhooks answer only the API server, by its client
//     certificate, unless told otherwise (webhookauth.go); docs/security.md.
//   - No error text carries directory internals to a caller; the detail
//     goes to the log with a request id.
//   - Nothing a caller sends grows memory without bound: bodies share a
//     budget (shed.go), metric labels come from closed sets, audit strings
//     are clipped.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/semaphore"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/cluster"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/internal/defaults"
	"github.com/usherhq/usher/internal/pki"
	"github.com/usherhq/usher/serving"
)

// Options configure a Server; zero values take the defaults named here.
type Options struct {
	// ConfigPath is a usher YAML file, a ConfigMap manifest or a mounted
	// ConfigMap directory. Default "": the embedded default, no reload.
	ConfigPath string
	// ConfigMaps, instead of ConfigPath, are watched through the API and
	// merged as YuniKorn merges its two (docs/configuration-sources.md).
	ConfigMaps []ConfigMapRef
	// Addr is HOST:PORT, or fd:N for an inherited listening socket.
	// Default "127.0.0.1:8443". Listener, when set, is used instead (tests).
	Addr     string
	Listener net.Listener
	// WebhookAddr, when set, alone serves the webhook paths (and /healthz,
	// /readyz), which Addr then does not. WebhookListener as Listener.
	WebhookAddr     string
	WebhookListener net.Listener
	// WebhookAuth is WebhookAuthClientCert (default), WebhookAuthReport or
	// WebhookAuthNone. WebhookClientCAFile holds the CAs of the API server's
	// client certificate (never ClientCAFile's), whose allowed common names
	// are WebhookClientCNs, default ["kube-apiserver"].
	WebhookAuth         string
	WebhookClientCAFile string
	WebhookClientCNs    []string
	// TLSCertFile and TLSKeyFile: both or neither. Default: a self-signed
	// certificate for localhost, 127.0.0.1 and ::1.
	TLSCertFile, TLSKeyFile string
	Logger                  *slog.Logger  // logs and audit records; default JSON to stderr
	NoAudit                 bool          // switches the audit records off
	NoDenialEvents          bool          // else each admission denial is an Event when cluster credentials load
	AuditDropped            func() uint64 // the audit lines the sink dropped, when set
	ReloadInterval          time.Duration // how often the file is checked; default 2s
	ShutdownTimeout         time.Duration // bounds graceful shutdown; default 10s
	MaxReviewBody           int64         // caps an AdmissionReview; default admission.DefaultMaxBodyBytes
	// MaxGroups caps the groups of a review, of a supplied user.info and
	// of a /v1/access request. Default admission.DefaultMaxGroups.
	MaxGroups int
	// RefuseConfigWarnings makes /validate-config refuse a configuration with
	// warnings too; default: admitted, the warnings returned to kubectl.
	RefuseConfigWarnings bool
	// BodyMemory is what the bodies being read may hold at once; a request
	// that does not fit gets 429 unread. Default 48 MiB: six bodies of 3 MiB.
	BodyMemory int64
	// SmallBodyReserve (default 8 MiB) is for bodies of at most SmallBody
	// (256 KiB), so ordinary reviews pass while large ones take BodyMemory.
	SmallBodyReserve int64
	SmallBody        int64
	// BodyReadTimeout bounds a body's arrival once it has memory.
	// Default 10s (the API server's default webhook timeout).
	BodyReadTimeout time.Duration
	// WriteTimeout bounds a request from its headers to the end of its
	// answer. Default 30s (the longest webhook timeout the API server allows).
	WriteTimeout time.Duration
	// MaxConns caps the open connections (default 1024), a quarter of them
	// the webhook listener's own so a flood on one port does not close the other.
	MaxConns int
	// Getenv reads ADMISSION_CONTROLLER_* overrides. Default os.LookupEnv.
	Getenv func(string) (string, bool)

	// AccessAuth lists how callers of /v1/access and /metrics
	// authenticate: AccessAuthKubernetes, AccessAuthClientCert (or both),
	// AccessAuthAuto or AccessAuthNone alone. Default [AccessAuthAuto].
	AccessAuth []string
	// Kubeconfig holds the cluster credentials. Default "": the pod's
	// service account ($KUBECONFIG is not read).
	Kubeconfig string
	// ClientCAFile is the PEM bundle of the CAs of callers' client
	// certificates (user: the CN, groups: the organizations). Default "": none.
	ClientCAFile string
	// AggregatedAPI serves /v1/access as access.usher.io/v1alpha1 accessreviews
	// through kube-apiserver's aggregation layer (docs/kubectl-usher.md).
	AggregatedAPI bool
	// PrivilegedGroups may ask about anyone and read /metrics without a
	// SubjectAccessReview. Default (nil) ["system:masters"]; empty: none.
	PrivilegedGroups []string
	// TokenReviewCache and SubjectAccessReviewCache tune the caches of the
	// API server's answers.
	TokenReviewCache         auth.TokenOptions
	SubjectAccessReviewCache auth.SAROptions

	// ManageWebhooks keeps the webhooks registered as Webhooks says (webhooks.go).
	// WebhookOwner, when set, is the ClusterRole that owns them, so that
	// deleting it (helm uninstall) deletes them.
	ManageWebhooks bool
	Webhooks       admission.Install
	WebhookOwner   string
	// NativeFloor, with ManageWebhooks, also keeps the native floor (usher
	// native) applied as NAME-floor, bound to the webhooks' namespaces.
	NativeFloor bool
}

func (o Options) withDefaults() Options {
	o.Addr = cmp.Or(o.Addr, "127.0.0.1:8443")
	o.Logger = cmp.Or(o.Logger, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	defaults.Positive(&o.ReloadInterval, 2*time.Second)
	defaults.Positive(&o.ShutdownTimeout, 10*time.Second)
	defaults.Positive(&o.MaxReviewBody, admission.DefaultMaxBodyBytes)
	defaults.Positive(&o.MaxGroups, admission.DefaultMaxGroups)
	defaults.Positive(&o.BodyMemory, 48<<20)
	defaults.Positive(&o.SmallBodyReserve, 8<<20)
	defaults.Positive(&o.SmallBody, 256<<10)
	defaults.Positive(&o.BodyReadTimeout, 10*time.Second)
	defaults.Positive(&o.WriteTimeout, 30*time.Second)
	defaults.Positive(&o.MaxConns, 1024)
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	o.WebhookAuth = cmp.Or(o.WebhookAuth, WebhookAuthClientCert)
	if o.WebhookClientCNs == nil {
		o.WebhookClientCNs = []string{"kube-apiserver"}
	}
	return o
}

// Server is a running or ready-to-run usher service.
type Server struct {
	opts        Options
	log         *slog.Logger
	serving     *serving.Store
	admission   *admission.Handler
	metrics     *metrics
	registry    *prometheus.Registry
	tlsConfig   *tls.Config
	access      accessAuth
	webhook     webhookAuth
	kube        *cluster.Client // nil with kubeErr when the credentials did not load
	kubeErr     error
	parents     *cluster.Parents // with kube; its informers stop with stopParents
	stopParents context.CancelFunc
	cm          *cmSource     // with Options.ConfigMaps
	events      *denialEvents // nil when off
	configInfo  *prometheus.GaugeVec
	CAPEM       []byte // the certificate of a self-signed server, else nil

	reloadMu            sync.Mutex
	lastSum             [32]byte
	src                 configSource
	status              atomic.Pointer[reloadStatus]
	addr                atomic.Value // string, once listening
	bodies              bodyBudgets
	conns, webhookConns connLimiter         // of Addr and WebhookAddr
	parsing             *semaphore.Weighted // one /validate-config parse at a time
	// webhookKick asks the webhook reconciler to apply again; webhookRV
	// is what it applied last.
	webhookKick chan struct{}
	webhookRV   string
	// failOpen: delegatedAdministration enforce only warns (checkRegistration).
	failOpen atomic.Bool
}

type reloadStatus struct {
	loadedAt     time.Time
	generation   string    // the source (with resourceVersions) and sha256
	failedAt     time.Time // of the last reload, when refused
	failedGen    string
	upgrade      int // warnings about what a later release refuses
	missingGroup string
}

// New loads the configuration and prepares the service.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	s := &Server{opts: opts, log: opts.Logger, registry: prometheus.NewRegistry(), parsing: semaphore.NewWeighted(1), webhookKick: make(chan struct{}, 1)}
	if opts.AuditDropped != nil {
		promauto.With(s.registry).NewCounterFunc(prometheus.CounterOpts{Name: "usher_audit_records_dropped_total",
			Help: "Audit records dropped because the audit sink did not take them (8 MiB were waiting)."},
			func() float64 { return float64(opts.AuditDropped()) })
	}
	s.bodies.shared.limit, s.bodies.small.limit, s.bodies.smallBody = opts.BodyMemory, opts.SmallBodyReserve, opts.SmallBody
	// Loaded once; each user says what it does without them.
	s.kube, s.kubeErr = cluster.Load(opts.Kubeconfig)
	if opts.NativeFloor && !opts.ManageWebhooks {
		return nil, errors.New("--manage-native-floor needs --manage-webhooks")
	}
	if opts.ManageWebhooks && s.kubeErr != nil {
		return nil, fmt.Errorf("--manage-webhooks needs cluster credentials: %w", s.kubeErr)
	}
	switch {
	case len(opts.ConfigMaps) > 0 && opts.ConfigPath != "":
		return nil, errors.New("give --config or --config-map, not both")
	case len(opts.ConfigMaps) > 0:
		cm, err := newCMSource(opts.ConfigMaps, s.kube, s.kubeErr)
		if err != nil {
			return nil, err
		}
		s.cm, s.src = cm, cm
	default:
		s.src = fileSource(opts.ConfigPath)
	}
	snap, err := s.src.read(opts.Getenv)
	var cfg *config.Config
	if err == nil {
		cfg, err = snap.load()
	}
	if err != nil {
		return nil, err
	}
	s.lastSum = snap.sum
	s.logWarnings(cfg)
	if s.serving, err = serving.New(cfg, s.log); err != nil {
		return nil, err
	}
	s.checkRegistration(cfg)
	s.metrics = newMetrics(s.registry, s.serving)
	reg := promauto.With(s.registry)
	s.configInfo = reg.NewGaugeVec(prometheus.GaugeOpts{Name: "usher_config_info", Help: "The configuration in service (value 1): " +
		"where it was read (source: a file or configmap/NS/NAME@resourceVersion, comma separated) and the sha256 of its content (12 hex digits)."},
		[]string{"source", "sha256"})
	reg.NewGaugeFunc(prometheus.GaugeOpts{Name: "usher_config_upgrade_warnings",
		Help: "Warnings about what a later release refuses (docs/upgrade.md) in the configuration in service."},
		func() float64 { return float64(s.status.Load().upgrade) })
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
		admission.WithAudit(s.auditReview),
		admission.WithMaxBodyBytes(opts.MaxReviewBody),
		admission.WithCaller(callerOf),
		admission.WithMaxGroups(opts.MaxGroups, func(source string) { s.metrics.groupsOver.WithLabelValues(source).Inc() }),
	}
	if s.kube != nil {
		ctx, stop := context.WithCancel(context.Background())
		if s.parents, err = s.kube.NewParents(ctx); err != nil {
			stop()
			return nil, err
		}
		s.stopParents = stop
		hopts = append(hopts, admission.WithOwnerLookup(s.kube.Get), admission.WithParentLookup(s.parents.Get),
			admission.WithParentQueueLookup(s.parents.ParentQueue), admission.WithClusterQueueLookup(s.parents.ClusterQueue))
	}
	s.admission = admission.NewHandler(s.serving.Admission, hopts...)
	s.setGeneration(snap.gen, s.lastSum, cfg)
	if err := s.setupAccessAuth(); err != nil {
		return nil, err
	}
	if err := s.setupWebhookAuth(); err != nil {
		return nil, err
	}
	if err := s.setupTLS(); err != nil {
		return nil, err
	}
	if s.access.clientCerts || s.access.proxied || s.webhook.ca != nil {
		// Verified by the handlers: each path has CAs of its own.
		s.tlsConfig.ClientAuth = tls.RequestClientCert
	}
	return s, nil
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
	promauto.With(s.registry).NewGaugeFunc(prometheus.GaugeOpts{Name: "usher_tls_certificate_expiry_timestamp_seconds",
		Help: "When the serving certificate expires (its notAfter), read when scraped."}, func() float64 {
		if c, _ := s.tlsConfig.GetCertificate(nil); c.Leaf != nil {
			return float64(c.Leaf.NotAfter.Unix())
		}
		return 0
	})
	return nil
}

// Addr returns the address the server listens on, once Run has started.
func (s *Server) Addr() string {
	a, _ := s.addr.Load().(string)
	return a
}

// Handler returns the HTTP routes of Addr, without TLS (for tests and
// embedding): with a webhook listener, all but the webhook paths.
func (s *Server) Handler() http.Handler { return s.routes(!s.webhookListener(), true) }

// webhookListener says whether the webhook paths have their own listener.
func (s *Server) webhookListener() bool {
	return s.opts.WebhookAddr != "" || s.opts.WebhookListener != nil
}

// routes returns /healthz and /readyz, with the webhook paths and the
// others (/v1/access, /metrics) as asked.
func (s *Server) routes(webhooks, others bool) *http.ServeMux {
	mux := http.NewServeMux()
	if others {
		access := s.instrument("access", withRequestID(s.limitBody("access", maxAccessBody, http.HandlerFunc(s.serveAccess))))
		mux.Handle("/v1/access", access)
		if s.opts.AggregatedAPI {
			mux.Handle("/apis/"+AggregatedGroupVersion+"/accessreviews", access)
			mux.Handle("GET /apis/"+AggregatedGroupVersion, discovery)
			mux.Handle("GET /apis/"+aggregatedGroup, discovery)
		}
		metrics := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry})
		mux.Handle("/metrics", withRequestID(s.guardMetrics(metrics)))
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
	s.addr.Store(ln.Addr().String())
	hs := &http.Server{
		Handler:           handler,
		ConnContext:       s.connContext,
		TLSConfig:         s.tlsConfig,
		ReadHeaderTimeout: 5 * time.Second,
		// A backstop behind BodyReadTimeout.
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   s.opts.WriteTimeout,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		// The flow-control windows are memory the body budget does not see.
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          100,
			MaxReceiveBufferPerStream:     256 << 10,
			MaxReceiveBufferPerConnection: 512 << 10,
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.log.Info("usher serving", "addr", s.Addr(), "webhookAddr", webhookAddr, "webhookAuth", s.webhook.mode, "config", s.src.name())
	if s.stopParents != nil {
		defer s.stopParents()
	}
	// The reloads and the webhook reconciler stop with rctx.
	var wg sync.WaitGroup
	defer wg.Wait()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Go(func() {
		switch {
		case s.cm != nil:
			// Each replica says on the ConfigMap what it serves.
			objs := s.cm.snapshot()
			_, _, ref, gen := s.cm.merged(objs, nil)
			s.event(ref, s.cm.object(objs, ref), "Normal", "ConfigLoaded",
				fmt.Sprintf("usher replica %s serves %s (sha256 %s)", s.cm.instance, gen, shortSum(s.lastSum)))
			s.cm.run(rctx, func() { _, _ = s.Reload() })
		case s.opts.ConfigPath != "":
			s.watch(rctx)
		}
	})
	errc := make(chan error, len(lns))
	for _, l := range lns {
		go func() { errc <- hs.ServeTLS(l, "", "") }()
	}
	if s.opts.ManageWebhooks {
		// Ready: a good configuration in service, the listeners up.
		wg.Go(func() { s.manageWebhooks(rctx) })
	}
	select {
	case err := <-errc:
		hs.Close()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "timeout", s.opts.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	err = hs.Shutdown(sctx)
	stop()
	wg.Wait()
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

// listenAddr listens on HOST:PORT, or takes over the listening socket
// passed as file descriptor N for fd:N (systemd passes fd:3).
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

// apply swaps cfg in when err is nil, or records the refusal of gen.
func (s *Server) apply(cfg *config.Config, err error, gen string, sum [32]byte) (bool, error) {
	old := s.serving.Current().Config()
	if err == nil {
		err = s.serving.Swap(cfg) // one atomic swap: policy, resolvers and admission
	}
	if err != nil {
		s.metrics.reloads.WithLabelValues("failure").Inc()
		st := *s.status.Load()
		st.failedAt, st.failedGen = time.Now(), gen
		s.status.Store(&st)
		s.log.Error("configuration refused; the previous configuration keeps serving", "config", s.src.name(), "refused", gen, "serving", st.generation, "err", err)
		return false, err
	}
	s.metrics.reloads.WithLabelValues("success").Inc()
	s.metrics.lastReload.SetToCurrentTime()
	s.setGeneration(gen, sum, cfg)
	s.checkRegistration(cfg)
	s.kickWebhooks()
	// Off the request path: the new generation already serves.
	change := impact.Summarize(old, cfg, 5)
	s.metrics.accessChanges.WithLabelValues("gained").Add(float64(change.Gained))
	s.metrics.accessChanges.WithLabelValues("lost").Add(float64(change.Lost))
	s.metrics.accessChanges.WithLabelValues("placement").Add(float64(change.Placements))
	s.log.Info("configuration reloaded", "config", s.src.name(), "generation", gen, "sha256", shortSum(sum), "access", change)
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
	if s.parents != nil && cfg.Admission != nil {
		for _, p := range cfg.Admission.Propagators {
			s.parents.Watch(p.Parents...)
		}
	}
	s.configInfo.Reset()
	s.configInfo.WithLabelValues(gen, shortSum(sum)).Set(1)
}

// logWarnings logs the lint warnings of a configuration put in service.
func (s *Server) logWarnings(cfg *config.Config) {
	for _, w := range cfg.Warnings {
		s.log.Warn("configuration warning", "warning", w.String())
	}
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	st := s.status.Load()
	fmt.Fprintf(w, "ready: serving the configuration loaded at %s\n", st.loadedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "generation: %s\n", st.generation)
	fmt.Fprintf(w, "webhook callers: %s (--webhook-auth)\n", s.webhook.mode)
	if !st.failedAt.IsZero() {
		// Anyone may read /readyz: the reason, which can name files and
		// DNs, is only in the log and the ConfigMap's Event.
		where, refused := "the log", ""
		if s.cm != nil {
			where, refused = "the Events of the ConfigMap (kubectl describe) or the log", " ("+st.failedGen+" refused)"
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
