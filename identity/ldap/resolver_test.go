package ldap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/hack/slapdtest"
	"github.com/usherhq/usher/identity"
)

// fixture is the directory most tests use. Groups of groupOfNames (member
// and, through the memberof overlay, memberOf) and posixGroup (memberUid):
//
//	alice        dev ops         | pdev pops
//	bob          admins ops      | pops
//	carol        (none)          | (none)
//	star*user    stars           | pstars
//	paren(user)  dev             |
//	twin (two entries in different OUs)
var fixture = `
dn: ou=more,ou=people,dc=example,dc=org
objectClass: organizationalUnit
ou: more

dn: ou=posix,ou=groups,dc=example,dc=org
objectClass: organizationalUnit
ou: posix
` + users + groups

var users = person("alice", "ou=people", 1001) + person("bob", "ou=people", 1002) + person("carol", "ou=people", 1003) +
	person("star*user", "ou=people", 1004) + person("paren(user)", "ou=people", 1005) +
	person("twin", "ou=people", 1006) + person("twin", "ou=more,ou=people", 1007)

const groups = `
dn: cn=dev,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: dev
description: Developers
member: uid=alice,ou=people,dc=example,dc=org
member: uid=paren(user),ou=people,dc=example,dc=org

dn: cn=ops,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: ops
cn: operations
description: Operators
member: uid=alice,ou=people,dc=example,dc=org
member: uid=bob,ou=people,dc=example,dc=org

dn: cn=admins,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: admins
description: Administrators
member: uid=bob,ou=people,dc=example,dc=org

dn: cn=stars,ou=groups,dc=example,dc=org
objectClass: groupOfNames
cn: stars
description: Stars
member: uid=star*user,ou=people,dc=example,dc=org

dn: cn=pdev,ou=posix,ou=groups,dc=example,dc=org
objectClass: posixGroup
cn: pdev
gidNumber: 2001
memberUid: alice

dn: cn=pops,ou=posix,ou=groups,dc=example,dc=org
objectClass: posixGroup
cn: pops
gidNumber: 2002
memberUid: alice
memberUid: bob

dn: cn=pstars,ou=posix,ou=groups,dc=example,dc=org
objectClass: posixGroup
cn: pstars
gidNumber: 2003
memberUid: star*user
`

func person(uid, ou string, n int) string {
	return fmt.Sprintf(`
dn: uid=%[1]s,%[2]s,dc=example,dc=org
objectClass: inetOrgPerson
objectClass: posixAccount
uid: %[1]s
cn: %[1]s
sn: %[1]s
uidNumber: %[3]d
gidNumber: %[3]d
homeDirectory: /home/%[3]d
`, uid, ou, n)
}

// newDirectory starts a slapd holding fixture.
func newDirectory(t testing.TB) *slapdtest.Server {
	t.Helper()
	s := slapdtest.New(t)
	s.AddLDIF(t, fixture)
	return s
}

// baseConfig reads groups of s with the given search, bound as the
// service account, over plain LDAP.
func baseConfig(s *slapdtest.Server, mode GroupSearch) Config {
	c := Config{
		URLs:             []string{s.URL},
		BindDN:           slapdtest.ServiceDN,
		BindPasswordFile: s.ServicePasswordFile,
		UserBaseDN:       slapdtest.PeopleDN,
		GroupSearch:      mode,
		GroupBaseDN:      slapdtest.GroupsDN,
	}
	if mode == GroupSearchMemberOf {
		c.GroupBaseDN = ""
	}
	return c
}

func newResolverT(t testing.TB, cfg Config) *Resolver {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// mustResolve resolves user and checks the groups and their sources.
func mustResolve(t testing.TB, r *Resolver, user string, want ...string) {
	t.Helper()
	in, err := r.Resolve(context.Background(), user)
	if err != nil {
		t.Fatalf("Resolve(%q) = %v, want groups %q", user, err, want)
	}
	if in.User != user || !slices.Equal(in.Groups, want) && !(len(in.Groups) == 0 && len(want) == 0) {
		t.Fatalf("Resolve(%q) = %v, want groups %q", user, in, want)
	}
	for i := range in.Groups {
		if in.SourceOf(i) != "ldap" {
			t.Fatalf("Resolve(%q): group %q has source %q, want ldap", user, in.Groups[i], in.SourceOf(i))
		}
	}
}

func TestResolveGroupSearches(t *testing.T) {
	s := newDirectory(t)
	tests := []struct {
		name   string
		mode   GroupSearch
		edit   func(*Config)
		groups map[string][]string // user -> groups
	}{
		{name: "member", mode: GroupSearchMember, groups: map[string][]string{
			"alice": {"dev", "ops"}, "bob": {"admins", "ops"}, "carol": nil, "star*user": {"stars"}, "paren(user)": {"dev"},
		}},
		{name: "memberof", mode: GroupSearchMemberOf, groups: map[string][]string{
			"alice": {"dev", "ops"}, "bob": {"admins", "ops"}, "carol": nil, "star*user": {"stars"}, "paren(user)": {"dev"},
		}},
		{name: "memberuid", mode: GroupSearchMemberUID, groups: map[string][]string{
			"alice": {"pdev", "pops"}, "bob": {"pops"}, "carol": nil, "star*user": {"pstars"}, "paren(user)": nil,
		}},
		{name: "member with posixAccount filter", mode: GroupSearchMember,
			edit:   func(c *Config) { c.UserFilter = "(&(objectClass=posixAccount)(uid={user}))" },
			groups: map[string][]string{"alice": {"dev", "ops"}, "star*user": {"stars"}}},
		// The name is not the RDN: read from the entries found.
		{name: "member named by description", mode: GroupSearchMember,
			edit:   func(c *Config) { c.GroupNameAttr = "description" },
			groups: map[string][]string{"alice": {"Developers", "Operators"}, "bob": {"Administrators", "Operators"}}},
		// The name is not the RDN: one base-scope read per group.
		{name: "memberof named by description", mode: GroupSearchMemberOf,
			edit:   func(c *Config) { c.GroupNameAttr = "description" },
			groups: map[string][]string{"alice": {"Developers", "Operators"}, "bob": {"Administrators", "Operators"}}},
		{name: "memberof restricted to a base", mode: GroupSearchMemberOf,
			edit:   func(c *Config) { c.GroupBaseDN = "ou=posix," + slapdtest.GroupsDN },
			groups: map[string][]string{"alice": nil}},
		{name: "memberuid over a narrower base", mode: GroupSearchMemberUID,
			edit:   func(c *Config) { c.GroupBaseDN = "ou=posix," + slapdtest.GroupsDN },
			groups: map[string][]string{"alice": {"pdev", "pops"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := baseConfig(s, tt.mode)
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			r := newResolverT(t, cfg)
			for user, want := range tt.groups {
				mustResolve(t, r, user, want...)
			}
		})
	}
}

func TestResolveManyGroups(t *testing.T) {
	s := slapdtest.New(t)
	var b strings.Builder
	b.WriteString(person("many", "ou=people", 1))
	for i := 199; i >= 0; i-- { // added in reverse: the result must be sorted anyway
		fmt.Fprintf(&b, "\ndn: cn=g%03d,ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: g%03d\nmember: uid=many,ou=people,dc=example,dc=org\n", i, i)
	}
	s.AddLDIF(t, b.String())
	want := make([]string, 200)
	for i := range want {
		want[i] = fmt.Sprintf("g%03d", i)
	}
	for _, mode := range []GroupSearch{GroupSearchMember, GroupSearchMemberOf} {
		t.Run(string(mode), func(t *testing.T) {
			mustResolve(t, newResolverT(t, baseConfig(s, mode)), "many", want...)

			cfg := baseConfig(s, mode)
			cfg.SizeLimit = 150
			_, err := newResolverT(t, cfg).Resolve(context.Background(), "many")
			if err == nil || !strings.Contains(err.Error(), "sizelimit 150") {
				t.Fatalf("with sizelimit 150: err = %v, want a sizelimit error (never a truncated list)", err)
			}
		})
	}
}

func TestResolveUnknownAndAmbiguous(t *testing.T) {
	s := newDirectory(t)
	tests := []struct {
		name        string
		edit        func(*Config)
		user        string
		wantUnknown bool
		wantErr     string
	}{
		{name: "no such user", user: "mallory", wantUnknown: true, wantErr: `ldap: user "mallory": unknown user: no entry under ou=people,dc=example,dc=org matches (uid=mallory)`},
		{name: "two entries", user: "twin", wantErr: `ldap: user "twin" is ambiguous: more than one entry`},
		{name: "case differs", user: "ALICE", wantUnknown: true, wantErr: `has uid ["alice"], not exactly "ALICE"`},
		{name: "trailing space", user: "alice ", wantUnknown: true, wantErr: "not exactly"},
		{name: "user base missing", edit: func(c *Config) { c.UserBaseDN = "ou=nobody,dc=example,dc=org" }, user: "alice",
			wantErr: "ldap: userbasedn ou=nobody,dc=example,dc=org does not exist"},
		{name: "group base missing", edit: func(c *Config) { c.GroupBaseDN = "ou=nogroups,dc=example,dc=org" }, user: "alice",
			wantErr: "ldap: groupbasedn ou=nogroups,dc=example,dc=org does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := baseConfig(s, GroupSearchMember)
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			r := newResolverT(t, cfg)
			in, err := r.Resolve(context.Background(), tt.user)
			if err == nil {
				t.Fatalf("Resolve(%q) = %v, want an error", tt.user, in)
			}
			if errors.Is(err, identity.ErrUnknownUser) != tt.wantUnknown {
				t.Errorf("errors.Is(err, ErrUnknownUser) = %v, want %v (err %v)", !tt.wantUnknown, tt.wantUnknown, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}

	// With the name check off the directory's case-insensitive match wins:
	// that is why it is on by default.
	cfg := baseConfig(s, GroupSearchMember)
	cfg.UserNameAttr = NoUserNameAttr
	mustResolve(t, newResolverT(t, cfg), "ALICE", "dev", "ops")
}

func TestResolveFilterInjection(t *testing.T) {
	s := newDirectory(t)
	names := []string{
		"*", "*)(uid=*", "alice)(|(uid=*", "alice)(uid=bob", `\2a`, `\2A`, "ali*", "*ice", "alice*", "a*e",
		"(uid=alice)", "alice)", "bob))(|(objectClass=*", "star*", "*user", "paren(*)", "paren(user", "\x00", "alice\x00",
		"alice\x00bob", "", "\xff", "*)(|(cn=*))(uid=alice",
	}
	filters := []string{"(uid={user})", "(&(objectClass=posixAccount)(uid={user}))", "(|(uid={user})(mail={user}))"}
	for _, mode := range []GroupSearch{GroupSearchMember, GroupSearchMemberOf, GroupSearchMemberUID} {
		for fi, filter := range filters {
			cfg := baseConfig(s, mode)
			cfg.UserFilter = filter
			r := newResolverT(t, cfg)
			for _, name := range names {
				t.Run(fmt.Sprintf("%s/filter%d/%q", mode, fi, name), func(t *testing.T) {
					in, err := r.Resolve(context.Background(), name)
					if err == nil {
						t.Fatalf("Resolve(%q) = %v, want an error", name, in)
					}
					if len(in.Groups) != 0 {
						t.Fatalf("Resolve(%q) returned groups %q with error %v", name, in.Groups, err)
					}
				})
			}
			// Names with filter metacharacters still find exactly their own entry.
			t.Run(fmt.Sprintf("%s/filter%d/literal", mode, fi), func(t *testing.T) {
				want := map[GroupSearch][]string{GroupSearchMember: {"stars"}, GroupSearchMemberOf: {"stars"}, GroupSearchMemberUID: {"pstars"}}
				mustResolve(t, r, "star*user", want[mode]...)
			})
		}
	}
}

func TestResolveBadUserNames(t *testing.T) {
	cfg := validConfig()
	cfg.BindPasswordFile = writeFile(t, "pw", "x")
	down := newCounter(t, "")
	cfg.URLs = []string{down.URL}
	r := newResolverT(t, cfg) // never connects: the name is refused first
	for _, tt := range []struct{ user, want string }{
		{"", "ldap: empty user name"},
		{"a\x00b", `ldap: user name "a\x00b" contains NUL`},
		{"\xffa", "not valid UTF-8"},
	} {
		_, err := r.Resolve(context.Background(), tt.user)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Resolve(%q) = %v, want %q", tt.user, err, tt.want)
		}
	}
	if n := down.conns.Load(); n != 0 {
		t.Errorf("bad names caused %d connections", n)
	}
}

func TestWrongBindPassword(t *testing.T) {
	s := newDirectory(t)
	const secret = "not-the-password-3141"
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(s, GroupSearchMember)
	next := newCounter(t, strings.TrimPrefix(s.URL, "ldap://"))
	cfg.URLs = []string{s.URL, next.URL}
	cfg.BindPasswordFile = pwFile
	r := newResolverT(t, cfg)
	_, err := r.Resolve(context.Background(), "alice")
	want := "ldap: bind as cn=usher,ou=services,dc=example,dc=org failed: invalid credentials"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), secret) {
		t.Fatalf("error reveals the password: %v", err)
	}
	if n := next.conns.Load(); n != 0 {
		t.Errorf("%d connections to the next server: a refused bind must not fail over to it", n)
	}

	// The file is read again for new connections: fixing it fixes the resolver.
	if err := os.WriteFile(pwFile, []byte(s.ServicePassword), 0o600); err != nil {
		t.Fatal(err)
	}
	mustResolve(t, r, "alice", "dev", "ops")
}

func TestBindPasswordFromEnv(t *testing.T) {
	s := newDirectory(t)
	t.Setenv("USHER_TEST_LDAP_PASSWORD", s.ServicePassword)
	cfg := baseConfig(s, GroupSearchMember)
	cfg.BindPasswordFile, cfg.BindPasswordEnv = "", "USHER_TEST_LDAP_PASSWORD"
	mustResolve(t, newResolverT(t, cfg), "alice", "dev", "ops")
}

func TestAnonymousIsRefusedByACL(t *testing.T) {
	s := newDirectory(t)
	cfg := baseConfig(s, GroupSearchMember)
	cfg.BindDN, cfg.BindPasswordFile = "", ""
	_, err := newResolverT(t, cfg).Resolve(context.Background(), "alice")
	// The harness lets anonymous users read nothing, not even the base:
	// an error, never an empty group list.
	want := "ldap: userbasedn ou=people,dc=example,dc=org does not exist on " + s.URL + ", or anonymous may not read it"
	if err == nil || err.Error() != want {
		t.Fatalf("anonymous lookup: err = %v, want %q", err, want)
	}
}

// deadAddr returns a loopback address that refuses connections for the
// rest of the test: a socket bound to it, which never listens, holds the
// port, so that no other process can listen there meanwhile.
func deadAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

func TestFailover(t *testing.T) {
	s := newDirectory(t)
	down, up := newCounter(t, ""), newCounter(t, strings.TrimPrefix(s.URL, "ldap://"))
	cfg := baseConfig(s, GroupSearchMember)
	cfg.URLs = []string{down.URL, up.URL}
	now := time.Unix(1_000_000, 0)
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return now }
	t.Cleanup(func() { r.Close() })

	mustResolve(t, r, "alice", "dev", "ops")
	if d, u := down.conns.Load(), up.conns.Load(); d != 1 || u != 1 {
		t.Fatalf("after first lookup: %d dials to the server that is down, %d to the one up; want 1 and 1", d, u)
	}
	// The server that is down is tried last for a while: a new connection goes
	// straight to the good one.
	r.pool.flush()
	mustResolve(t, r, "bob", "admins", "ops")
	if d, u := down.conns.Load(), up.conns.Load(); d != 1 || u != 2 {
		t.Fatalf("within %v: %d and %d dials, want the server that is down skipped", downFor, d, u)
	}
	// Later it is tried first again, in configuration order.
	now = now.Add(downFor + time.Second)
	r.pool.flush()
	mustResolve(t, r, "alice", "dev", "ops")
	if d, u := down.conns.Load(), up.conns.Load(); d != 2 || u != 3 {
		t.Fatalf("after %v: %d and %d dials, want the first server retried", downFor, d, u)
	}

	// No server at all: one error naming each.
	dead := "ldap://" + deadAddr(t)
	cfg.URLs = []string{dead, "ldap://" + deadAddr(t)}
	_, err = newResolverT(t, cfg).Resolve(context.Background(), "alice")
	if err == nil || !strings.HasPrefix(err.Error(), "ldap: cannot connect to any server: "+dead+": ") ||
		!strings.Contains(err.Error(), cfg.URLs[1]) || errors.Is(err, identity.ErrUnknownUser) {
		t.Fatalf("err = %v, want cannot connect naming both", err)
	}
}

func TestFailoverFromSilentServer(t *testing.T) {
	s := newDirectory(t)
	hole, _ := blackhole(t)
	cfg := baseConfig(s, GroupSearchMember)
	cfg.URLs = []string{"ldap://" + hole, s.URL}
	cfg.Timeout = time.Second
	r := newResolverT(t, cfg)
	// The first lookup spends its whole timeout on the silent server...
	if _, err := r.Resolve(context.Background(), "alice"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first lookup: err = %v, want a timeout", err)
	}
	// ...which is then tried last, so the next lookup succeeds.
	mustResolve(t, r, "alice", "dev", "ops")
}

func TestTLS(t *testing.T) {
	s := newDirectory(t)
	untrusted := slapdtest.UntrustedCAFile(t)
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{name: "starttls", edit: func(c *Config) { c.StartTLS, c.CAFile = true, s.CAFile }},
		{name: "ldaps", edit: func(c *Config) { c.URLs, c.CAFile = []string{s.LDAPSURL}, s.CAFile }},
		{name: "ldaps with server name", edit: func(c *Config) {
			c.URLs, c.CAFile, c.ServerName = []string{s.LDAPSURL}, s.CAFile, "localhost"
		}},
		{name: "starttls wrong CA", edit: func(c *Config) { c.StartTLS, c.CAFile = true, untrusted },
			wantErr: "certificate signed by unknown authority"},
		{name: "ldaps wrong CA", edit: func(c *Config) { c.URLs, c.CAFile = []string{s.LDAPSURL}, untrusted },
			wantErr: "certificate signed by unknown authority"},
		{name: "ldaps system CAs", edit: func(c *Config) { c.URLs = []string{s.LDAPSURL} },
			wantErr: "certificate"},
		{name: "ldaps wrong server name", edit: func(c *Config) {
			c.URLs, c.CAFile, c.ServerName = []string{s.LDAPSURL}, s.CAFile, "ldap.example.org"
		}, wantErr: "not ldap.example.org"},
		{name: "insecure skip verify", edit: func(c *Config) { c.URLs, c.InsecureSkipVerify = []string{s.LDAPSURL}, true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := baseConfig(s, GroupSearchMember)
			tt.edit(&cfg)
			r := newResolverT(t, cfg)
			in, err := r.Resolve(context.Background(), "alice")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve = %v, %v; want an error containing %q", in, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), s.ServicePassword) {
					t.Fatalf("error reveals the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := r.pool.idle[0]
			state, ok := c.l.TLSConnectionState()
			if !ok || !state.HandshakeComplete || state.Version < tls.VersionTLS12 {
				t.Fatalf("connection not protected by TLS 1.2+: ok=%v %+v", ok, state)
			}
		})
	}
	// The certificate error of ldaps:// can be matched.
	cfg := baseConfig(s, GroupSearchMember)
	cfg.URLs, cfg.CAFile = []string{s.LDAPSURL}, untrusted
	_, err := newResolverT(t, cfg).Resolve(context.Background(), "alice")
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Fatalf("errors.As(%v, *tls.CertificateVerificationError) = false", err)
	}
}

func TestOutageAndRecovery(t *testing.T) {
	s := newDirectory(t)
	r := newResolverT(t, baseConfig(s, GroupSearchMember))
	mustResolve(t, r, "alice", "dev", "ops")

	// Restarted between two lookups: the idle connection is dead, the
	// lookup still succeeds on a new one.
	s.Stop(t)
	s.Start(t)
	mustResolve(t, r, "alice", "dev", "ops")

	s.Stop(t)
	for range 3 {
		in, err := r.Resolve(context.Background(), "alice")
		if err == nil || errors.Is(err, identity.ErrUnknownUser) || len(in.Groups) != 0 {
			t.Fatalf("while slapd is down: %v, %v; want an error that is not unknown user", in, err)
		}
		if !strings.HasPrefix(err.Error(), "ldap: ") {
			t.Fatalf("err = %v, want the ldap: prefix", err)
		}
	}
	s.Start(t)
	mustResolve(t, r, "bob", "admins", "ops")
	if n := r.openConns(); n != 1 {
		t.Fatalf("%d open connections, want one", n)
	}
}

// blackhole accepts connections and never answers; each accepted
// connection is announced on the returned channel.
func blackhole(t testing.TB) (addr string, accepted <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String(), ch
}

func TestTimeoutAndCancellation(t *testing.T) {
	pw := writeFile(t, "pw", "x")
	// silent returns a configuration whose only server never answers, and
	// the channel announcing its connections.
	silent := func(t *testing.T) (Config, <-chan struct{}) {
		addr, accepted := blackhole(t)
		cfg := validConfig()
		cfg.URLs = []string{"ldap://" + addr}
		cfg.BindPasswordFile = pw
		return cfg, accepted
	}

	t.Run("timeout", func(t *testing.T) {
		cfg, _ := silent(t)
		cfg.Timeout = 100 * time.Millisecond
		_, err := newResolverT(t, cfg).Resolve(context.Background(), "alice")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 100ms (timeout)") {
			t.Fatalf("err = %v, want a timeout", err)
		}
	})
	t.Run("cancel during bind", func(t *testing.T) {
		cfg, accepted := silent(t)
		cfg.Timeout = time.Hour // only the cancellation can end the lookup
		r := newResolverT(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := r.Resolve(ctx, "alice")
			errc <- err
		}()
		<-accepted
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("cancel while waiting for a connection", func(t *testing.T) {
		cfg, accepted := silent(t)
		cfg.Timeout, cfg.PoolSize = time.Hour, 1
		r := newResolverT(t, cfg)
		holder, release := context.WithCancel(context.Background())
		defer release()
		done := make(chan struct{})
		go func() { r.Resolve(holder, "alice"); close(done) }()
		<-accepted // the only slot is taken
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.Resolve(ctx, "bob"); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		release()
		<-done
	})
}

func TestConcurrentLookups(t *testing.T) {
	s := newDirectory(t)
	for _, mode := range []GroupSearch{GroupSearchMember, GroupSearchMemberOf} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := baseConfig(s, mode)
			cfg.PoolSize = 3
			proxy := newCounter(t, strings.TrimPrefix(s.URL, "ldap://"))
			cfg.URLs = []string{proxy.URL}
			r := newResolverT(t, cfg)
			want := map[string][]string{"alice": {"dev", "ops"}, "bob": {"admins", "ops"}, "carol": {}}
			users := []string{"alice", "bob", "carol", "mallory"}
			var wg sync.WaitGroup
			errs := make(chan error, 16*40)
			for g := range 16 {
				wg.Go(func() {
					for i := range 40 {
						user := users[(g+i)%len(users)]
						in, err := r.Resolve(context.Background(), user)
						switch {
						case user == "mallory":
							if !errors.Is(err, identity.ErrUnknownUser) {
								errs <- fmt.Errorf("%s: %v, want unknown user", user, err)
							}
						case err != nil:
							errs <- fmt.Errorf("%s: %v", user, err)
						case !slices.Equal(in.Groups, want[user]):
							errs <- fmt.Errorf("%s: groups %q, want %q", user, in.Groups, want[user])
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if d, n := proxy.conns.Load(), r.openConns(); d > 3 || n > 3 {
				t.Errorf("%d dials, %d open connections: more than poolsize 3", d, n)
			}
		})
	}
}

func TestClose(t *testing.T) {
	s := newDirectory(t)
	r := newResolverT(t, baseConfig(s, GroupSearchMember))
	mustResolve(t, r, "alice", "dev", "ops")
	r.Close()
	if _, err := r.Resolve(context.Background(), "alice"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("after Close: %v, want an error", err)
	}
	if n := r.openConns(); n != 0 {
		t.Fatalf("OpenConns after Close = %d", n)
	}
}
