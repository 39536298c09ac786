package server_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/hack/authtest"
	"github.com/usherhq/usher/server"
)

// A forged identity and a queue refusal are told apart in the metrics:
// each denial is counted under its cause, and every cause's series exists
// from the start (at 0), so that an alert on its increase sees the first.
func TestDenialReasonMetrics(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, admissionPlaceYAML)
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	series := func(reason, warned string) string {
		return `usher_admission_denials_total{reason="` + reason + `",warned="` + warned + `"}`
	}
	_, m := h.get("/metrics")
	for _, c := range admission.Causes() {
		for _, w := range []string{"false", "true"} {
			if v := metricValue(m, series(string(c), w)); v != "0" {
				t.Errorf("%s = %q before any review, want 0", series(string(c), w), v)
			}
		}
	}
	// alice names root.secret, which only bob may submit to.
	if _, body := h.post("/mutate", "application/json", alicePodReview("other", map[string]string{"queue": "root.secret"})); !strings.Contains(body, `"allowed":false`) {
		t.Fatalf("queue refusal: %s", body)
	}
	// alice, trusted by nobody, stamps bob's identity herself.
	forged := strings.Replace(alicePodReview("spark", nil), `"labels":null`,
		`"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"bob\",\"groups\":[]}"}`, 1)
	for range 2 {
		if _, body := h.post("/mutate", "application/json", forged); !strings.Contains(body, `"allowed":false`) || !strings.Contains(body, "UserInfoForged") {
			t.Fatalf("forged identity: %s", body)
		}
	}
	_, m = h.get("/metrics")
	for s, want := range map[string]string{
		series("QueueSubmitDenied", "false"): "1",
		series("UserInfoForged", "false"):    "2",
		series("QueueSubmitDenied", "true"):  "0",
		series("InvalidRequest", "false"):    "0",
	} {
		if got := metricValue(m, s); got != want {
			t.Errorf("%s = %q, want %s", s, got, want)
		}
	}
}

// documentedMetrics reads the table of docs/metrics.md: each family's
// type and label names (the backticked words of the labels column outside
// parentheses, which hold their values).
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([a-z]+) \\| ([^|]*) \\|")
	paren, name := regexp.MustCompile(`\([^)]*\)`), regexp.MustCompile("`([a-z_]+)`")
	out := map[string]string{}
	for _, r := range row.FindAllStringSubmatch(string(doc), -1) {
		var labels []string
		for _, l := range name.FindAllStringSubmatch(paren.ReplaceAllString(r[3], ""), -1) {
			labels = append(labels, l[1])
		}
		slices.Sort(labels)
		out[r[1]] = r[2] + " " + strings.Join(labels, ",")
	}
	if len(out) == 0 {
		t.Fatal("docs/metrics.md has no table of metrics")
	}
	return out
}

// scrapedMetrics reads a /metrics page: each usher_* family's type and
// label names.
func scrapedMetrics(page string) map[string]string {
	types, labels := map[string]string{}, map[string]map[string]bool{}
	for line := range strings.Lines(page) {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "usher_") {
			types[f[2]], labels[f[2]] = f[3], map[string]bool{}
		}
	}
	sample := regexp.MustCompile(`^(usher_[a-z_]+?)(_bucket|_sum|_count)?(\{[^}]*\})? `)
	label := regexp.MustCompile(`([a-z_]+)="`)
	for line := range strings.Lines(page) {
		m := sample.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fam := m[1]
		if types[fam] == "" {
			fam += m[2] // a counter whose name ends in _count, say
		}
		for _, l := range label.FindAllStringSubmatch(m[3], -1) {
			if l[1] != "le" && labels[fam] != nil {
				labels[fam][l[1]] = true
			}
		}
	}
	out := map[string]string{}
	for fam, typ := range types {
		var ls []string
		for l := range labels[fam] {
			ls = append(ls, l)
		}
		slices.Sort(ls)
		out[fam] = typ + " " + strings.Join(ls, ",")
	}
	return out
}

// TestMetricsDocumented: docs/metrics.md lists every metric family usher
// exports, with its type and labels, and nothing usher does not export.
// The server runs as in a cluster (callers checked against a stand-in API
// server, the audit queue on, a partition with a resolver) and sees one
// decision, one review and one reload, after which every family exists.
func TestMetricsDocumented(t *testing.T) {
	api := authtest.New(t)
	api.AddToken("alice-token", authtest.User{Name: "alice", Groups: []string{"dev"}})
	api.AddToken("prom-token", authtest.User{Name: "system:serviceaccount:monitoring:prometheus"})
	api.Grant("system:serviceaccount:monitoring:prometheus", "get /metrics")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: 20 * time.Millisecond, AuditQueue: 16,
		AccessAuth: []string{server.AccessAuthKubernetes}, Kubeconfig: api.Kubeconfig(t, dir)}, nil)
	prom := caller{token: "prom-token"}
	h.as(caller{token: "alice-token"}, "POST", "/v1/access", `{"queue":"root.dev","user":"alice","groups":["dev"]}`).want(t, "alice about herself", 200)
	h.as(caller{}, "POST", "/mutate", podReview).want(t, "a review", 200, `"allowed":true`)
	writeFile(t, cfg, strings.Replace(teamsYAML, "adminacl: bob", "adminacl: carol", 1))
	waitFor(t, func() bool {
		return metricValue(h.as(prom, "GET", "/metrics", "").body, `usher_config_reloads_total{result="success"}`) == "1"
	})
	got, want := scrapedMetrics(h.as(prom, "GET", "/metrics", "").body), documentedMetrics(t)
	for fam, g := range got {
		if w, ok := want[fam]; !ok {
			t.Errorf("usher exports %s (%s), docs/metrics.md does not list it", fam, g)
		} else if w != g {
			t.Errorf("%s: docs/metrics.md says %q (type, labels), usher exports %q", fam, w, g)
		}
	}
	for fam := range want {
		if _, ok := got[fam]; !ok {
			t.Errorf("docs/metrics.md lists %s, usher does not export it", fam)
		}
	}
}

// usher_tls_certificate_expiry_timestamp_seconds is the notAfter of the
// certificate being served, and follows a rotation on disk.
func TestCertificateExpiryMetric(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := authtest.NewCA(t, "serving-ca")
	write := func(notAfter time.Time) {
		c := ca.Issue(t, "usher", nil, authtest.CertOptions{Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotAfter: notAfter})
		key, _ := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
		writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})))
		writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})))
	}
	expiry := func(h *harness) float64 {
		mfs, err := server.RegistryOf(h.srv).Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "usher_tls_certificate_expiry_timestamp_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no usher_tls_certificate_expiry_timestamp_seconds")
		return 0
	}
	first := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	write(first)
	h := start(t, server.Options{TLSCertFile: certFile, TLSKeyFile: keyFile}, nil)
	if got := expiry(h); got != float64(first.Unix()) {
		t.Fatalf("expiry %v, want the certificate's notAfter %v", got, first.Unix())
	}
	second := first.Add(80 * 24 * time.Hour)
	write(second)
	waitFor(t, func() bool { return expiry(h) == float64(second.Unix()) })
}
