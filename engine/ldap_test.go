package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/hack/slapdtest"
	"github.com/usherhq/usher/identity"
)

// The tests in this file run a real slapd on loopback (slapdtest): they are
// skipped where slapd is not installed, and fail when CI is set.

// directory is the data of the tests, added to a fresh slapd:
//
//	alice  dev ops
//	bob    admins ops
//	carol  dev
//	dave   dev
var directory = ldapPerson("alice") + ldapPerson("bob") + ldapPerson("carol") + ldapPerson("dave") +
	ldapGroup("dev", "alice", "carol", "dave") + ldapGroup("ops", "alice", "bob") + ldapGroup("admins", "bob")

func ldapPerson(uid string) string {
	return fmt.Sprintf("\ndn: uid=%[1]s,%[2]s\nobjectClass: inetOrgPerson\nuid: %[1]s\ncn: %[1]s\nsn: %[1]s\n", uid, slapdtest.PeopleDN)
}

func ldapGroup(cn string, members ...string) string {
	s := fmt.Sprintf("\ndn: cn=%s,%s\nobjectClass: groupOfNames\ncn: %s\n", cn, slapdtest.GroupsDN, cn)
	for _, m := range members {
		s += fmt.Sprintf("member: uid=%s,%s\n", m, slapdtest.PeopleDN)
	}
	return s
}

// newDirectory starts a slapd holding directory.
func newDirectory(t testing.TB) *slapdtest.Server {
	t.Helper()
	s := slapdtest.New(t)
	s.AddLDIF(t, directory)
	return s
}

// ldapOpts are the parts of a partition's ldap configuration the tests
// vary.
type ldapOpts struct {
	url          string // default: the server's plain URL
	passwordFile string // default: the service account's
	search       string // groupsearch; default member
	timeout      string // default 2s
	cache        string // the cache block's flow mapping, default {}
}

// ldapPartition renders one partition using the ldap resolver, with the
// queues every test uses:
//
//	root.dev     " dev"
//	root.ops     " ops"
//	root.admins  " admins"
//	root.gpu     " gpu"
//	root.k8s     " system:authenticated"
func ldapPartition(s *slapdtest.Server, name, groups string, o ldapOpts) string {
	if o.url == "" {
		o.url = s.URL
	}
	if o.passwordFile == "" {
		o.passwordFile = s.ServicePasswordFile
	}
	if o.search == "" {
		o.search = "member"
	}
	if o.timeout == "" {
		o.timeout = "2s"
	}
	if o.cache == "" {
		o.cache = "{}"
	}
	groupBase := "\n          groupbasedn: " + slapdtest.GroupsDN
	if o.search == "memberof" {
		groupBase = ""
	}
	mode := ""
	if groups != "" {
		mode = "\n    groups: " + groups
	}
	return fmt.Sprintf(`
  - name: %s%s
    usergroupresolver:
      type: ldap
      ldap:
          urls: [%q]
          binddn: %s
          bindpasswordfile: %s
          userbasedn: %s
          groupsearch: %s%s
          timeout: %s
      cache: %s
    queues:
      - name: root
        queues:
          - name: dev
            submitacl: " dev"
          - name: ops
            submitacl: " ops"
          - name: admins
            submitacl: " admins"
          - name: gpu
            submitacl: " gpu"
          - name: k8s
            submitacl: " system:authenticated"
`, name, mode, o.url, slapdtest.ServiceDN, o.passwordFile, slapdtest.PeopleDN, o.search, groupBase, o.timeout, o.cache)
}

// ldapEngine writes a configuration of the given partitions to a file,
// loads it as usher does and returns an engine for it.
func ldapEngine(t testing.TB, partitions ...string) *engine.Generation {
	t.Helper()
	path := filepath.Join(t.TempDir(), "usher.yaml")
	if err := os.WriteFile(path, []byte("partitions:"+strings.Join(partitions, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	e, err := engine.New(cfg, nil)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	return e
}

// trail renders the groups of an identity with their sources: "dev=ldap ops=ldap".
func trail(in identity.Info) string {
	var parts []string
	for i, g := range in.Groups {
		parts = append(parts, g+"="+string(in.SourceOf(i)))
	}
	return strings.Join(parts, " ")
}

// waitUntil polls cond every 10ms for up to 10 seconds. It is for waiting
// on a child process, a coarse clock or a background refresh, where there
// is nothing to block on.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLDAPGroupsDecide(t *testing.T) {
	s := newDirectory(t)
	e := ldapEngine(t,
		ldapPartition(s, "default", "", ldapOpts{}),
		ldapPartition(s, "merged", "merge", ldapOpts{search: "memberof"}),
		ldapPartition(s, "resolved", "resolve", ldapOpts{}),
	)
	k8s := []string{"system:authenticated"}
	tests := []struct {
		name    string
		req     engine.Request
		allowed bool
		trail   string
	}{
		{"alice is in dev", engine.Request{Queue: "root.dev", User: "alice"}, true, "dev=ldap ops=ldap"},
		{"bob is not in dev", engine.Request{Queue: "root.dev", User: "bob"}, false, "admins=ldap ops=ldap"},
		{"bob is in admins", engine.Request{Queue: "root.admins", User: "bob"}, true, "admins=ldap ops=ldap"},
		{"given: supplied groups skip the directory", engine.Request{Queue: "root.dev", User: "alice", Groups: k8s}, false, "system:authenticated=given"},
		{"given: supplied groups decide", engine.Request{Queue: "root.k8s", User: "alice", Groups: k8s}, true, "system:authenticated=given"},

		{"merge: directory group decides", engine.Request{Partition: "merged", Queue: "root.dev", User: "alice", Groups: k8s}, true,
			"system:authenticated=given dev=ldap ops=ldap"},
		{"merge: given group decides", engine.Request{Partition: "merged", Queue: "root.k8s", User: "bob", Groups: k8s}, true,
			"system:authenticated=given admins=ldap ops=ldap"},
		{"merge: a group both supplied and in the directory stays given", engine.Request{Partition: "merged", Queue: "root.ops", User: "alice", Groups: []string{"ops"}}, true,
			"ops=given dev=ldap"},
		{"merge: no groups supplied", engine.Request{Partition: "merged", Queue: "root.admins", User: "bob"}, true, "admins=ldap ops=ldap"},
		{"merge: supplied groups grant nothing the directory does not", engine.Request{Partition: "merged", Queue: "root.gpu", User: "carol", Groups: k8s}, false,
			"system:authenticated=given dev=ldap"},

		{"resolve: supplied groups are ignored", engine.Request{Partition: "resolved", Queue: "root.admins", User: "alice", Groups: []string{"admins"}}, false, "dev=ldap ops=ldap"},
		{"resolve: the directory decides", engine.Request{Partition: "resolved", Queue: "root.dev", User: "carol", Groups: k8s}, true, "dev=ldap"},
		{"resolve: a forged group does not help", engine.Request{Partition: "resolved", Queue: "root.dev", User: "bob", Groups: []string{"dev"}}, false, "admins=ldap ops=ldap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Check(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.Allowed != tt.allowed {
				t.Errorf("allowed = %v, want %v: %s", res.Allowed, tt.allowed, res.Reason())
			}
			if got := trail(res.Identity); got != tt.trail {
				t.Errorf("groups %q, want %q", got, tt.trail)
			}
			if res.Identity.User != tt.req.User {
				t.Errorf("identity user %q, want %q", res.Identity.User, tt.req.User)
			}
		})
	}

	// Explain says which directory group decided.
	res, steps, err := e.Explain(context.Background(), engine.Request{Queue: "root.dev", User: "alice"})
	if err != nil || !res.Allowed || res.By.Match.Name != "dev" || len(steps) == 0 {
		t.Fatalf("Explain = %+v, %d steps, %v; want allowed by group dev", res, len(steps), err)
	}
}

// A user name built to widen the LDAP filter matches nobody: names with
// "*" are refused before the directory is asked, the others are escaped
// and find no user. Either way the request is denied with an error, even
// when it brings a group that would allow it.
func TestLDAPFilterInjection(t *testing.T) {
	s := newDirectory(t)
	e := ldapEngine(t,
		ldapPartition(s, "default", "", ldapOpts{}),
		ldapPartition(s, "merged", "merge", ldapOpts{search: "memberof"}),
	)
	tests := []struct {
		user    string
		unknown bool // reached the directory, which knows no such user
	}{
		{"*)(uid=*", false},
		{"alice)(|(uid=*", false},
		{"*", false},
		{"ali*", false},
		{"alice)(uid=bob", true},
		{"alice)(|(uid=bob)", true},
		{"(uid=alice)", true},
		{"alice)", true},
		{"bob))(|(objectClass=person)", true},
		{`alice\29`, true},
		{"ALICE", true},
	}
	for _, part := range []string{"default", "merged"} {
		for _, tt := range tests {
			t.Run(part+"/"+tt.user, func(t *testing.T) {
				before := e.CacheStats()[part].Calls
				req := engine.Request{Partition: part, Queue: "root.dev", User: tt.user}
				if part == "merged" {
					req.Groups = []string{"dev"} // merge must not fall back to the given groups
				}
				res, err := e.Check(context.Background(), req)
				if err == nil || res.Allowed || len(res.Identity.Groups) != 0 {
					t.Fatalf("Check(%q) = %+v, %v; want an error and a denial", tt.user, res, err)
				}
				if got := errors.Is(err, identity.ErrUnknownUser); got != tt.unknown {
					t.Fatalf("err = %v; unknown user: %v, want %v", err, got, tt.unknown)
				}
				calls := e.CacheStats()[part].Calls - before
				if want := map[bool]uint64{true: 1, false: 0}[tt.unknown]; calls != want {
					t.Fatalf("%d directory lookups, want %d", calls, want)
				}
			})
		}
	}
}

// A wrong bind password is a clear error and every request that needs the
// directory is denied: usher fails closed.
func TestLDAPWrongBindPassword(t *testing.T) {
	s := newDirectory(t)
	const secret = "wrong-password-2718"
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := ldapEngine(t,
		ldapPartition(s, "default", "", ldapOpts{passwordFile: pw}),
		ldapPartition(s, "merged", "merge", ldapOpts{passwordFile: pw}),
	)
	for _, req := range []engine.Request{
		{Queue: "root.dev", User: "alice"},
		{Partition: "merged", Queue: "root.k8s", User: "alice", Groups: []string{"system:authenticated"}},
	} {
		res, err := e.Check(context.Background(), req)
		want := "ldap: bind as " + slapdtest.ServiceDN + " failed: invalid credentials"
		if err == nil || !strings.Contains(err.Error(), want) || res.Allowed {
			t.Fatalf("Check(%+v) = allowed %v, %v; want a denial and %q", req, res.Allowed, err, want)
		}
		if !strings.Contains(err.Error(), "alice") {
			t.Errorf("err = %v, want it to name the user", err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error reveals the password: %v", err)
		}
	}
	// Groups supplied in the default mode need no directory.
	res, err := e.Check(context.Background(), engine.Request{Queue: "root.k8s", User: "alice", Groups: []string{"system:authenticated"}})
	if err != nil || !res.Allowed {
		t.Fatalf("given groups: %+v, %v", res, err)
	}
}

// A directory that accepts connections and never answers costs a request
// the ldap timeout, not more, and denies it with an error naming the
// setting.
func TestLDAPSilentDirectory(t *testing.T) {
	s := newDirectory(t)
	silent := newProxy(t, s.URL) // never opened
	e := ldapEngine(t, ldapPartition(s, "default", "", ldapOpts{url: "ldap://" + silent.addr, timeout: "200ms"}))
	start := time.Now()
	res, err := e.Check(context.Background(), engine.Request{Queue: "root.dev", User: "alice"})
	if err == nil || res.Allowed || !strings.Contains(err.Error(), "timed out after 200ms (timeout)") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Check = allowed %v, %v; want a denial and the ldap timeout", res.Allowed, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// An outage with stalettl: users seen before keep their last groups, users
// never seen are denied, and the directory coming back is noticed.
func TestLDAPOutage(t *testing.T) {
	s := newDirectory(t)
	e := ldapEngine(t, ldapPartition(s, "default", "", ldapOpts{
		cache: "{positivettl: 200ms, negativettl: 500ms, stalettl: 1m}",
	}))
	ctx := context.Background()
	stats := func() string { return fmt.Sprintf("%+v", e.CacheStats()["default"]) }
	check := func(user, queue string) (engine.Result, error) {
		return e.Check(ctx, engine.Request{Queue: queue, User: user})
	}

	if res, err := check("alice", "root.dev"); err != nil || !res.Allowed {
		t.Fatalf("before the outage: %+v, %v", res, err)
	}

	s.Stop(t)
	// Past positivettl alice's answer has expired; asking again fails, and
	// the last good answer keeps deciding.
	waitUntil(t, "alice is served stale groups", func() bool {
		res, err := check("alice", "root.dev")
		if err != nil || !res.Allowed || trail(res.Identity) != "dev=ldap ops=ldap" {
			t.Fatalf("during the outage alice got %+v, %v; want her last groups", res, err)
		}
		return e.CacheStats()["default"].StaleHits > 0
	})
	if st := e.CacheStats()["default"]; st.Failures == 0 {
		t.Fatalf("stats %s: want failed calls answered with the last good groups", stats())
	}
	if res, err := check("alice", "root.admins"); err != nil || res.Allowed {
		t.Fatalf("stale groups grant only what they granted: %+v, %v", res, err)
	}

	// A user never seen before has no groups to fall back on.
	before := e.CacheStats()["default"]
	res, err := check("dave", "root.dev")
	if err == nil || res.Allowed || errors.Is(err, identity.ErrUnknownUser) || !strings.Contains(err.Error(), "ldap: ") {
		t.Fatalf("new user during the outage: %+v, %v; want a denial with an ldap error that is not unknown user", res, err)
	}
	// ... and the failure is remembered for negativettl: no second call.
	res, err2 := check("dave", "root.dev")
	after := e.CacheStats()["default"]
	if err2 == nil || res.Allowed || err2.Error() != err.Error() {
		t.Fatalf("second try: %+v, %v; want the cached error %v", res, err2, err)
	}
	if after.Calls-before.Calls != 1 || after.NegativeHits-before.NegativeHits != 1 {
		t.Fatalf("stats before %+v after %+v: want one call and one negative hit", before, after)
	}

	// Recovery: the directory is back, with alice and dave in a new group.
	s.Start(t)
	s.AddLDIF(t, ldapGroup("gpu", "alice", "dave"))
	waitUntil(t, "dave's failure expires and a fresh lookup succeeds", func() bool {
		res, err := check("dave", "root.gpu")
		return err == nil && res.Allowed && trail(res.Identity) == "dev=ldap gpu=ldap"
	})
	waitUntil(t, "alice's stale answer is refreshed", func() bool {
		res, err := check("alice", "root.gpu")
		if err != nil {
			t.Fatalf("alice after the outage: %v", err)
		}
		return res.Allowed && trail(res.Identity) == "dev=ldap gpu=ldap ops=ldap"
	})
	// Fresh again: lookups are hits, not stale answers.
	st := e.CacheStats()["default"]
	if res, err := check("alice", "root.dev"); err != nil || !res.Allowed {
		t.Fatalf("after recovery: %+v, %v", res, err)
	}
	if now := e.CacheStats()["default"]; now.StaleHits != st.StaleHits {
		t.Fatalf("stale answers after recovery: %s", stats())
	}
}

// Concurrent requests for a user that is not cached, while the directory
// is slow to answer, make one directory query.
func TestLDAPConcurrentMissesOneQuery(t *testing.T) {
	s := newDirectory(t)
	slow := newProxy(t, s.URL)
	e := ldapEngine(t, ldapPartition(s, "default", "", ldapOpts{url: "ldap://" + slow.addr, timeout: "10s"}))
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			res, err := e.Check(context.Background(), engine.Request{Queue: "root.dev", User: "alice"})
			switch {
			case err != nil:
				errs <- err
			case !res.Allowed || trail(res.Identity) != "dev=ldap ops=ldap":
				errs <- fmt.Errorf("got %+v", res)
			}
		})
	}
	// Every request is waiting, and the one lookup is held up in the proxy.
	waitUntil(t, "all requests wait for the directory", func() bool {
		return e.CacheStats()["default"].Misses == n && slow.accepted.Load() == 1
	})
	slow.open()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := e.CacheStats()["default"]
	if st.Calls != 1 || st.Failures != 0 {
		t.Fatalf("stats %+v: want %d requests to share one directory lookup", st, n)
	}
	if got := slow.accepted.Load(); got != 1 {
		t.Fatalf("%d connections to the directory, want 1", got)
	}
}

// proxy forwards loopback TCP connections to an LDAP server once opened;
// until then it accepts them and holds them, like a directory that is slow
// (or, never opened, silent).
type proxy struct {
	addr     string
	accepted atomic.Int32
	gate     chan struct{}
	once     sync.Once
}

func (p *proxy) open() { p.once.Do(func() { close(p.gate) }) }

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: l.Addr().String(), gate: make(chan struct{})}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	// track keeps c to be closed at cleanup, or closes it if that has
	// already happened.
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			c.Close()
			return
		}
		conns = append(conns, c)
	}
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			track(c)
			wg.Go(func() {
				select {
				case <-p.gate:
				case <-stop:
					return
				}
				up, err := net.Dial("tcp", strings.TrimPrefix(target, "ldap://"))
				if err != nil {
					c.Close()
					return
				}
				track(up)
				var pipes sync.WaitGroup
				pipes.Go(func() { io.Copy(up, c); up.Close() })
				pipes.Go(func() { io.Copy(c, up); c.Close() })
				pipes.Wait()
			})
		}
	})
	t.Cleanup(func() {
		close(stop)
		l.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}
