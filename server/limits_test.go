package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/server"
)

// hostileReview is an AdmissionReview whose request strings are all the
// caller's choice.
func hostileReview(uid, kind, op, ns, name, user string, groups []string) string {
	g, _ := json.Marshal(groups)
	k, _ := json.Marshal(kind)
	o, _ := json.Marshal(op)
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
	  "uid":%q,"kind":{"group":"","version":"v1","kind":%s},
	  "resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":%q,"name":%q,"operation":%s,
	  "userInfo":{"username":%q,"groups":%s},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
		uid, k, ns, name, o, user, g, name, ns)
}

// Every distinct kind or operation a caller invents must not become a new
// metric series: labels come from a closed set, the rest is "other".
func TestMetricLabelsAreAClosedSet(t *testing.T) {
	h := start(t, server.Options{NoAudit: true}, nil)
	const n = 200
	long := strings.Repeat("K", 8<<10)
	for i := range n {
		kind := fmt.Sprintf("%s%d", long, i)
		op := "CREATE"
		if i%2 == 1 {
			op = fmt.Sprintf("OP%d%s", i, long)
		}
		for _, hook := range []string{"/mutate", "/validate"} {
			code, body := h.post(hook, "application/json", hostileReview(fmt.Sprint(i), kind, op, "team-a", "p", "alice", nil))
			if code != 200 {
				t.Fatalf("%s review %d: %d %s", hook, i, code, body)
			}
		}
	}
	// Handled kinds with unknown operations, too.
	for i := range n {
		code, body := h.post("/mutate", "application/json", hostileReview(fmt.Sprint(i), "Pod", fmt.Sprintf("OP%d", i), "team-a", "p", "alice", nil))
		if code != 200 {
			t.Fatalf("review %d: %d %s", i, code, body)
		}
	}
	_, metrics := h.get("/metrics")
	if len(metrics) > 64<<10 {
		t.Errorf("/metrics is %d bytes after %d hostile reviews; want it bounded (< 64 KiB)", len(metrics), 3*n)
	}
	if strings.Contains(metrics, long[:100]) || strings.Contains(metrics, `operation="OP`) {
		t.Errorf("/metrics carries request strings as labels")
	}
	want := `usher_admission_reviews_total{kind="other",operation="CREATE",outcome="allowed"} 200`
	if !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "usher_admission_reviews_total"))
	}
	mfs, err := server.RegistryOf(h.srv).Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, mf := range mfs {
		series += len(mf.GetMetric())
		if strings.HasPrefix(mf.GetName(), "usher_admission_reviews_total") && len(mf.GetMetric()) > 6 {
			t.Errorf("%s has %d series after hostile reviews; want at most 6 here", mf.GetName(), len(mf.GetMetric()))
		}
	}
	if series > 200 {
		t.Errorf("the registry holds %d series after %d hostile reviews; want it bounded", series, 3*n)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Strings a caller chooses are written to the audit log cut to a bounded
// length (and lists to a bounded count), with a visible marker.
func TestAuditRecordsAreCapped(t *testing.T) {
	h := start(t, server.Options{}, nil)
	huge := strings.Repeat("x", 256<<10)
	groups := make([]string, 5000)
	for i := range groups {
		groups[i] = fmt.Sprintf("group-%d-%s", i, strings.Repeat("g", 100))
	}
	review := hostileReview("u1", "Pod"+huge, "CREATE"+huge, "ns"+huge, "name"+huge, "user"+huge, groups)
	if code, body := h.post("/mutate", "application/json", review); code != 200 {
		t.Fatalf("%d %.300s", code, body)
	}
	// A denial whose reason echoes the request: a forged annotation.
	forged := strings.Replace(hostileReview("u2", "Pod", "CREATE", "team-a", "p"+huge, "mallory"+huge, groups),
		`"metadata":{"name"`, `"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\"}"},"name"`, 1)
	if code, body := h.post("/validate", "application/json", forged); code != 200 || !strings.Contains(body, `"allowed":false`) {
		t.Fatalf("%d %.300s", code, body)
	}
	// /v1/access with a huge user and many groups.
	acc, _ := json.Marshal(map[string]any{"queue": "root", "user": "u" + strings.Repeat("y", 30<<10), "groups": groups[:100], "action": "submit"})
	h.post("/v1/access", "application/json", string(acc))
	h.stop()
	logs := h.logs.String()
	records := 0
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `"msg":"audit"`) {
			continue
		}
		records++
		if len(line) > 16<<10 {
			t.Errorf("an audit record is %d bytes long; want at most 16 KiB: %.400s…", len(line), line)
		}
		if !strings.Contains(line, "[cut ") {
			t.Errorf("an audit record of hostile input shows no cut marker: %.400s…", line)
		}
	}
	if records != 3 {
		t.Errorf("got %d audit records, want 3:\n%.2000s", records, logs)
	}
}
