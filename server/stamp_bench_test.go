package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/hack/benchcpu"
	"github.com/usherhq/usher/hack/slapdtest"
	"github.com/usherhq/usher/serving"
)

// BenchmarkStampMergeLDAP measures what stamping the decided groups adds
// to a pod CREATE through the mutating webhook's HTTP handler (decode,
// decide, stamp, encode), with the server's authorizers over the engine:
// groups given (the API server's groups, no directory), and groups: merge
// against a real slapd on loopback, warm (the user's groups in the cache)
// and cold (a cache of one entry and two users taking turns, so every
// review is a directory lookup: a user search and a group search on a
// pooled connection). It reports the handler thread's CPU time too
// (cpu-ns/op), steadier on a shared machine; a cold review's wall time
// includes the directory's. docs/benchmarks.md has the figures.
func BenchmarkStampMergeLDAP(b *testing.B) {
	s := slapdtest.New(b)
	var ldif strings.Builder
	for _, u := range []string{"alice", "carol"} {
		fmt.Fprintf(&ldif, "\ndn: uid=%[1]s,%[2]s\nobjectClass: inetOrgPerson\nuid: %[1]s\ncn: %[1]s\nsn: %[1]s\n", u, slapdtest.PeopleDN)
	}
	for _, g := range []string{"ml", "gpu"} {
		fmt.Fprintf(&ldif, "\ndn: cn=%s,%s\nobjectClass: groupOfNames\ncn: %[1]s\nmember: uid=alice,%[3]s\nmember: uid=carol,%[3]s\n", g, slapdtest.GroupsDN, slapdtest.PeopleDN)
	}
	s.AddLDIF(b, ldif.String())
	partition := func(groups, cache string) string {
		return fmt.Sprintf(`partitions:
  - name: default
    groups: %s
    usergroupresolver:
      type: ldap
      ldap: {urls: [%q], binddn: %q, bindpasswordfile: %q, userbasedn: %q, groupsearch: member, groupbasedn: %q, timeout: 2s}
      cache: %s
    queues: [{name: root, submitacl: "*"}]
`, groups, s.URL, slapdtest.ServiceDN, s.ServicePasswordFile, slapdtest.PeopleDN, slapdtest.GroupsDN, cache)
	}
	for _, bc := range []struct {
		name, config string
		users        []string
		want         string // a group the stamp must carry
	}{
		{"given", partition("given", "{}"), []string{"alice"}, "dev"},
		{"merge/warm", partition("merge", "{}"), []string{"alice"}, "gpu"},
		{"merge/cold", partition("merge", "{maxentries: 1}"), []string{"alice", "carol"}, "gpu"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg, err := config.Parse("bench.yaml", []byte(bc.config))
			if err != nil {
				b.Fatal(err)
			}
			st, err := serving.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			h := admission.NewHandler(nil, admission.WithState(st.Admission)).MutateHTTP()
			bodies := make([][]byte, len(bc.users))
			for i, u := range bc.users {
				bodies[i] = fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",
	  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":"team-a","operation":"CREATE","userInfo":{"username":%q,"groups":["dev","system:authenticated"]},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"spark"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, u)
			}
			review := func(i int) {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(bodies[i%len(bodies)]))
				req.Header.Set("Content-Type", "application/json")
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"patch"`) {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
			// The first review dials the directory, outside the measurement.
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(bodies[0]))
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(rec, req)
			var rv struct{ Response struct{ Patch []byte } }
			if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || !strings.Contains(string(rv.Response.Patch), bc.want) {
				b.Fatalf("stamp %s lacks %s: %v", rv.Response.Patch, bc.want, err)
			}
			before := st.Current().CacheStats()["default"].Calls
			i := 0
			b.ReportAllocs()
			m := benchcpu.Start()
			for b.Loop() {
				i++
				review(i)
			}
			m.Stop(b, b.N)
			calls := st.Current().CacheStats()["default"].Calls - before
			if bc.name == "merge/cold" && calls != uint64(b.N) || bc.name != "merge/cold" && calls != 0 {
				b.Fatalf("%d directory lookups for %d reviews", calls, b.N)
			}
		})
	}
}
