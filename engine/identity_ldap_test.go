package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/hack/slapdtest"
	"github.com/usherhq/usher/identity"
)

// enterprisePartition is ldapPartition with extra usergroupresolver keys
// (resolverKeys, indented six spaces), extra ldap keys (ldapKeys, ten
// spaces) and a queue root.alice that only the user alice may submit to.
func enterprisePartition(s *slapdtest.Server, name, groups, resolverKeys, ldapKeys string) string {
	p := ldapPartition(s, name, groups, ldapOpts{})
	p = strings.Replace(p, "      cache: ", resolverKeys+"      cache: ", 1)
	p = strings.Replace(p, "          timeout: ", ldapKeys+"          timeout: ", 1)
	return p + "          - name: alice\n            submitacl: alice\n"
}

// TestEnterpriseIdentities decides, against a real slapd, for the
// identities of an enterprise cluster: service accounts, OIDC-prefixed
// names, static overrides, users the directory does not know and nested
// groups.
func TestEnterpriseIdentities(t *testing.T) {
	s := newDirectory(t)
	// Two levels of nesting: gpu has ml as a member, ml has dev.
	s.AddLDIF(t, `
dn: cn=ml,`+slapdtest.GroupsDN+`
objectClass: groupOfNames
cn: ml
member: cn=dev,`+slapdtest.GroupsDN+`

dn: cn=gpu,`+slapdtest.GroupsDN+`
objectClass: groupOfNames
cn: gpu
member: cn=ml,`+slapdtest.GroupsDN+`
`)
	const mapping = `      namemapping:
        - pattern: 'oidc:([^@]+)@example\.com'
          replacement: $1
        - pattern: '([^@]+)@EXAMPLE\.COM'
          replacement: $1
      overrides:
        spark-svc: [gpu]
`
	e := ldapEngine(t,
		enterprisePartition(s, "default", "merge", mapping, ""),
		enterprisePartition(s, "lenient", "merge", "      unknownuser: given-groups\n", ""),
		enterprisePartition(s, "nested", "resolve", "", "          nestedgroups: 2\n"),
		enterprisePartition(s, "shallow", "resolve", "", "          nestedgroups: 1\n"),
		enterprisePartition(s, "everyone", "merge", "      skip: []\n", ""),
	)
	k8s := []string{"system:authenticated", "system:serviceaccounts"}
	for _, tc := range []struct {
		name    string
		req     engine.Request
		allowed bool
		trail   string
		lookup  identity.Lookup
		err     error
	}{
		{name: "service account in merge mode decided on its given groups",
			req:     engine.Request{Queue: "root.k8s", User: "system:serviceaccount:spark:driver", Groups: k8s},
			allowed: true, trail: "system:authenticated=given system:serviceaccounts=given",
			lookup: identity.Lookup{Outcome: identity.OutcomeSkipped, Detail: "system:"}},
		{name: "service account looked up when skip is empty", err: identity.ErrUnknownUser,
			req: engine.Request{Partition: "everyone", Queue: "root.k8s", User: "system:serviceaccount:spark:driver", Groups: k8s}},
		{name: "oidc-prefixed name found under its directory name",
			req:     engine.Request{Queue: "root.dev", User: "oidc:alice@example.com", Groups: []string{"system:authenticated"}},
			allowed: true, trail: "system:authenticated=given dev=ldap ops=ldap", lookup: identity.Lookup{Name: "alice", Rule: 1}},
		{name: "kerberos realm mapped by the second rule",
			req:     engine.Request{Queue: "root.admins", User: "bob@EXAMPLE.COM"},
			allowed: true, trail: "admins=ldap ops=ldap", lookup: identity.Lookup{Name: "bob", Rule: 2}},
		{name: "ACLs match the authenticated name, not the directory's",
			req:     engine.Request{Queue: "root.alice", User: "oidc:alice@example.com"},
			allowed: false, trail: "dev=ldap ops=ldap", lookup: identity.Lookup{Name: "alice", Rule: 1}},
		{name: "the directory name itself still matches", req: engine.Request{Queue: "root.alice", User: "alice"},
			allowed: true, trail: "dev=ldap ops=ldap"},
		{name: "static override wins over the directory", req: engine.Request{Queue: "root.gpu", User: "spark-svc"},
			allowed: true, trail: "gpu=override", lookup: identity.Lookup{Outcome: identity.OutcomeOverride}},
		{name: "unknown user denies by default", err: identity.ErrUnknownUser,
			req: engine.Request{Queue: "root.k8s", User: "mallory", Groups: k8s}},
		{name: "unknown user decided on given groups when the policy says so",
			req:     engine.Request{Partition: "lenient", Queue: "root.k8s", User: "mallory", Groups: k8s},
			allowed: true, trail: "system:authenticated=given system:serviceaccounts=given",
			lookup: identity.Lookup{Outcome: identity.OutcomeUnknownGiven}},
		{name: "nested member granted through two levels", req: engine.Request{Partition: "nested", Queue: "root.gpu", User: "dave"},
			allowed: true, trail: "dev=ldap gpu=ldap via dev > ml ml=ldap via dev"},
		{name: "one level is not enough", req: engine.Request{Partition: "shallow", Queue: "root.gpu", User: "dave"},
			allowed: false, trail: "dev=ldap ml=ldap via dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Check(context.Background(), tc.req)
			if tc.err != nil {
				var gerr *engine.GroupsError
				if !errors.Is(err, tc.err) || !errors.As(err, &gerr) || res.Allowed {
					t.Fatalf("Check = %v, %v; want a denial with %v", res.Allowed, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Allowed != tc.allowed || trail(res.Identity) != tc.trail {
				t.Fatalf("allowed %v with %q (%s), want %v with %q", res.Allowed, trail(res.Identity), res.Reason(), tc.allowed, tc.trail)
			}
			if res.Identity.User != tc.req.User {
				t.Errorf("identity user %q, want the authenticated %q", res.Identity.User, tc.req.User)
			}
			got := res.Identity.Lookup
			if tc.lookup.Outcome == identity.OutcomeUnknownGiven {
				got.Detail = ""
			}
			if got != tc.lookup {
				t.Errorf("lookup %+v, want %+v", got, tc.lookup)
			}
		})
	}
}
