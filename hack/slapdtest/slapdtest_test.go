package slapdtest_test

import (
	"strings"
	"testing"

	goldap "github.com/go-ldap/ldap/v3"

	"github.com/usherhq/usher/hack/slapdtest"
)

func TestServerLifecycle(t *testing.T) {
	s := slapdtest.New(t)
	s.AddLDIF(t, `dn: uid=alice,`+slapdtest.PeopleDN+`
objectClass: inetOrgPerson
uid: alice
cn: Alice
sn: A

dn: cn=dev,`+slapdtest.GroupsDN+`
objectClass: groupOfNames
cn: dev
member: uid=alice,`+slapdtest.PeopleDN+`
`)
	search := func(t *testing.T) []string {
		t.Helper()
		c := s.Dial(t)
		res, err := c.Search(goldap.NewSearchRequest("uid=alice,"+slapdtest.PeopleDN, goldap.ScopeBaseObject,
			goldap.NeverDerefAliases, 0, 0, false, "(objectClass=*)", []string{"memberOf"}, nil))
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		return res.Entries[0].GetAttributeValues("memberOf")
	}
	if got := search(t); len(got) != 1 || !strings.HasPrefix(got[0], "cn=dev,") {
		t.Fatalf("memberOf = %q, want the dev group (memberof overlay)", got)
	}

	s.Stop(t)
	if s.Running() {
		t.Fatal("Running after Stop")
	}
	if _, err := goldap.DialURL(s.URL); err == nil {
		t.Fatal("dial succeeded while stopped")
	}
	s.Start(t)
	if got := search(t); len(got) != 1 {
		t.Fatalf("after restart memberOf = %q, want the data kept", got)
	}
}

func TestParseLDIF(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr string
	}{
		{name: "two entries with folding and base64", in: "version: 1\n# c\ndn: cn=a,dc=x\ncn: a\ndescription: long\n  line\n\ndn: cn=b,dc=x\ncn:: Yg==\n", want: 2},
		{name: "no dn", in: "cn: a\n", wantErr: "line 1"},
		{name: "change record", in: "dn: cn=a\nchangetype: modify\n", wantErr: "line 2"},
		{name: "bad base64", in: "dn: cn=a\ncn:: !!\n", wantErr: "base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := slapdtest.ParseLDIF(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("got %d entries, want %d: %+v", len(got), tt.want, got)
			}
			if got[0].Attrs[1].Values[0] != "long line" {
				t.Fatalf("folded value = %q", got[0].Attrs[1].Values[0])
			}
			if got[1].Attrs[0].Values[0] != "b" {
				t.Fatalf("base64 value = %q", got[1].Attrs[0].Values[0])
			}
		})
	}
}
