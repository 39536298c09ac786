package resolvers_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/ldap"
	"github.com/usherhq/usher/identity/resolvers"
)

func ldapSettings() resolvers.Settings {
	c := ldap.Config{URLs: []string{"ldap://127.0.0.1:1"}, UserBaseDN: "ou=people,dc=example,dc=org", GroupBaseDN: "ou=groups,dc=example,dc=org"}.WithDefaults()
	return resolvers.Settings{Type: resolvers.TypeLDAP, LDAP: &c}
}

// Every field of the ldap block is part of the key: changing any one of
// them gives another key, so a reload never keeps a resolver (and its
// cache) built from other settings. A field added to ldap.Config without
// a place in Key fails here.
func TestKeyNamesEveryLDAPSetting(t *testing.T) {
	base := ldapSettings()
	v := reflect.ValueOf(base.LDAP).Elem()
	for i := range v.NumField() {
		s := ldapSettings()
		f := reflect.ValueOf(s.LDAP).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int, reflect.Int64:
			f.SetInt(f.Int() + 1)
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf("ldap://127.0.0.2")))
		default:
			t.Fatalf("field %s of kind %s: teach this test", v.Type().Field(i).Name, f.Kind())
		}
		if s.Key() == base.Key() {
			t.Errorf("changing ldap.%s leaves the key unchanged", v.Type().Field(i).Name)
		}
	}
}

func TestKeyOfTheOtherSettings(t *testing.T) {
	table, err := identity.ParseFile(strings.NewReader("alice: dev\n"), "g.txt")
	if err != nil {
		t.Fatal(err)
	}
	file := resolvers.Settings{Type: resolvers.TypeFile, File: "/etc/usher/groups", Table: table, FileDigest: [32]byte{1}}
	test := resolvers.Settings{Type: resolvers.TypeTest, Users: map[string][]string{"alice": {"dev"}, "bob": nil}}
	same := []struct{ a, b resolvers.Settings }{
		{resolvers.Settings{}, resolvers.Settings{Type: resolvers.TypeNone}},
		{test, resolvers.Settings{Type: resolvers.TypeTest, Users: map[string][]string{"bob": nil, "alice": {"dev"}}}},
		// The table itself is not compared: its digest stands for it.
		{file, resolvers.Settings{Type: resolvers.TypeFile, File: "/etc/usher/groups", FileDigest: [32]byte{1}}},
	}
	for _, tt := range same {
		if tt.a.Key() != tt.b.Key() {
			t.Errorf("keys differ:\n%s\n%s", tt.a.Key(), tt.b.Key())
		}
	}
	changed := func(f func(*resolvers.Settings)) resolvers.Settings { s := file; f(&s); return s }
	differ := []resolvers.Settings{
		changed(func(s *resolvers.Settings) { s.FileDigest = [32]byte{2} }),
		changed(func(s *resolvers.Settings) { s.File = "/etc/usher/other" }),
		changed(func(s *resolvers.Settings) { s.Type = resolvers.TypeOS }),
		changed(func(s *resolvers.Settings) { s.Cache.PositiveTTL = time.Second }),
		changed(func(s *resolvers.Settings) { s.Cache.NegativeTTL = time.Second }),
		changed(func(s *resolvers.Settings) { s.Cache.StaleTTL = time.Second }),
		changed(func(s *resolvers.Settings) { s.Cache.MaxEntries = 7 }),
	}
	for _, s := range differ {
		if s.Key() == file.Key() {
			t.Errorf("same key for %+v", s)
		}
	}
	if a, b := test.Key(), (resolvers.Settings{Type: resolvers.TypeTest, Users: map[string][]string{"alice": {"ops"}}}).Key(); a == b {
		t.Error("test users differ but the keys do not")
	}
}

// New builds every type from its settings, with a cache except for none.
func TestNewBuildsEveryType(t *testing.T) {
	table, err := identity.ParseFile(strings.NewReader("alice: dev\n"), "g.txt")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		s         resolvers.Settings
		cache     bool
		user      string
		groups    string
		closeable bool
	}{
		{resolvers.Settings{}, false, "alice", "alice", false},
		{resolvers.Settings{Type: resolvers.TypeTest, Users: map[string][]string{"alice": {"dev", "ops"}}}, true, "alice", "dev,ops", false},
		{resolvers.Settings{Type: resolvers.TypeFile, File: "g.txt", Table: table}, true, "alice", "dev", false},
		{ldapSettings(), true, "", "", true},
	} {
		r, err := resolvers.New(tt.s)
		if err != nil {
			t.Fatalf("%s: %v", tt.s.Type, err)
		}
		if (r.Cache != nil) != tt.cache || (r.Closer != nil) != tt.closeable || r.Key != tt.s.Key() {
			t.Errorf("%s: cache %v, closeable %v, key %s", tt.s.Type, r.Cache != nil, (r.Closer != nil), r.Key)
		}
		if tt.user != "" {
			in, err := r.Resolve(ctx, tt.user)
			if err != nil || strings.Join(in.Groups, ",") != tt.groups {
				t.Errorf("%s: %v %v", tt.s.Type, in, err)
			}
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: Close: %v", tt.s.Type, err)
		}
	}
	for _, bad := range []resolvers.Settings{{Type: "nis"}, {Type: resolvers.TypeFile, File: "g.txt"}, {Type: resolvers.TypeLDAP}} {
		if _, err := resolvers.New(bad); err == nil {
			t.Errorf("built %+v", bad)
		}
	}
}
