//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/usherhq/usher/hack/slapdtest"
)

// LatencyEnv switches TestUsherLatency on: it is a measurement of several
// minutes, not a check, so the suite skips it unless LatencyEnv=1
// (hack/latency.sh sets it).
const LatencyEnv = "USHER_E2E_LATENCY"

// The API server's histogram of the time each admission webhook call took,
// labelled name (the webhook's name), operation, rejected and type (admit
// for mutating, validating).
const apiserverWebhookHistogram = "apiserver_admission_webhook_admission_duration_seconds"

// How long requests waited for a seat in API Priority and Fairness (the
// API server's max-in-flight), labelled flow_schema, priority_level and
// execute.
const apfWaitHistogram = "apiserver_flowcontrol_request_wait_duration_seconds"

// usher's own histogram of its HTTP requests, labelled handler and code.
const usherRequestHistogram = "usher_http_request_duration_seconds"

// latencySettings are the knobs of TestUsherLatency, from the environment.
type latencySettings struct {
	rates            []int         // creates per second (USHER_E2E_LATENCY_RATES, default 50,200)
	kinds            []string      // pod, deployment (USHER_E2E_LATENCY_KINDS)
	warmup, duration time.Duration // per phase (USHER_E2E_LATENCY_WARMUP 5s, USHER_E2E_LATENCY_DURATION 20s)
	rounds           int           // USHER_E2E_LATENCY_ROUNDS, default 1
	modes            []string      // USHER_E2E_LATENCY_MODES: webhook, floor, both (default webhook), each against off
	out              string        // USHER_E2E_LATENCY_OUT: write the table there too
}

func latencySettingsFromEnv(t *testing.T) latencySettings {
	t.Helper()
	s := latencySettings{
		rates: []int{50, 200}, kinds: []string{"pod", "deployment"},
		warmup: 5 * time.Second, duration: 20 * time.Second, rounds: 1, modes: []string{"webhook"},
		out: os.Getenv(LatencyEnv + "_OUT"),
	}
	if v := os.Getenv(LatencyEnv + "_RATES"); v != "" {
		s.rates = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				t.Fatalf("%s_RATES=%q: %q is not a positive number", LatencyEnv, v, f)
			}
			s.rates = append(s.rates, n)
		}
	}
	if v := os.Getenv(LatencyEnv + "_KINDS"); v != "" {
		s.kinds = strings.Split(v, ",")
		for _, k := range s.kinds {
			if k != "pod" && k != "deployment" {
				t.Fatalf("%s_KINDS=%q: %q is neither pod nor deployment", LatencyEnv, v, k)
			}
		}
	}
	if v := os.Getenv(LatencyEnv + "_MODES"); v != "" {
		s.modes = strings.Split(v, ",")
		for _, m := range s.modes {
			if m != "webhook" && m != "floor" && m != "both" {
				t.Fatalf("%s_MODES=%q: %q is none of webhook, floor, both", LatencyEnv, v, m)
			}
		}
	}
	for name, d := range map[string]*time.Duration{"_WARMUP": &s.warmup, "_DURATION": &s.duration} {
		if v := os.Getenv(LatencyEnv + name); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x < 0 || (name == "_DURATION" && x < time.Second) {
				t.Fatalf("%s%s=%q: not a duration (the measured window is at least 1s)", LatencyEnv, name, v)
			}
			*d = x
		}
	}
	if v := os.Getenv(LatencyEnv + "_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s_ROUNDS=%q: not a positive number", LatencyEnv, v)
		}
		s.rounds = n
	}
	return s
}

// latencyCell accumulates one (kind, rate, with or without usher) cell of
// the table over the rounds.
type latencyCell struct {
	lat           []time.Duration // client-side latency of each measured create
	errs          int
	firstErr      error
	late          int           // creates sent more than 1ms after their slot
	sent          int           // measured creates
	span          time.Duration // time the measured creates took to send
	apiMutate     Histogram     // the API server's view of usher's /mutate calls
	apiValidate   Histogram     // … of /validate
	usherMutate   Histogram     // usher's own view of /mutate
	usherValidate Histogram
	scrapesFailed int       // windows left out of the histograms: a /metrics could not be read
	apfWait       Histogram // how long alice's requests waited in API Priority and Fairness queues
	// CPU time spent in the measured window, by process.
	cpu map[string]time.Duration
	// The API server's connections to usher at the start and at the end of
	// the measured windows, and how many of those at the start were still
	// there at the end (summed over rounds).
	connsStart, connsEnd, connsKept int
}

// cpuProcs are the processes whose CPU time a phase measures.
var cpuProcs = []string{"kube-apiserver", "etcd", "kube-controller-manager", "usher"}

func (c *latencyCell) add(o latencyCell) {
	c.lat = append(c.lat, o.lat...)
	c.errs += o.errs
	if c.firstErr == nil {
		c.firstErr = o.firstErr
	}
	c.late += o.late
	c.sent += o.sent
	c.span += o.span
	c.apiMutate = c.apiMutate.Add(o.apiMutate)
	c.apiValidate = c.apiValidate.Add(o.apiValidate)
	c.usherMutate = c.usherMutate.Add(o.usherMutate)
	c.usherValidate = c.usherValidate.Add(o.usherValidate)
	c.apfWait = c.apfWait.Add(o.apfWait)
	c.scrapesFailed += o.scrapesFailed
	if c.cpu == nil {
		c.cpu = map[string]time.Duration{}
	}
	for k, v := range o.cpu {
		c.cpu[k] += v
	}
	c.connsStart += o.connsStart
	c.connsEnd += o.connsEnd
	c.connsKept += o.connsKept
}

type latencyKey struct {
	kind string
	rate int
	mode string // off, webhook (usher's webhooks), floor (the policies of usher native), both
}

// callsWebhooks and usesFloor say what a mode installs for its namespace.
func callsWebhooks(mode string) bool { return mode == "webhook" || mode == "both" }
func usesFloor(mode string) bool     { return mode == "floor" || mode == "both" }

// TestUsherLatency measures what usher's webhooks add to pod and
// Deployment CREATE through the real kube-apiserver: alice creates objects
// at a fixed rate (open loop: each create leaves at its time slot whatever
// the earlier ones are doing) for warm-up + duration, once in a namespace
// usher's webhooks do not select and once in one they do (both made the
// same way; the only difference is the label the webhooks' namespace
// selector matches). The warm-up's creates are not counted. Around the
// measured window it scrapes the API server's /metrics (as admin) for
// apiserver_admission_webhook_admission_duration_seconds of usher's two
// webhooks, and usher's own /metrics for its request histogram, and
// reports p50/p99 of each from the buckets' deltas. Each phase's
// namespace is deleted (and waited for) before the next one starts.
//
// It prints a table (and writes it to USHER_E2E_LATENCY_OUT when set). It
// fails only when a create fails: the figures are for docs/benchmarks.md,
// not bars to pass.
func TestUsherLatency(t *testing.T) {
	if os.Getenv(LatencyEnv) != "1" {
		t.Skipf("a measurement of several minutes: set %s=1 (or run hack/latency.sh)", LatencyEnv)
	}
	s := latencySettingsFromEnv(t)
	ctx := ctxFor(t, time.Duration(s.rounds*len(s.kinds)*len(s.rates))*2*(s.warmup+s.duration+4*time.Minute)+5*time.Minute)

	config, merge := baseConfig, os.Getenv(LatencyEnv+"_GROUPS") == "merge"
	if merge {
		config = mergeConfig(t)
	}
	// --access-auth none: the test reads usher's /metrics without a token.
	e := startUsherWith(t, ctx, config, "--access-auth", "none")
	probe := e.namespace(ctx, "lat-probe")
	e.register(ctx, probe)
	if merge { // the directory's group is stamped, so it is asked
		p, err := client(t, Alice).CoreV1().Pods(probe).Create(ctx, Pod(probe, "merge-probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if info, _, err := UserInfo(p.Annotations); err != nil || !slices.Contains(info.Groups, "analysts") {
			t.Fatalf("groups: merge, yet alice's stamp %v lacks the directory's group analysts (%v)", info, err)
		}
	}
	if slices.ContainsFunc(s.modes, usesFloor) {
		// The floor of the same configuration, bound to the namespaces
		// labelled floorLabel=e.label.
		fp, err := cluster.NewNamespace(ctx, "lat-floor-probe", map[string]string{floorLabel: e.label})
		if err != nil {
			t.Fatal(err)
		}
		installFloor(t, ctx, baseConfig, e.label, fp)
	}

	// One client for every phase, its rate limiter off (client-go's
	// defaults, 5 QPS with bursts of 10, would be the bottleneck).
	rc, err := cluster.RESTConfig(Alice)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = -1, 0
	rc.UserAgent = "usher-e2e-latency"
	alice, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}

	load0 := loadAvg()
	start := time.Now()
	cells := map[latencyKey]*latencyCell{}
	for round := 0; round < s.rounds; round++ {
		for _, kind := range s.kinds {
			for _, rate := range s.rates {
				// Alternate the order, so that a trend in the machine's
				// load does not favour one side.
				order := append([]string{"off"}, s.modes...)
				if round%2 == 1 {
					slices.Reverse(order)
				}
				for _, mode := range order {
					c := e.latencyPhase(t, ctx, alice, kind, rate, mode, s)
					k := latencyKey{kind, rate, mode}
					if cells[k] == nil {
						cells[k] = &latencyCell{}
					}
					cells[k].add(c)
					t.Logf("round %d %s %d/s %s: %d creates, p50 %s p99 %s, %d errors, load %s",
						round+1, kind, rate, mode, len(c.lat), pct(c.lat, 0.50), pct(c.lat, 0.99), c.errs, loadAvg())
				}
			}
		}
	}
	table := latencyTable(s, cells, load0, loadAvg(), time.Since(start))
	t.Log("\n" + table)
	if s.out != "" {
		if err := os.WriteFile(s.out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
	for k, c := range cells {
		if c.errs > 0 {
			t.Errorf("%s at %d/s (%s): %d of %d creates failed, first: %v", k.kind, k.rate, k.mode, c.errs, c.sent, c.firstErr)
		}
	}
}

// mergeConfig is baseConfig with the partition's groups merged with a
// directory's: a slapd on loopback where alice is in group analysts, read
// over StartTLS as usher's service account (USHER_E2E_LATENCY_GROUPS=merge).
func mergeConfig(t *testing.T) string {
	ldap := slapdtest.New(t)
	ldap.AddLDIF(t, fmt.Sprintf(`dn: uid=alice,%[1]s
objectClass: inetOrgPerson
uid: alice
cn: Alice
sn: Alice

dn: cn=analysts,%[2]s
objectClass: groupOfNames
cn: analysts
member: uid=alice,%[1]s
`, slapdtest.PeopleDN, slapdtest.GroupsDN))
	ca := filepath.Join(t.TempDir(), "ldap-ca.pem")
	if err := os.WriteFile(ca, ldap.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(baseConfig, "  - name: default\n", fmt.Sprintf(`  - name: default
    groups: merge
    usergroupresolver:
      type: ldap
      unknownuser: given-groups
      ldap:
        urls: [%q]
        starttls: true
        cafile: %s
        binddn: %s
        bindpasswordfile: %s
        userbasedn: %s
        groupsearch: member
        groupbasedn: %s
`, ldap.URL, ca, slapdtest.ServiceDN, ldap.ServicePasswordFile, slapdtest.PeopleDN, slapdtest.GroupsDN), 1)
}

// latencyPhase runs one phase: a fresh namespace (selected by usher's
// webhooks, the floor's bindings, both or neither, as mode says), warm-up,
// the measured window, then the namespace is deleted and waited for.
func (e *usherEnv) latencyPhase(t *testing.T, ctx context.Context, alice kubernetes.Interface, kind string, rate int, mode string, s latencySettings) latencyCell {
	t.Helper()
	labels := map[string]string{usherNSLabel: "off-" + e.label, floorLabel: "off-" + e.label}
	if callsWebhooks(mode) {
		labels[usherNSLabel] = e.label
	}
	if usesFloor(mode) {
		labels[floorLabel] = e.label
	}
	ns, err := cluster.NewNamespace(ctx, "lat-"+kind, labels)
	if err != nil {
		t.Fatal(err)
	}
	defer e.deleteNamespaceAndWait(t, ns)

	create := func(ctx context.Context, i int) error {
		name := fmt.Sprintf("%s-%d", kind, i)
		var err error
		switch kind {
		case "pod":
			_, err = alice.CoreV1().Pods(ns).Create(ctx, Pod(ns, name, nil), metav1.CreateOptions{})
		case "deployment":
			_, err = alice.AppsV1().Deployments(ns).Create(ctx, Deployment(ns, name, 1, nil), metav1.CreateOptions{})
		}
		return err
	}
	before := make(chan latencyScrape, 1)
	p := paced(ctx, rate, s.warmup, s.duration, func() {
		at := e.readCPU(t)
		go func() { before <- e.scrapeLatency(t, ctx, at) }()
	}, create)
	after := e.scrapeLatency(t, ctx, e.readCPU(t))
	b := <-before
	c := latencyCell{lat: p.lat, errs: p.errs, firstErr: p.firstErr, late: p.late, sent: len(p.lat), span: p.span, cpu: map[string]time.Duration{}}
	for k, v := range after.cpu {
		c.cpu[k] = v - b.cpu[k]
	}
	c.connsStart, c.connsEnd = len(b.conns), len(after.conns)
	for _, r := range b.conns {
		if slices.Contains(after.conns, r) {
			c.connsKept++
		}
	}
	// A window whose scrape failed at either end is left out of the
	// histograms (and counted), not taken from zero.
	if b.apiOK && after.apiOK {
		c.apiMutate = after.apiMutate.Sub(b.apiMutate)
		c.apiValidate = after.apiValidate.Sub(b.apiValidate)
		c.apfWait = after.apfWait.Sub(b.apfWait)
	} else {
		c.scrapesFailed++
	}
	if b.usherOK && after.usherOK {
		c.usherMutate = after.usherMutate.Sub(b.usherMutate)
		c.usherValidate = after.usherValidate.Sub(b.usherValidate)
	} else {
		c.scrapesFailed++
	}
	if !callsWebhooks(mode) && c.apiMutate.Count()+c.apiValidate.Count() > 0 {
		t.Errorf("%s at %d/s (%s): the API server called usher's webhooks %v times", kind, rate, mode, c.apiMutate.Count()+c.apiValidate.Count())
	}
	// The baseline scrape starts as the first measured create leaves, so
	// the first few calls may fall before it: allow a tenth.
	if callsWebhooks(mode) && b.apiOK && after.apiOK && c.apiMutate.Count() < 0.9*float64(c.sent-c.errs) {
		t.Errorf("%s at %d/s (%s): %d creates but the API server called /mutate %v times", kind, rate, mode, c.sent-c.errs, c.apiMutate.Count())
	}
	return c
}

func (e *usherEnv) deleteNamespaceAndWait(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", ns, err)
		return
	}
	err := Eventually(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		_, err := e.admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s still there: %v", ns, err)
	}
}

// latencyScrape is what one scrape of both /metrics endpoints gave, with
// the CPU time of the processes and the connections to usher, read just
// before the scrape at the end of a window and just before starting the
// scrape at its start (so that the scrapes' own cost is left out).
type latencyScrape struct {
	apiMutate, apiValidate, usherMutate, usherValidate, apfWait Histogram
	cpu                                                         map[string]time.Duration
	conns                                                       []string // remote addresses of the connections to usher
	apiOK, usherOK                                              bool     // whether each /metrics was read
}

func (e *usherEnv) scrapeLatency(t *testing.T, ctx context.Context, s latencyScrape) latencyScrape {
	raw, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Logf("scraping the API server's /metrics: %v", err)
		return s
	}
	api := string(raw)
	hist := func(text, name string, match map[string]string) Histogram {
		h, err := ParseHistogram(text, name, match)
		if err != nil {
			t.Error(err)
		}
		return h
	}
	s.apiOK = true
	s.apiMutate = hist(api, apiserverWebhookHistogram, map[string]string{"name": "usher-mutate-" + e.label + ".usher.e2e", "operation": "CREATE"})
	s.apiValidate = hist(api, apiserverWebhookHistogram, map[string]string{"name": "usher-validate-" + e.label + ".usher.e2e", "operation": "CREATE"})
	// alice is an authenticated user, not a service account: the
	// flow schema global-default (priority level global-default) takes her.
	s.apfWait = hist(api, apfWaitHistogram, map[string]string{"flow_schema": "global-default"})
	body, code, err := e.u.Get(ctx, "/metrics")
	if err != nil || code != 200 {
		t.Logf("scraping usher's /metrics: %d %v", code, err)
		return s
	}
	s.usherMutate = hist(body, usherRequestHistogram, map[string]string{"handler": "mutate"})
	s.usherValidate = hist(body, usherRequestHistogram, map[string]string{"handler": "validate"})
	s.usherOK = true
	return s
}

// readCPU returns a scrape with only the CPU times and connections filled.
func (e *usherEnv) readCPU(t *testing.T) latencyScrape {
	s := latencyScrape{cpu: map[string]time.Duration{}}
	for _, name := range cpuProcs {
		var pid int
		var err error
		if name == "usher" {
			e.u.mu.Lock()
			if e.u.cmd != nil {
				pid = e.u.cmd.Process.Pid
			}
			e.u.mu.Unlock()
		} else if pid, err = cluster.ClusterPID(name); err != nil {
			t.Errorf("pid of %s: %v", name, err)
			continue
		}
		if s.cpu[name], err = ProcessCPU(pid); err != nil {
			t.Errorf("CPU time of %s: %v", name, err)
		}
	}
	_, port, _ := strings.Cut(e.u.Addr, ":")
	p, _ := strconv.Atoi(port)
	conns, err := EstablishedTo(p)
	if err != nil {
		t.Errorf("connections to usher: %v", err)
	}
	s.conns = conns
	return s
}

// pacedResult is what paced measured after the warm-up.
type pacedResult struct {
	lat      []time.Duration
	errs     int
	firstErr error
	late     int
	span     time.Duration
}

// paced calls do at rate calls per second for warmup+duration, each call
// in its own goroutine at its time slot (open loop: a slow call does not
// hold back the next), and returns the latency of each call after the
// warm-up, timed from the moment it was sent. atMeasure is called when the
// first measured call is sent. paced returns once every call is done.
func paced(ctx context.Context, rate int, warmup, duration time.Duration, atMeasure func(), do func(ctx context.Context, i int) error) pacedResult {
	interval := time.Second / time.Duration(rate)
	nWarm := int(warmup / interval)
	n := nWarm + int(duration/interval)
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	var r pacedResult
	start := time.Now()
	var measureStart time.Time
	for i := 0; i < n && ctx.Err() == nil; i++ {
		slot := start.Add(time.Duration(i) * interval)
		if d := time.Until(slot); d > 0 {
			time.Sleep(d)
		} else if d < -time.Millisecond && i >= nWarm {
			r.late++
		}
		if i == nWarm {
			measureStart = time.Now()
			atMeasure()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			t0 := time.Now()
			errs[i] = do(cctx, i)
			lat[i] = time.Since(t0)
		}()
	}
	if measureStart.IsZero() { // stopped before the warm-up ended
		measureStart = time.Now()
		atMeasure()
	}
	r.span = time.Since(measureStart) + interval
	wg.Wait()
	r.lat = lat[nWarm:]
	for _, err := range errs[nWarm:] {
		if err != nil {
			if r.firstErr == nil {
				r.firstErr = err
			}
			r.errs++
		}
	}
	return r
}

// pct is the q-quantile of lat (nearest rank).
func pct(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

// secMs renders seconds as milliseconds.
func secMs(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v*1e3)
}

func histCell(h Histogram) string {
	if h.Count() == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s (%s)", secMs(h.Quantile(0.50)), secMs(h.Quantile(0.99)), secMs(h.Mean()))
}

func latencyTable(s latencySettings, cells map[latencyKey]*latencyCell, load0, load1 string, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d round(s) of %s warm-up + %s measured per cell; load average %s at start, %s at end; took %s\n\n",
		s.rounds, s.warmup, s.duration, load0, load1, took.Round(time.Second))
	// each calls row for every (kind, rate) with a cell for off and mode.
	each := func(row func(kind string, rate int, mode string, off, on *latencyCell)) {
		for _, kind := range s.kinds {
			for _, rate := range s.rates {
				for _, mode := range s.modes {
					off, on := cells[latencyKey{kind, rate, "off"}], cells[latencyKey{kind, rate, mode}]
					if off != nil && on != nil {
						row(kind, rate, mode, off, on)
					}
				}
			}
		}
	}
	b.WriteString("Client-side CREATE latency (ms), alice, open loop; mode: usher's webhooks, the floor (usher native's policies) or both, against neither (off):\n\n")
	b.WriteString("| kind | rate | mode | achieved/s off, mode | creates | off p50 / p99 | mode p50 / p99 | added p50 / p99 | late sends | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	each(func(kind string, rate int, mode string, off, on *latencyCell) {
		fmt.Fprintf(&b, "| %s | %d/s | %s | %.0f / %.0f | %d / %d | %s / %s | %s / %s | %s / %s | %d / %d | %d / %d |\n",
			kind, rate, mode,
			float64(off.sent)/off.span.Seconds(), float64(on.sent)/on.span.Seconds(),
			len(off.lat), len(on.lat),
			ms(pct(off.lat, 0.5)), ms(pct(off.lat, 0.99)),
			ms(pct(on.lat, 0.5)), ms(pct(on.lat, 0.99)),
			ms(pct(on.lat, 0.5)-pct(off.lat, 0.5)), ms(pct(on.lat, 0.99)-pct(off.lat, 0.99)),
			off.late, on.late, off.errs, on.errs)
	})
	b.WriteString("\nusher's webhooks, as the API server timed them (" + apiserverWebhookHistogram + ", CREATE)\n")
	b.WriteString("and as usher timed them (" + usherRequestHistogram + "), ms: p50 / p99 (mean), estimated from the buckets:\n\n")
	b.WriteString("| kind | rate | mode | calls /mutate, /validate | API server /mutate | API server /validate | usher /mutate | usher /validate | APF wait off | APF wait mode | scrapes failed |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	each(func(kind string, rate int, mode string, off, on *latencyCell) {
		fmt.Fprintf(&b, "| %s | %d/s | %s | %.0f, %.0f | %s | %s | %s | %s | %s | %s | %d |\n", kind, rate, mode,
			on.apiMutate.Count(), on.apiValidate.Count(),
			histCell(on.apiMutate), histCell(on.apiValidate), histCell(on.usherMutate), histCell(on.usherValidate),
			histCell(off.apfWait), histCell(on.apfWait), off.scrapesFailed+on.scrapesFailed)
	})
	b.WriteString("\nCPU time per measured create (µs), off / mode, and the API server's connections to usher\n")
	b.WriteString("(established at the start and at the end of the measured windows; kept: those of the start still open at the end):\n\n")
	b.WriteString("| kind | rate | mode | kube-apiserver | etcd | kube-controller-manager | usher | connections start, end, kept |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	perCreate := func(c *latencyCell, proc string) string {
		if c.sent == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f", float64(c.cpu[proc])/1e3/float64(c.sent))
	}
	each(func(kind string, rate int, mode string, off, on *latencyCell) {
		fmt.Fprintf(&b, "| %s | %d/s | %s | %s / %s | %s / %s | %s / %s | %s | %d, %d, %d |\n", kind, rate, mode,
			perCreate(off, "kube-apiserver"), perCreate(on, "kube-apiserver"),
			perCreate(off, "etcd"), perCreate(on, "etcd"),
			perCreate(off, "kube-controller-manager"), perCreate(on, "kube-controller-manager"),
			perCreate(on, "usher"), on.connsStart, on.connsEnd, on.connsKept)
	})
	return b.String()
}
