package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/hack/slapdtest"
	"github.com/usherhq/usher/server"
)

// TestAccessEnterpriseIdentities: /v1/access and the admission audit
// record say how the submitter was identified: a service account that is
// not looked up, an OIDC name mapped to the directory's, a nested group's
// provenance, an unknown user decided on its given groups.
func TestAccessEnterpriseIdentities(t *testing.T) {
	s := slapdtest.New(t)
	s.AddLDIF(t, fmt.Sprintf(`
dn: uid=alice,%[1]s
objectClass: inetOrgPerson
uid: alice
cn: alice
sn: alice

dn: cn=emea,%[2]s
objectClass: groupOfNames
cn: emea
member: uid=alice,%[1]s

dn: cn=data-eng,%[2]s
objectClass: groupOfNames
cn: data-eng
member: cn=emea,%[2]s
`, slapdtest.PeopleDN, slapdtest.GroupsDN))
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, fmt.Sprintf(`partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: ldap
      unknownuser: given-groups
      namemapping:
        - pattern: 'oidc:([^@]+)@example\.com'
          replacement: $1
      ldap:
        urls: [%q]
        binddn: %s
        bindpasswordfile: %s
        userbasedn: %s
        groupbasedn: %s
        nestedgroups: 1
        timeout: 2s
    queues:
      - name: root
        queues:
          - name: data
            submitacl: " data-eng"
          - name: k8s
            submitacl: " system:authenticated"
admissionController:
  enforceQueueACLs: true
`, s.URL, slapdtest.ServiceDN, s.ServicePasswordFile, slapdtest.PeopleDN, slapdtest.GroupsDN))
	h := start(t, server.Options{ConfigPath: cfg}, nil)

	code, res, raw := h.access(`{"queue":"root.data","user":"oidc:alice@example.com"}`)
	if code != 200 || !res.Allowed || res.Identity.User != "oidc:alice@example.com" || groupsOf(res) != "data-eng=ldap via emea emea=ldap" ||
		res.Identity.Lookup == nil || res.Identity.Lookup.DirectoryName != "alice" || res.Identity.Lookup.Rule != 1 {
		t.Fatalf("oidc alice: %d %s", code, raw)
	}
	code, res, raw = h.access(`{"queue":"root.k8s","user":"system:serviceaccount:spark:driver","groups":["system:authenticated"]}`)
	if code != 200 || !res.Allowed || res.Identity.Lookup == nil || res.Identity.Lookup.Outcome != "skipped" || res.Identity.Lookup.Detail != "system:" {
		t.Fatalf("service account: %d %s", code, raw)
	}
	code, res, raw = h.access(`{"queue":"root.data","user":"alice"}`)
	if code != 200 || !res.Allowed || res.Identity.Lookup != nil || strings.Contains(raw, `"lookup"`) {
		t.Fatalf("alice, plain lookup: %d %s", code, raw)
	}
	// An unknown user decided on its given groups: said so, without the
	// directory's message (base DNs, filters).
	code, res, raw = h.access(`{"queue":"root.k8s","user":"mallory","groups":["system:authenticated"]}`)
	if code != 200 || !res.Allowed || res.Identity.Lookup == nil || res.Identity.Lookup.Outcome != "unknown-user-given-groups" ||
		strings.Contains(raw, slapdtest.PeopleDN) || strings.Contains(raw, "uid=mallory") {
		t.Fatalf("mallory: %d %s", code, raw)
	}
	if !strings.Contains(h.logs.String(), `"lookup":"directory name \"alice\" (mapping rule 1)"`) {
		t.Errorf("the access audit lacks the lookup:\n%s", h.logs.String())
	}

	// A pod by a user the directory does not know: decided on the groups
	// the API server gave, and the admission audit record says so.
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
	  "uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},
	  "resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":"team-a","operation":"CREATE",
	  "userInfo":{"username":"mallory","groups":["system:authenticated"]},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a","labels":{"queue":"root.k8s"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	code, body := h.post("/mutate", "application/json", review)
	if code != 200 || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("mutate: %d %s", code, body)
	}
	if !strings.Contains(h.logs.String(), `"user":"mallory"`) ||
		!strings.Contains(h.logs.String(), `"lookup":"the resolver does not know the user; decided on the given groups alone (unknownuser given-groups)"`) {
		t.Errorf("the admission audit record lacks the lookup:\n%s", h.logs.String())
	}
}
