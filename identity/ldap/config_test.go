package ldap

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func validConfig() Config {
	return Config{
		URLs:             []string{"ldaps://ldap.example.org"},
		BindDN:           "cn=usher,ou=services,dc=example,dc=org",
		BindPasswordFile: "/run/secrets/ldap",
		UserBaseDN:       "ou=people,dc=example,dc=org",
		GroupBaseDN:      "ou=groups,dc=example,dc=org",
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // "" means valid
	}{
		{name: "valid", edit: func(*Config) {}},
		{name: "memberof without groupbasedn", edit: func(c *Config) { c.GroupSearch = GroupSearchMemberOf; c.GroupBaseDN = "" }},
		{name: "memberuid", edit: func(c *Config) { c.GroupSearch = GroupSearchMemberUID }},
		{name: "anonymous", edit: func(c *Config) { c.BindDN, c.BindPasswordFile = "", "" }},
		{name: "no urls", edit: func(c *Config) { c.URLs = nil }, wantErr: "ldap: urls is required"},
		{name: "bad scheme", edit: func(c *Config) { c.URLs = []string{"ldaps://a", "http://b"} }, wantErr: `ldap: urls[1] "http://b": scheme must be ldap or ldaps`},
		{name: "url without host", edit: func(c *Config) { c.URLs = []string{"ldap://"} }, wantErr: "urls[0]"},
		{name: "url with dn", edit: func(c *Config) { c.URLs = []string{"ldap://a/dc=x?uid"} }, wantErr: "urls[0]"},
		{name: "url with credentials", edit: func(c *Config) { c.URLs = []string{"ldap://u:p@a"} }, wantErr: "credentials belong in binddn"},
		{name: "cafile without tls", edit: func(c *Config) { c.URLs = []string{"ldap://a"}; c.CAFile = "/ca.pem" }, wantErr: "ldap: cafile is set but no connection uses TLS"},
		{name: "insecure without tls", edit: func(c *Config) { c.URLs = []string{"ldap://a"}; c.InsecureSkipVerify = true }, wantErr: "ldap: insecureskipverify is set"},
		{name: "cafile with starttls", edit: func(c *Config) { c.URLs = []string{"ldap://a"}; c.StartTLS = true; c.CAFile = "/ca.pem" }},
		{name: "binddn without password", edit: func(c *Config) { c.BindPasswordFile = "" }, wantErr: "ldap: bindpasswordfile or bindpasswordenv is required with binddn"},
		{name: "two password sources", edit: func(c *Config) { c.BindPasswordEnv = "PW" }, wantErr: "both set"},
		{name: "password without binddn", edit: func(c *Config) { c.BindDN = "" }, wantErr: "ldap: binddn is required"},
		{name: "bad binddn", edit: func(c *Config) { c.BindDN = "not a dn" }, wantErr: "ldap: binddn"},
		{name: "no userbasedn", edit: func(c *Config) { c.UserBaseDN = "" }, wantErr: "ldap: userbasedn is required"},
		{name: "userfilter without placeholder", edit: func(c *Config) { c.UserFilter = "(uid=alice)" }, wantErr: "ldap: userfilter \"(uid=alice)\" does not contain {user}"},
		{name: "userfilter unbalanced", edit: func(c *Config) { c.UserFilter = "(&(uid={user})" }, wantErr: "ldap: userfilter"},
		{name: "bad groupsearch", edit: func(c *Config) { c.GroupSearch = "nested" }, wantErr: `ldap: groupsearch "nested" is not one of`},
		{name: "member without groupbasedn", edit: func(c *Config) { c.GroupBaseDN = "" }, wantErr: "ldap: groupbasedn is required"},
		{name: "bad groupfilter", edit: func(c *Config) { c.GroupFilter = "objectClass=x" }, wantErr: "ldap: groupfilter"},
		{name: "groupfilter with memberof", edit: func(c *Config) { c.GroupSearch = GroupSearchMemberOf; c.GroupFilter = "(cn=*)" }, wantErr: "ldap: groupfilter is not used with groupsearch memberof"},
		{name: "memberattr with memberof", edit: func(c *Config) { c.GroupSearch = GroupSearchMemberOf; c.MemberAttr = "member" }, wantErr: "ldap: memberattr is not used"},
		{name: "memberofattr with member", edit: func(c *Config) { c.MemberOfAttr = "memberOf" }, wantErr: "ldap: memberofattr is only used"},
		{name: "bad memberattr", edit: func(c *Config) { c.MemberAttr = "member)(x=*" }, wantErr: "ldap: memberattr"},
		{name: "bad groupnameattr", edit: func(c *Config) { c.GroupNameAttr = "c n" }, wantErr: "ldap: groupnameattr"},
		{name: "oid groupnameattr", edit: func(c *Config) { c.GroupNameAttr = "2.5.4.3" }},
		{name: "usernameattr none", edit: func(c *Config) { c.UserNameAttr = NoUserNameAttr }},
		{name: "bad usernameattr", edit: func(c *Config) { c.UserNameAttr = "1uid" }, wantErr: "ldap: usernameattr"},
		{name: "negative timeout", edit: func(c *Config) { c.Timeout = -time.Second }, wantErr: "ldap: timeout -1s is negative"},
		{name: "negative poolsize", edit: func(c *Config) { c.PoolSize = -1 }, wantErr: "ldap: poolsize"},
		{name: "negative sizelimit", edit: func(c *Config) { c.SizeLimit = -1 }, wantErr: "ldap: sizelimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.edit(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		mode        GroupSearch
		memberAttr  string
		groupFilter string
		memberOf    string
	}{
		{mode: "", memberAttr: "member", groupFilter: "(objectClass=groupOfNames)"},
		{mode: GroupSearchMember, memberAttr: "member", groupFilter: "(objectClass=groupOfNames)"},
		{mode: GroupSearchMemberUID, memberAttr: "memberUid", groupFilter: "(objectClass=posixGroup)"},
		{mode: GroupSearchMemberOf, memberOf: "memberOf"},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			c := Config{GroupSearch: tt.mode}.WithDefaults()
			if c.MemberAttr != tt.memberAttr || c.GroupFilter != tt.groupFilter || c.MemberOfAttr != tt.memberOf {
				t.Errorf("memberattr %q groupfilter %q memberofattr %q, want %q %q %q",
					c.MemberAttr, c.GroupFilter, c.MemberOfAttr, tt.memberAttr, tt.groupFilter, tt.memberOf)
			}
			if c.UserFilter != "(uid={user})" || c.UserNameAttr != "uid" || c.GroupNameAttr != "cn" ||
				c.Timeout != 5*time.Second || c.PoolSize != 4 || c.SizeLimit != 1000 {
				t.Errorf("common defaults not applied: %+v", c)
			}
			if again := c.WithDefaults(); fmt.Sprint(again) != fmt.Sprint(c) {
				t.Errorf("WithDefaults is not idempotent")
			}
		})
	}
}

func TestConfigYAML(t *testing.T) {
	const doc = `
urls: ["ldap://127.0.0.1:389", "ldaps://ldap2:636"]
starttls: true
cafile: /etc/usher/ldap-ca.pem
binddn: cn=usher,ou=services,dc=example,dc=org
bindpasswordfile: /var/run/secrets/ldap/password
userbasedn: ou=people,dc=example,dc=org
userfilter: "(&(objectClass=posixAccount)(uid={user}))"
groupsearch: memberof
memberofattr: memberOf
groupnameattr: cn
timeout: 2s
poolsize: 8
sizelimit: 500
`
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.URLs) != 2 || !c.StartTLS || c.GroupSearch != GroupSearchMemberOf || c.Timeout != 2*time.Second ||
		c.PoolSize != 8 || c.SizeLimit != 500 || c.UserFilter != "(&(objectClass=posixAccount)(uid={user}))" {
		t.Fatalf("decoded %+v", c)
	}
}

func TestConfigWarnings(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{name: "ldaps with bind", edit: func(*Config) {}},
		{name: "clear text remote", edit: func(c *Config) { c.URLs = []string{"ldap://ldap.example.org"} }, want: []string{"urls[0] ldap://ldap.example.org without starttls: the bind password"}},
		{name: "clear text loopback", edit: func(c *Config) { c.URLs = []string{"ldap://127.0.0.1:389"} }},
		{name: "starttls", edit: func(c *Config) { c.URLs = []string{"ldap://ldap.example.org"}; c.StartTLS = true }},
		{name: "insecure", edit: func(c *Config) { c.InsecureSkipVerify = true }, want: []string{"insecureskipverify is true"}},
		{name: "anonymous", edit: func(c *Config) { c.BindDN, c.BindPasswordFile = "", "" }, want: []string{"binddn is empty"}},
		{name: "no name check", edit: func(c *Config) { c.UserNameAttr = NoUserNameAttr }, want: []string{"usernameattr is none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.edit(&c)
			got := c.Warnings()
			if len(got) != len(tt.want) {
				t.Fatalf("Warnings() = %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], "ldap: ") || !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("warning %q, want it to contain %q", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestNewReadsSecrets(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{name: "missing password file", edit: func(c *Config) { c.BindPasswordFile = dir + "/nope" }, wantErr: "ldap: bindpasswordfile: cannot read the file it names: no such file or directory"},
		{name: "empty password file", edit: func(c *Config) { c.BindPasswordFile = writeFile(t, "pw", "\n") }, wantErr: "is empty"},
		{name: "unset env", edit: func(c *Config) { c.BindPasswordFile, c.BindPasswordEnv = "", "USHER_TEST_UNSET_VARIABLE" }, wantErr: "ldap: bindpasswordenv: the environment variable it names is not set or empty"},
		{name: "missing cafile", edit: func(c *Config) { c.CAFile = dir + "/ca.pem" }, wantErr: "ldap: cafile: stat"},
		{name: "cafile not PEM", edit: func(c *Config) { c.CAFile = writeFile(t, "ca", "hello") }, wantErr: "holds no PEM certificate"},
		{name: "invalid config", edit: func(c *Config) { c.UserBaseDN = "" }, wantErr: "userbasedn is required"},
		{name: "ok", edit: func(c *Config) { c.BindPasswordFile = writeFile(t, "pw2", "s3cret\r\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.edit(&c)
			r, err := New(c)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if pw, _ := r.password(); pw != "s3cret" {
					t.Fatalf("password read as %q", pw)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := t.TempDir() + "/" + name
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
