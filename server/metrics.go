package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/serving"
)

type metrics struct {
	decisions       *prometheus.CounterVec
	decisionLatency prometheus.Histogram
	reviews         *prometheus.CounterVec
	denials         *prometheus.CounterVec
	requests        *prometheus.HistogramVec
	reloads         *prometheus.CounterVec
	accessChanges   *prometheus.CounterVec
	lastReload      prometheus.Gauge
	panics          *prometheus.CounterVec
	accessAuth      *prometheus.CounterVec
	shed            *prometheus.CounterVec
	groupsOver      *prometheus.CounterVec
	tokenReviews    *prometheus.CounterVec
	connsRefused    prometheus.Counter
	webhookCallers  *prometheus.CounterVec
	webhookMode     *prometheus.GaugeVec
	degradedStamps  prometheus.Counter
	unstamped       prometheus.Counter
}

func newMetrics(reg *prometheus.Registry, st *serving.Store) *metrics {
	f := promauto.With(reg)
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		decisions: counters("usher_decisions_total",
			"Access decisions of /v1/access by action and outcome (allowed, denied, error).", "action", "outcome"),
		decisionLatency: f.NewHistogram(prometheus.HistogramOpts{
			Name: "usher_decision_duration_seconds", Help: "Time to decide an access request, group resolution included.",
			Buckets: []float64{1e-6, 5e-6, 25e-6, 1e-4, 5e-4, 2.5e-3, 1e-2, 5e-2, 0.25, 1},
		}),
		reviews: counters("usher_admission_reviews_total",
			"Admission reviews by object kind, operation and outcome (allowed, patched, denied).", "kind", "operation", "outcome"),
		denials: counters("usher_admission_denials_total",
			"Denied reviews by reason (the denial's cause) and warned (true: warn mode admitted it with a warning).", "reason", "warned"),
		requests: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "usher_http_request_duration_seconds", Help: "Latency of HTTP requests by handler and status code.",
			Buckets: []float64{25e-6, 1e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 5e-2, 0.25, 1},
		}, []string{"handler", "code"}),
		accessChanges: counters("usher_reload_access_changes_total",
			"Rights gained and lost by users and groups named in the configuration, and subjects whose request naming no queue "+
				"is placed differently, summed over reloads, by change (gained, lost, placement).", "change"),
		reloads: counters("usher_config_reloads_total", "Configuration reloads by result (success, failure).", "result"),
		lastReload: f.NewGauge(prometheus.GaugeOpts{
			Name: "usher_config_last_reload_success_timestamp_seconds", Help: "When the configuration in service was loaded.",
		}),
		panics: counters("usher_panics_recovered_total", "Panics recovered at the HTTP edge, by handler.", "handler"),
		accessAuth: counters("usher_access_auth_total", "Authentication and authorization of /v1/access and /metrics "+
			"by endpoint and result (self, allowed, unauthenticated, forbidden, error).", "endpoint", "result"),
		shed: counters("usher_shed_requests_total", "Requests refused with 429 to keep memory bounded, "+
			"by handler (access, mutate, validate, validate-config) and reason (memory: no room for the body).", "handler", "reason"),
		groupsOver: counters("usher_admission_groups_over_limit_total", "Requests refused for naming more groups than MaxGroups, by source "+
			"(request: a review's request.userInfo, annotation: a user.info a requester supplied, access: a /v1/access request).", "source"),
		tokenReviews: counters("usher_tokenreviews_total", "Bearer tokens not in the cache, by result: authenticated, "+
			"unauthenticated, error (the TokenReview failed), ratelimited (not reviewed: too many new tokens at once).", "result"),
		webhookCallers: counters("usher_webhook_callers_total", "Requests to the webhook paths by handler (mutate, validate, "+
			"validate-config) and caller: verified (the API server's client certificate), unverified (served: --webhook-auth report), "+
			"refused (401: client-cert), unchecked (none).", "handler", "result"),
		webhookMode: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "usher_webhook_auth_mode", Help: "1, labelled with the --webhook-auth mode in use (client-cert, report, none).",
		}, []string{"mode"}),
		connsRefused: counter("usher_shed_connections_total", "Connections closed as soon as accepted because MaxConns were open."),
		unstamped: counter("usher_unstamped_parents_total", "Objects propagators created from a parent without user.info, "+
			"stamped with the propagator's identity (unstampedParents: propagatorIdentity); the audit record names the parent."),
		degradedStamps: counter("usher_admission_degraded_stamps_total", "Objects stamped with the API server's groups only because "+
			"the directory did not answer (stampGroupsOnError: given); the stamp is marked usher.io/directory-groups: unavailable."),
	}
	m.lastReload.SetToCurrentTime()
	for _, h := range []string{"access", "mutate", "validate", "validate-config"} {
		m.shed.WithLabelValues(h, "memory")
		m.panics.WithLabelValues(h)
	}
	for _, c := range admission.Causes() {
		m.denials.WithLabelValues(string(c), "false")
		m.denials.WithLabelValues(string(c), "true")
	}
	for vec, values := range map[*prometheus.CounterVec][]string{m.reloads: {"success", "failure"},
		m.groupsOver: {"request", "annotation", "access"}, m.tokenReviews: {"authenticated", "unauthenticated", "error", "ratelimited"}} {
		for _, v := range values {
			vec.WithLabelValues(v)
		}
	}
	reg.MustRegister(cacheCollector{st}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// cacheCollector exports the group caches' counters, read when scraped.
type cacheCollector struct{ st *serving.Store }

func cacheDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("usher_group_cache_"+name, help, []string{"partition"}, nil)
}

var (
	descHits      = cacheDesc("hits_total", "Group lookups answered from the cache, negative answers included.")
	descMisses    = cacheDesc("misses_total", "Group lookups that had to ask the resolver.")
	descStale     = cacheDesc("stale_answers_total", "Expired answers served while the resolver was failing.")
	descFailures  = cacheDesc("resolver_failures_total", "Resolver calls that failed.")
	descCalls     = cacheDesc("resolver_calls_total", "Resolver calls made.")
	descCallTime  = cacheDesc("resolver_seconds_total", "Time spent in resolver calls.")
	descEvictions = cacheDesc("evictions_total", "Entries evicted to respect the size bound.")
)

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHits, descMisses, descStale, descFailures, descCalls, descCallTime, descEvictions} {
		ch <- d
	}
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for part, st := range c.st.Current().CacheStats() {
		for d, v := range map[*prometheus.Desc]float64{
			descHits: float64(st.Hits + st.NegativeHits), descMisses: float64(st.Misses), descStale: float64(st.StaleHits),
			descFailures: float64(st.Failures), descCalls: float64(st.Calls), descCallTime: st.CallTime.Seconds(),
			descEvictions: float64(st.Evictions),
		} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, part)
		}
	}
}

// instrument measures a handler's latency and is the one place a panic
// is recovered: answered with a 500, or a denial of a review whose UID is known.
func (s *Server) instrument(name string, h http.Handler) http.Handler {
	latency := s.metrics.requests.MustCurryWith(prometheus.Labels{"handler": name})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			if v := recover(); v != nil {
				s.metrics.panics.WithLabelValues(name).Inc()
				s.log.Error("panic recovered", "handler", name, "uid", clip.String(rw.uid, clip.Name), "panic", clip.String(fmt.Sprint(v), clip.Text))
				switch {
				case rw.wrote:
				case rw.uid != "":
					admission.WriteFailure(rw, rw.uid, v)
				default:
					badRequest(rw, http.StatusInternalServerError, "internal error")
				}
			}
			latency.WithLabelValues(statusText(rw.code)).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(rw, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	uid   string // the review's, once decoded
}

// RecordUID implements admission.UIDRecorder.
func (w *statusWriter) RecordUID(uid string) { w.uid = uid }

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

var statusTexts = map[int]string{200: "200", 400: "400", 401: "401", 403: "403", 405: "405", 413: "413", 415: "415", 429: "429", 500: "500", 503: "503"}

func statusText(code int) string {
	if s, ok := statusTexts[code]; ok {
		return s
	}
	return "other"
}
