package deploy_test

// The chart's monitoring (monitoring.prometheusRule, monitoring.dashboard):
// the PrometheusRule passes `promtool check rules` and every alert fires
// on the series of testdata/alerts_test.yaml (`promtool test rules`); the
// dashboard is JSON whose every query promtool parses; and every query of
// both names only metrics usher exports, as docs/metrics.md lists them
// (server/metrics_test.go keeps that list equal to what usher serves).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// promtoolBinary finds promtool: $USHER_PROMTOOL or PATH. `make test`
// needs it (CI installs it): a missing one fails rather than skips.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("USHER_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: `bash hack/promtool.sh` installs it (Debian's prometheus package), or set USHER_PROMTOOL")
	}
	return p
}

func promtool(t *testing.T, bin, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// exportedNames reads docs/metrics.md's table: the names a query may use
// (a histogram's _bucket, _sum and _count series too).
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([a-z]+) \\|").FindAllStringSubmatch(string(doc), -1) {
		out[m[1]] = true
		if m[2] == "histogram" {
			out[m[1]+"_bucket"], out[m[1]+"_sum"], out[m[1]+"_count"] = true, true, true
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/metrics.md has no table of metrics")
	}
	return out
}

var (
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promqlBraces   = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdent    = regexp.MustCompile(`(?:^|[^\w:.$])([a-zA-Z_:][\w:]*)`)
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
		"on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL expression selects: what
// is left once strings, label matchers, ranges, grouping labels,
// functions, keywords and numbers are taken out.
func metricNames(expr string) []string {
	e := promqlGrouping.ReplaceAllString(promqlBraces.ReplaceAllString(promqlStrings.ReplaceAllString(expr, `""`), ""), "")
	var out []string
	for _, m := range promqlIdent.FindAllStringSubmatchIndex(e, -1) {
		name, fn := e[m[2]:m[3]], strings.HasPrefix(strings.TrimSpace(e[m[3]:]), "(")
		if !fn && !promqlKeywords[strings.ToLower(name)] {
			out = append(out, name)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (namespace, handler) (rate(a_count{handler=~"mutate|validate", code=~"5.."}[5m])) / on (x) group_left b > 0.01`: {"a_count", "b"},
		`histogram_quantile(0.99, sum by (le) (rate(c_bucket{n=~"$namespace"}[$__rate_interval]))) > 1e-3`:                      {"c_bucket"},
		`d - time() < 14 * 86400 and e offset 10m unless absent(f) or sum(g) without (h) == bool 1`:                             {"d", "e", "f", "g"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %v, want %v", expr, got, want)
		}
	}
}

// dashboardQueries returns the PromQL of every panel target (rows'
// nested panels too) and every query variable of a Grafana dashboard, by
// where it is.
func dashboardQueries(t *testing.T, data []byte) map[string]string {
	t.Helper()
	type panel struct {
		ID      int
		Title   string
		Targets []struct{ RefID, Expr string }
		Panels  json.RawMessage
	}
	var d struct {
		Title      string
		Panels     []panel
		Templating struct {
			List []struct{ Name, Type, Definition string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	out := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out[fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID)] = tg.Expr
			}
			var nested []panel
			if len(p.Panels) > 0 && json.Unmarshal(p.Panels, &nested) == nil {
				walk(nested)
			}
		}
	}
	walk(d.Panels)
	lv := regexp.MustCompile(`^label_values\((.+), *\w+\)$`)
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			m := lv.FindStringSubmatch(v.Definition)
			if m == nil {
				t.Errorf("variable %s: %q is not label_values(SELECTOR, LABEL)", v.Name, v.Definition)
				continue
			}
			out["variable "+v.Name] = m[1]
		}
	}
	return out
}

// prometheusRule is a monitoring.coreos.com/v1 PrometheusRule of alerts.
type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// TestChartMonitoring renders the chart with its monitoring on and checks
// the PrometheusRule and the dashboard.
func TestChartMonitoring(t *testing.T) {
	helm, promtoolBin := helmBinary(t), promtoolBinary(t)
	on := []string{"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.prometheusRule.labels.release=prom",
		"--set", "monitoring.dashboard.enabled=true", "--set", "monitoring.dashboard.annotations.grafana_folder=Batch"}
	if out, err := exec.Command(helm, append([]string{"lint", "--strict", chartDir}, on...)...).CombinedOutput(); err != nil {
		t.Fatalf("helm lint --strict with monitoring on: %v\n%s", err, out)
	}
	r := render(t, helm, on...)

	// Nothing else changes: every other object is the defaults'.
	base := render(t, helm)
	for kind, ms := range r.objects {
		for _, m := range ms {
			if k := objectKey(m.raw); k != "PrometheusRule usher-system/usher" && k != "ConfigMap usher-system/usher-dashboard" &&
				!slices.ContainsFunc(base.objects[kind], func(b manifest) bool { return string(b.raw) == string(m.raw) }) {
				t.Errorf("monitoring on changes %s", k)
			}
		}
	}

	var rule prometheusRule
	r.one("PrometheusRule", &rule)
	if rule.Labels["release"] != "prom" || rule.Labels["app.kubernetes.io/name"] != "usher" {
		t.Errorf("PrometheusRule labels %v: want the chart's and monitoring.prometheusRule.labels", rule.Labels)
	}
	dir := t.TempDir()
	spec, _ := yaml.Marshal(rule.Spec)
	os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o600)
	promtool(t, promtoolBin, dir, "check", "rules", "rules.yaml")

	// Fire every alert on testdata's series; promtool compares
	// annotations too, which the tests leave out.
	queries := map[string]string{}
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for i, rl := range g.Rules {
			alerts = append(alerts, rl.Alert)
			queries["alert "+rl.Alert] = rl.Expr
			g.Rules[i].Annotations = nil
		}
	}
	bare, _ := yaml.Marshal(rule.Spec)
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "alerts.yaml"), bare, 0o600)
	os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600)
	promtool(t, promtoolBin, dir, "test", "rules", "alerts_test.yaml")
	var cases struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string
				ExpAlerts []any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		}
	}
	if err := yaml.Unmarshal(tests, &cases); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range cases.Tests {
		for _, a := range tc.AlertRuleTest {
			fires[a.Alertname] = fires[a.Alertname] || len(a.ExpAlerts) > 0
		}
	}
	for _, a := range alerts {
		if !fires[a] {
			t.Errorf("alert %s: no case of testdata/alerts_test.yaml fires it", a)
		}
	}

	var cm corev1.ConfigMap
	for _, m := range r.objects["ConfigMap"] {
		if objectKey(m.raw) == "ConfigMap usher-system/usher-dashboard" {
			strict(t, m, &cm)
		}
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "Batch" {
		t.Errorf("dashboard ConfigMap labels %v, annotations %v: want grafana_dashboard: \"1\" and monitoring.dashboard.annotations", cm.Labels, cm.Annotations)
	}
	dash := dashboardQueries(t, []byte(cm.Data["usher.json"]))
	if len(dash) < 10 {
		t.Fatalf("the dashboard has %d queries", len(dash))
	}
	// promtool parses each dashboard query as a recording rule, Grafana's
	// variables replaced by what they stand for.
	vars := strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*")
	var rec strings.Builder
	rec.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	i := 0
	for where, q := range dash {
		queries[where] = q
		i++
		fmt.Fprintf(&rec, "      - record: dashboard:query%d\n        expr: %q\n", i, vars.Replace(q))
	}
	os.WriteFile(filepath.Join(dir, "dashboard.yaml"), []byte(rec.String()), 0o600)
	promtool(t, promtoolBin, dir, "check", "rules", "dashboard.yaml")

	exported := exportedNames(t)
	for where, q := range queries {
		names := metricNames(q)
		if len(names) == 0 {
			t.Errorf("%s: %s names no metric", where, q)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s: %s names %s, which docs/metrics.md does not list", where, q, n)
			}
		}
	}
}
