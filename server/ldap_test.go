package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/hack/slapdtest"
	"github.com/usherhq/usher/server"
)

// ldapServer starts a slapd (skipped where slapd is not installed, failing
// when CI is set) holding alice in dev and ops and bob in ops, and a server
// whose default partition reads groups from it, keeping answers 500ms and
// serving them stale for a minute during an outage.
func ldapServer(t *testing.T) (*slapdtest.Server, *harness) {
	t.Helper()
	s := slapdtest.New(t)
	var ldif strings.Builder
	for _, u := range []string{"alice", "bob", "carol"} {
		fmt.Fprintf(&ldif, "\ndn: uid=%[1]s,%[2]s\nobjectClass: inetOrgPerson\nuid: %[1]s\ncn: %[1]s\nsn: %[1]s\n", u, slapdtest.PeopleDN)
	}
	for _, g := range [][]string{{"dev", "alice"}, {"ops", "alice", "bob"}} {
		fmt.Fprintf(&ldif, "\ndn: cn=%[1]s,%[2]s\nobjectClass: groupOfNames\ncn: %[1]s\n", g[0], slapdtest.GroupsDN)
		for _, m := range g[1:] {
			fmt.Fprintf(&ldif, "member: uid=%s,%s\n", m, slapdtest.PeopleDN)
		}
	}
	s.AddLDIF(t, ldif.String())
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, fmt.Sprintf(`partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: ldap
      ldap:
        urls: [%q]
        binddn: %s
        bindpasswordfile: %s
        userbasedn: %s
        groupsearch: member
        groupbasedn: %s
        timeout: 2s
      cache: {positivettl: 500ms, negativettl: 100ms, stalettl: 1m}
    queues:
      - name: root
        queues:
          - name: dev
            submitacl: " dev"
`, s.URL, slapdtest.ServiceDN, s.ServicePasswordFile, slapdtest.PeopleDN, slapdtest.GroupsDN))
	return s, start(t, server.Options{ConfigPath: cfg}, nil)
}

// metric returns the value of the sample name{partition="default"} on
// /metrics, failing the test when there is none.
func (h *harness) metric(name string) float64 {
	h.t.Helper()
	code, body := h.get("/metrics")
	if code != 200 {
		h.t.Fatalf("/metrics: %d", code)
	}
	prefix := name + `{partition="default"} `
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				h.t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	h.t.Fatalf("/metrics has no %s for partition default:\n%s", name, body)
	return 0
}

func (h *harness) access(body string) (int, decision.Output, string) {
	h.t.Helper()
	code, raw := h.post("/v1/access", "application/json", body)
	var res decision.Output
	if code == 200 {
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			h.t.Fatalf("%s: %v", raw, err)
		}
	}
	return code, res, raw
}

func groupsOf(res decision.Output) string {
	var s []string
	for _, g := range res.Identity.Groups {
		s = append(s, g.Name+"="+g.Source)
	}
	return strings.Join(s, " ")
}

func TestAccessWithLDAP(t *testing.T) {
	s, h := ldapServer(t)
	alice := `{"queue":"root.dev","user":"alice","groups":["system:authenticated"]}`

	code, res, raw := h.access(alice)
	if code != 200 || !res.Allowed || groupsOf(res) != "system:authenticated=given dev=ldap ops=ldap" ||
		res.DecidedBy == nil || res.DecidedBy.Entry != "dev" {
		t.Fatalf("alice: %d %s", code, raw)
	}
	code, res, raw = h.access(`{"queue":"root.dev","user":"bob"}`)
	if code != 200 || res.Allowed || groupsOf(res) != "ops=ldap" {
		t.Fatalf("bob: %d %s", code, raw)
	}
	h.access(alice) // a hit
	for name, want := range map[string]float64{
		"usher_group_cache_resolver_calls_total": 2,
		"usher_group_cache_misses_total":         2,
		"usher_group_cache_hits_total":           1,
		"usher_group_cache_stale_answers_total":  0,
	} {
		if got := h.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	// The directory goes down: alice keeps her last groups once they have
	// expired, and the stale answers are counted.
	s.Stop(t)
	waitFor(t, func() bool {
		code, res, raw := h.access(alice)
		if code != 200 || !res.Allowed || groupsOf(res) != "system:authenticated=given dev=ldap ops=ldap" {
			t.Fatalf("alice during the outage: %d %s", code, raw)
		}
		return h.metric("usher_group_cache_stale_answers_total") > 0
	})
	if h.metric("usher_group_cache_resolver_failures_total") == 0 {
		t.Error("no resolver failure counted during the outage")
	}
	// A user never seen before cannot be decided: 503, never allowed. The
	// caller learns that the group lookup failed and a request id; the
	// directory's error (server address, DNs) is in the log under that id.
	code, _, raw = h.access(`{"queue":"root.dev","user":"carol","groups":["dev"]}`)
	var e struct{ Error, RequestID string }
	if code != 503 || json.Unmarshal([]byte(raw), &e) != nil || !strings.Contains(e.Error, `group lookup failed for user "carol"`) || e.RequestID == "" {
		t.Fatalf("carol during the outage: %d %s; want 503 saying the group lookup failed", code, raw)
	}
	for _, secret := range []string{"ldap:", slapdtest.PeopleDN, slapdtest.GroupsDN, s.URL, strings.TrimPrefix(s.URL, "ldap://")} {
		if strings.Contains(raw, secret) {
			t.Errorf("the answer reveals %q: %s", secret, raw)
		}
	}
	if !strings.Contains(h.logs.String(), `"msg":"group lookup failed","requestID":"`+e.RequestID+`","user":"carol"`) || !strings.Contains(h.logs.String(), "ldap: ") {
		t.Errorf("the log has no detail under request id %s:\n%s", e.RequestID, h.logs.String())
	}
	if !strings.Contains(h.logs.String(), `"user":"carol","queue":"root.dev","action":"submit","allowed":false,"error"`) {
		t.Errorf("no audit record of the failed decision:\n%s", h.logs.String())
	}
}

// With groups: merge against a directory, /mutate stamps the groups it
// decided with, LDAP's included, and the audit record says where each
// came from. With the directory down and no queue enforced, a pod is
// still admitted: stamped with the API server's groups, marked degraded,
// with a warning that reveals nothing of the directory, and counted.
func TestStampDecidedGroupsLDAP(t *testing.T) {
	s, h := ldapServer(t)
	review := func(user string) (allowed bool, patch string, warnings []string) {
		t.Helper()
		body := strings.Replace(alicePodReview("team-a", nil), `"username":"alice"`, fmt.Sprintf(`"username":%q`, user), 1)
		code, raw := h.post("/mutate", "application/json", body)
		var rv struct {
			Response struct {
				Allowed  bool
				Patch    []byte
				Warnings []string
			}
		}
		if err := json.Unmarshal([]byte(raw), &rv); err != nil || code != 200 {
			t.Fatalf("%d %s %v", code, raw, err)
		}
		return rv.Response.Allowed, string(rv.Response.Patch), rv.Response.Warnings
	}
	allowed, patch, _ := review("alice")
	if !allowed || !strings.Contains(patch, `{\"user\":\"alice\",\"groups\":[\"system:authenticated\",\"dev\",\"ops\"]}`) ||
		!strings.Contains(patch, `"usher.io/directory-groups":"[\"dev\",\"ops\"]"`) {
		t.Fatalf("alice: %v %s", allowed, patch)
	}
	waitFor(t, func() bool {
		return strings.Contains(h.logs.String(), `"decided":["system:authenticated","dev","ops"],"sources":["given","ldap","ldap"]`)
	})

	s.Stop(t)
	allowed, patch, warnings := review("carol")
	if !allowed || !strings.Contains(patch, `{\"user\":\"carol\",\"groups\":[\"system:authenticated\"]}`) ||
		!strings.Contains(patch, `"usher.io/directory-groups":"unavailable"`) {
		t.Fatalf("carol with the directory down: %v %s", allowed, patch)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "could not be established") || !strings.Contains(warnings[0], "request id") ||
		strings.Contains(warnings[0], slapdtest.PeopleDN) || strings.Contains(warnings[0], s.URL) {
		t.Errorf("warnings %q", warnings)
	}
	if got := h.sample("usher_admission_degraded_stamps_total"); got != 1 {
		t.Errorf("degraded stamps counted %v, want 1", got)
	}
}
