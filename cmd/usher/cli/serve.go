package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/server"
)

const serveHelp = `Serves, over TLS:
  POST /v1/access   the decision of "usher check", JSON in and out
  POST /mutate      admission webhook: stamps the submitter's identity
  POST /validate    admission webhook: refuses forged or changed identities
  GET  /healthz, /readyz, /metrics (Prometheus)
--webhook-addr serves the webhooks (/mutate, /validate, /validate-config)
apart, so that a NetworkPolicy can admit only the API server to them.

The configuration (--config) is watched and reloaded when it changes; an
invalid change is refused and the last good configuration keeps serving.
With --config-map instead, usher reads the ConfigMap through the Kubernetes
API (--kubeconfig, or the pod's service account) and watches it: a change is
in service within about a second on every replica. POST /validate-config,
the validating webhook of that ConfigMap, refuses an invalid change at
kubectl apply time with usher lint's FILE:LINE:COL diagnostics
(docs/configuration-sources.md; --validate-config-warnings).
ADMISSION_CONTROLLER_* environment variables override the file, exactly as
in every other command (one set to "" overrides too: an empty pattern list
trusts nobody); "usher lint" reports what serve would read.

With --manage-webhooks, usher registers its own webhooks (docs/install.md):
until a replica serves a good configuration nothing is registered, and pods
are admitted without usher; they are never deleted, so an unhealthy usher
never opens the gate.

Without --tls-cert/--tls-key a self-signed certificate is generated (for
local use; its PEM is written to --ca-out when given).

Who may ask (--access-auth). /v1/access and /metrics answer authenticated
callers only:
  kubernetes    a bearer token (Authorization: Bearer TOKEN) checked with a
                TokenReview; questions authorized with SubjectAccessReviews.
                Cluster credentials: --kubeconfig FILE, or the pod's service
                account ($KUBECONFIG is not read).
  client-cert   a TLS client certificate issued by the CA in --client-ca;
                user = its common name (CN), groups = its organizations (O).
  auto          (default) kubernetes when cluster credentials are found,
                client-cert when --client-ca is given. With neither, every
                caller gets 401 and a message saying how to turn it on.
  none          no authentication: anyone who reaches usher gets any user's
                decisions and groups. For local use and tests; logged loudly.
kubernetes and client-cert may be combined: --access-auth kubernetes,client-cert.
A caller may ask about itself (its own user name, and only groups it
authenticated with). Asking about another user or other groups needs RBAC
verb create on resource accessreviews in API group usher.io; /metrics needs
verb get on the non-resource URL /metrics. Members of
--access-privileged-groups may do both without a SubjectAccessReview.

Who may call the webhooks (--webhook-auth). kube-apiserver presents a client
certificate to a webhook when its AdmissionConfiguration's kubeConfigFile
names one for the webhook's host (docs/security.md):
  client-cert   (default) only a caller whose certificate chains to
                --webhook-client-ca (never --client-ca) and whose CN is one of
                --webhook-client-cn; any other gets 401 before its body is
                read, costing no Event, file read or directory lookup.
  report        every caller is served; each is verified as client-cert
                would and counted (usher_webhook_callers_total). For a
                rollout, and where the API server cannot present a
                certificate (EKS, GKE and AKS cannot today).
  none          no check: anyone who reaches usher may send reviews. For
                local use and tests; logged loudly.
/readyz and usher_webhook_auth_mode say which mode is in use; every audit
record says whether its caller was verified, and unverified denials have a
smaller share of the denial Events.

A request whose body does not fit --body-memory is refused with 429 and
Retry-After before it is read. With the default --memory-limit usher stays
under 160 MiB in a 256Mi container (docs/limits.md).

Examples:
  usher serve --webhook-auth none               # embedded default, https://127.0.0.1:8443, local use
  usher serve --config queues.yaml --addr :8443 --tls-cert tls.crt --tls-key tls.key
  usher serve --config-map usher-system/usher-config   # watched through the API
  usher serve --config-map yunikorn/yunikorn-defaults,yunikorn/yunikorn-configs
  usher serve --kubeconfig usher.kubeconfig     # callers authenticate with their Kubernetes tokens
  usher serve --access-auth none --webhook-auth none   # local use: no authentication (logged loudly)
  usher serve --webhook-addr :9443 --webhook-client-ca apiserver-client-ca.crt   # webhooks on a port of their own
  usher serve --audit-log /var/log/usher/audit.log   # audit records apart from the logs
`

type serveFlags struct {
	opts                                                         server.Options
	logFormat, logLevel, caOut, accessAuth, privileged, auditLog string
	noAudit                                                      bool
	authCacheTTL                                                 time.Duration
	memLimit, bodyMemory                                         string
	webhooks                                                     func() error
	configWarnings                                               string // --validate-config-warnings
}

func newServeCommand(env *Env) *cobra.Command {
	f := &serveFlags{}
	opts := &f.opts
	cmd, fs := newCommand(groupServe, "serve [--config FILE | --config-map NAMESPACE/NAME] [--addr HOST:PORT] [--tls-cert FILE --tls-key FILE] [flags]",
		"run the decision API and the Kubernetes admission webhook", serveHelp)
	fs.StringVar(&opts.ConfigPath, "config", "", configFlagHelp)
	fs.Func("config-map", "read and watch the configuration in the ConfigMap `NAMESPACE/NAME` through the Kubernetes API "+
		"(repeatable or comma separated: merged as YuniKorn merges yunikorn-defaults and yunikorn-configs); instead of --config", func(v string) error {
		for _, part := range splitList(v) {
			ref, err := server.ParseConfigMapRef(part)
			if err != nil {
				return err
			}
			opts.ConfigMaps = append(opts.ConfigMaps, ref)
		}
		return nil
	})
	fs.StringVar(&opts.Addr, "addr", "127.0.0.1:8443", "listen `HOST:PORT` (use :8443 inside a cluster), or fd:N to serve on the listening socket "+
		"the parent process passed as file descriptor N (systemd's first socket is fd:3)")
	fs.StringVar(&opts.WebhookAddr, "webhook-addr", "", "serve the webhooks (and /healthz, /readyz) on `HOST:PORT` instead of --addr, or fd:N as --addr takes it (default: on --addr)")
	fs.StringVar(&opts.WebhookAuth, "webhook-auth", server.WebhookAuthClientCert, "`MODE` of the webhooks' callers: client-cert (only the API server's certificate), report (all, counted) or none")
	fs.StringVar(&opts.WebhookClientCAFile, "webhook-client-ca", "", "PEM `FILE` of the CA of the client certificate the API server presents to the webhooks (required by --webhook-auth client-cert)")
	fs.StringSliceVar(&opts.WebhookClientCNs, "webhook-client-cn", []string{"kube-apiserver"}, "common `NAMES` (comma separated) the webhooks' client certificate may have")
	fs.StringVar(&opts.TLSCertFile, "tls-cert", "", "serving certificate `FILE` (PEM), re-read when it changes")
	fs.StringVar(&opts.TLSKeyFile, "tls-key", "", "private key `FILE` (PEM)")
	fs.StringVar(&f.caOut, "ca-out", "", "write the self-signed certificate's PEM to `FILE`")
	fs.BoolVar(&f.noAudit, "no-audit", false, "do not write an audit record per decision")
	fs.BoolVar(&opts.NoDenialEvents, "no-denial-events", false, "do not record a Kubernetes Event on the object for each admission denial "+
		"(docs/audit.md; by default they are recorded whenever usher has cluster credentials)")
	fs.StringVar(&f.auditLog, "audit-log", "", "write audit records to `FILE` (appended to, created 0600) or to stdout (-), "+
		"apart from the operational logs and whatever --log-level says (default: in the log stream on stderr)")
	fs.StringVar(&f.configWarnings, "validate-config-warnings", "admit", "what /validate-config does with a configuration that has warnings: "+
		"admit (they are returned to kubectl) or refuse (as with errors; docs/configuration-sources.md)")
	fs.DurationVar(&opts.ReloadInterval, "reload-interval", 2*time.Second, "how often to check the configuration for changes")
	fs.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long to let requests in flight finish on shutdown")
	fs.StringVar(&f.accessAuth, "access-auth", server.AccessAuthAuto, "`MODES` callers of /v1/access and /metrics authenticate with: kubernetes, client-cert (or both, comma separated), auto or none")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` whose credentials send TokenReviews and SubjectAccessReviews and read --config-map (default: the pod's service account when running in a pod)")
	fs.StringVar(&opts.ClientCAFile, "client-ca", "", "PEM `FILE` of the CA whose client certificates authenticate callers (default: client certificates are not accepted)")
	fs.BoolVar(&opts.AggregatedAPI, "aggregated-api", false, "also serve /v1/access as access.usher.io/v1alpha1 accessreviews through the API server's "+
		"aggregation layer (an APIService; the front proxy's CA is read from kube-system/extension-apiserver-authentication), so that "+
		"kubectl usher needs no flags (docs/kubectl-usher.md)")
	fs.StringVar(&f.privileged, "access-privileged-groups", "system:masters", "comma separated `GROUPS` whose members may ask about anyone and read /metrics without a SubjectAccessReview (\"\" for none)")
	fs.Func("token-audiences", "comma separated `AUDIENCES` usher's TokenReviews ask for; a bearer token is accepted only when the API server "+
		"says it was issued for one of them (default: none, the API server's own, which kubeconfig credentials are issued for)", func(v string) error {
		opts.TokenReviewCache.Audiences = append(opts.TokenReviewCache.Audiences, splitList(v)...)
		return nil
	})
	fs.DurationVar(&f.authCacheTTL, "access-auth-cache-ttl", 10*time.Second, "how long answers of TokenReviews and SubjectAccessReviews are cached")
	fs.StringVar(&f.logFormat, "log-format", "json", "log `FORMAT`: json or text")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `LEVEL`: debug, info, warn or error")
	fs.StringVar(&f.memLimit, "memory-limit", memoryLimitAuto, "soft memory `LIMIT` of the Go runtime: auto (half the container's memory limit, "+
		"128Mi outside a container with one), a Kubernetes quantity, or 0 for none; GOMEMLIMIT in the environment wins")
	fs.StringVar(&f.bodyMemory, "body-memory", "48Mi", "memory the request bodies in flight may hold at once (a Kubernetes `QUANTITY`); "+
		"beyond it requests are refused with 429")
	fs.DurationVar(&opts.BodyReadTimeout, "body-read-timeout", 10*time.Second, "how long a request body may take to arrive")
	fs.IntVar(&opts.MaxGroups, "max-groups", admission.DefaultMaxGroups, "the most `GROUPS` a review's requester, a user.info annotation it supplies "+
		"or a /v1/access request may name; more are refused and counted in usher_admission_groups_over_limit_total")
	fs.BoolVar(&opts.ManageWebhooks, "manage-webhooks", false, "register the webhooks (the objects usher webhook prints for the configuration in service and the flags below) "+
		"once this replica serves, as the leader of the Lease NAME-webhooks in --namespace, and keep them registered: re-applied on every reload, "+
		"when someone changes or deletes them, and every minute; never deleted (default: you register them)")
	fs.BoolVar(&opts.NativeFloor, "manage-native-floor", false, "with --manage-webhooks, also keep the native floor applied (the admission policies usher native prints, "+
		"named NAME-floor, bound to the namespaces the webhooks select): the API server then stamps and guards user.info itself while no replica answers (docs/native.md)")
	fs.StringVar(&opts.WebhookOwner, "webhook-owner", "", "ClusterRole `NAME` that owns the registered webhooks, so that deleting it (helm uninstall) deletes them")
	f.webhooks = webhookFlags(fs, &opts.Webhooks)
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runServe(ctx, env, f) })
}

func runServe(ctx context.Context, env *Env, f *serveFlags) int {
	if err := f.webhooks(); err != nil {
		return env.fail("%v", err)
	}
	opts := f.opts
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return env.fail("--log-level: %v", err)
	}
	newHandler, ok := map[string]func(io.Writer, *slog.HandlerOptions) slog.Handler{
		"json": func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) },
		"text": func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) },
	}[f.logFormat]
	if !ok {
		return env.fail("--log-format %q: want json or text", f.logFormat)
	}
	// Logs and audit records are written in batches (at least every 100ms).
	logs := server.NewBufferedWriter(env.Stderr, 100*time.Millisecond)
	defer logs.Close()
	// From here on errors go through the same writer as the logs, so the
	// two never write stderr at once.
	e := *env
	e.Stderr = logs
	env = &e
	opts.Logger = slog.New(newHandler(logs, &slog.HandlerOptions{Level: level}))
	opts.AuditDropped = logs.Dropped
	if f.auditLog != "" && !f.noAudit {
		var w io.Writer = env.Stdout
		if f.auditLog != "-" {
			file, err := os.OpenFile(f.auditLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				return env.fail("--audit-log: %v", err)
			}
			defer file.Close()
			w = file
		}
		// Audit records have their own batches, flushed before the file is
		// closed (defers run last in, first out), at any --log-level.
		audit := server.NewBufferedWriter(w, 100*time.Millisecond)
		defer audit.Close()
		opts.Logger = slog.New(server.SplitAudit(opts.Logger.Handler(), newHandler(audit, &slog.HandlerOptions{Level: slog.LevelInfo})))
		opts.AuditDropped = audit.Dropped
	}
	opts.NoAudit = f.noAudit
	opts.AccessAuth = splitList(f.accessAuth)
	opts.PrivilegedGroups = splitList(f.privileged)
	if opts.PrivilegedGroups == nil {
		opts.PrivilegedGroups = []string{}
	}
	if f.authCacheTTL <= 0 {
		return env.fail("--access-auth-cache-ttl %v: want a positive duration", f.authCacheTTL)
	}
	opts.TokenReviewCache.TTL, opts.SubjectAccessReviewCache.TTL = f.authCacheTTL, f.authCacheTTL
	opts.Getenv = env.LookupEnv
	bm, err := resource.ParseQuantity(f.bodyMemory)
	if err != nil || bm.Sign() <= 0 {
		return env.fail("--body-memory %q: want a quantity such as 48Mi", f.bodyMemory)
	}
	opts.BodyMemory = bm.Value()
	if f.configWarnings != "admit" && f.configWarnings != "refuse" {
		return env.fail("--validate-config-warnings %q: want admit or refuse", f.configWarnings)
	}
	opts.RefuseConfigWarnings = f.configWarnings == "refuse"
	if opts.MaxGroups <= 0 {
		return env.fail("--max-groups %d: want a positive number", opts.MaxGroups)
	}
	if err := setMemoryLimit(f.memLimit, env.LookupEnv, opts.Logger); err != nil {
		return env.fail("%v", err)
	}
	if opts.ConfigPath == "" && len(opts.ConfigMaps) == 0 {
		// One line on stderr, in the log's format.
		opts.Logger.Warn(defaultNote)
	}
	srv, err := server.New(opts)
	if err != nil {
		return env.fail("%v", err)
	}
	if f.caOut != "" && srv.CAPEM != nil {
		if err := os.WriteFile(f.caOut, srv.CAPEM, 0o644); err != nil {
			return env.fail("--ca-out: %v", err)
		}
	}
	if err := srv.Run(ctx); err != nil {
		// Not listening (--addr, --webhook-addr) is a startup error.
		return env.fail("%v", err)
	}
	return ExitOK
}

// splitList splits a comma separated flag value, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
