// Package slapdtest runs a real OpenLDAP slapd on loopback for tests.
//
// New writes a slapd.conf into a temporary directory (core, cosine,
// inetorgperson and nis schemas, an mdb database, the memberof overlay
// maintaining memberOf for groupOfNames), generates a CA and a server
// certificate for 127.0.0.1 and localhost, starts slapd as a child process
// listening on ldap:// (StartTLS capable) and ldaps:// on free loopback
// ports, waits until it answers, loads the base entries and stops the process
// by its pid when the test ends.
//
// Rules the harness keeps:
//   - It never touches a system slapd: its own config, database, pid file and
//     ports, all under t.TempDir(), and it only listens on 127.0.0.1.
//   - When slapd is not installed the test is skipped with a message saying
//     how to install it, or fails when the CI environment variable is set,
//     so a CI runner without slapd cannot pass silently.
//   - Stop and Start may be called mid-test to simulate an outage: the
//     database directory and the ports stay the same.
//
// The directory holds, under Suffix: PeopleDN, GroupsDN and the service
// account ServiceDN (with password ServicePassword, also written to
// ServicePasswordFile), which may read everything except passwords and has
// no size limit. RootDN may write. Anonymous users can read the root DSE only.
package slapdtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goldap "github.com/go-ldap/ldap/v3"
)

// Names of the entries every Server holds.
const (
	// Suffix is the naming context of the database.
	Suffix = "dc=example,dc=org"
	// RootDN is the database's root user, which may write anything.
	RootDN = "cn=admin," + Suffix
	// PeopleDN is the container for user entries.
	PeopleDN = "ou=people," + Suffix
	// GroupsDN is the container for group entries.
	GroupsDN = "ou=groups," + Suffix
	// ServiceDN is the non-root account a resolver binds as: it may read
	// every entry (not passwords) and has no size limit.
	ServiceDN = "cn=usher,ou=services," + Suffix
)

// InstallHint tells how to get slapd where it is missing.
const InstallHint = "install OpenLDAP's server: apt-get install slapd ldap-utils (Debian/Ubuntu), " +
	"dnf install openldap-servers (Fedora), or set SLAPD to the slapd binary"

// startTimeout bounds how long a start may take before the test fails.
const startTimeout = 15 * time.Second

// Server is one slapd child process and its data. The exported fields are
// set by New and do not change, including across Stop and Start.
type Server struct {
	// URL is the plain listener, ldap://127.0.0.1:PORT, which offers StartTLS.
	URL string
	// LDAPSURL is the TLS listener, ldaps://127.0.0.1:PORT.
	LDAPSURL string
	// CAFile is the PEM file of the CA that signed the server certificate
	// (valid for 127.0.0.1 and localhost); CAPEM is its content.
	CAFile string
	CAPEM  []byte
	// RootPassword is the password of RootDN.
	RootPassword string
	// ServicePassword is the password of ServiceDN. ServicePasswordFile
	// holds it followed by a newline, as secrets mounted from files often do.
	ServicePassword     string
	ServicePasswordFile string
	// Dir is the temporary directory holding config, certificates and data.
	Dir string

	bin  string
	conf string
	urls string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	output *syncBuffer
}

// New starts a slapd for the test and stops it when the test ends. It skips
// the test (or fails it when CI is set) if slapd is not installed.
func New(t testing.TB) *Server {
	t.Helper()
	bin, schemaDir, moduleDir := findSlapd()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("slapdtest: slapd not found and CI is set: %s", InstallHint)
		}
		t.Skipf("slapdtest: slapd not found, skipping: %s", InstallHint)
	}
	if schemaDir == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("slapdtest: OpenLDAP schema directory not found and CI is set: %s", InstallHint)
		}
		t.Skipf("slapdtest: OpenLDAP schema directory (core.schema) not found, skipping: %s", InstallHint)
	}

	dir := t.TempDir()
	s := &Server{
		Dir:                 dir,
		bin:                 bin,
		conf:                filepath.Join(dir, "slapd.conf"),
		RootPassword:        randomSecret(),
		ServicePassword:     randomSecret(),
		ServicePasswordFile: filepath.Join(dir, "service-password"),
	}
	var err error
	if s.CAFile, s.CAPEM, err = writeTLSFiles(dir); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	if err := os.WriteFile(s.ServicePasswordFile, []byte(s.ServicePassword+"\n"), 0o600); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	if err := os.WriteFile(s.conf, []byte(s.config(schemaDir, moduleDir)), 0o600); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	t.Cleanup(func() { s.stop() })

	// slapd cannot be handed a listening socket: its ports are reserved
	// (reservePort) so that no test takes them, even while it is stopped.
	// A process that is not a test may still bind one before slapd does,
	// so a failed first start is retried on new ports.
	for attempt := 1; ; attempt++ {
		plain, tls := reservePort(t), reservePort(t)
		s.URL = "ldap://" + plain
		s.LDAPSURL = "ldaps://" + tls
		s.urls = s.URL + "/ " + s.LDAPSURL + "/"
		err := s.start()
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(err.Error(), "already in use") {
			t.Fatalf("slapdtest: %v", err)
		}
	}
	s.AddLDIF(t, s.baseLDIF())
	return s
}

// Stop stops slapd (SIGTERM, then SIGKILL after five seconds) and waits
// for it to exit. The data stays; Start brings the same server back.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stop()
}

// Start starts a stopped server again on the same ports with the same data
// and waits until it answers.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("slapdtest: restart: %v", err)
	}
}

// Running reports whether the slapd process is running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Output returns what slapd has written to stdout and stderr so far, for
// failure messages.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.output == nil {
		return ""
	}
	return s.output.String()
}

// Dial returns a connection bound as RootDN, closed when the test ends.
func (s *Server) Dial(t testing.TB) *goldap.Conn {
	t.Helper()
	c, err := s.dialRoot()
	if err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// AddLDIF adds the entries of an LDIF text (see ParseLDIF) as RootDN, in
// order, through slapd, so overlays such as memberof see the additions.
func (s *Server) AddLDIF(t testing.TB, ldif string) {
	t.Helper()
	entries, err := ParseLDIF(ldif)
	if err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	s.Add(t, entries...)
}

// Add adds entries as RootDN, in order.
func (s *Server) Add(t testing.TB, entries ...Entry) {
	t.Helper()
	c, err := s.dialRoot()
	if err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	defer c.Close()
	for _, e := range entries {
		req := goldap.NewAddRequest(e.DN, nil)
		for _, a := range e.Attrs {
			req.Attribute(a.Name, a.Values)
		}
		if err := c.Add(req); err != nil {
			t.Fatalf("slapdtest: add %s: %v", e.DN, err)
		}
	}
}

// Delete deletes the entries with the given DNs as RootDN.
func (s *Server) Delete(t testing.TB, dns ...string) {
	t.Helper()
	c, err := s.dialRoot()
	if err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	defer c.Close()
	for _, dn := range dns {
		if err := c.Del(goldap.NewDelRequest(dn, nil)); err != nil {
			t.Fatalf("slapdtest: delete %s: %v", dn, err)
		}
	}
}

func (s *Server) dialRoot() (*goldap.Conn, error) {
	c, err := goldap.DialURL(s.URL, goldap.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}))
	if err != nil {
		return nil, err
	}
	c.SetTimeout(10 * time.Second)
	if err := c.Bind(RootDN, s.RootPassword); err != nil {
		c.Close()
		return nil, fmt.Errorf("bind as %s: %w", RootDN, err)
	}
	return c, nil
}

func (s *Server) start() error {
	s.mu.Lock()
	if s.cmd != nil {
		select {
		case <-s.done:
		default:
			s.mu.Unlock()
			return errors.New("slapd is already running")
		}
	}
	out := &syncBuffer{}
	cmd := exec.Command(s.bin, "-d", "0", "-h", s.urls, "-f", s.conf)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done, s.output = cmd, done, out
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("slapd exited during start (%v); output:\n%s", cmd.ProcessState, out.String())
		default:
		}
		if c, err := s.dialRoot(); err == nil {
			c.Close()
			return nil
		} else if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("slapd did not answer on %s within %v: %v; output:\n%s", s.URL, startTimeout, err, out.String())
		}
		time.Sleep(10 * time.Millisecond) // polling a child process; there is nothing to wait on
	}
}

func (s *Server) stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *Server) config(schemaDir, moduleDir string) string {
	var b strings.Builder
	for _, schema := range []string{"core", "cosine", "inetorgperson", "nis"} {
		fmt.Fprintf(&b, "include %s\n", filepath.Join(schemaDir, schema+".schema"))
	}
	fmt.Fprintf(&b, "pidfile %s\nargsfile %s\n", filepath.Join(s.Dir, "slapd.pid"), filepath.Join(s.Dir, "slapd.args"))
	if moduleDir != "" {
		fmt.Fprintf(&b, "modulepath %s\n", moduleDir)
		for _, m := range []string{"back_mdb", "memberof"} {
			if moduleExists(moduleDir, m) {
				fmt.Fprintf(&b, "moduleload %s\n", m)
			}
		}
	}
	fmt.Fprintf(&b, "TLSCACertificateFile %s\n", s.CAFile)
	fmt.Fprintf(&b, "TLSCertificateFile %s\n", filepath.Join(s.Dir, "server.pem"))
	fmt.Fprintf(&b, "TLSCertificateKeyFile %s\n", filepath.Join(s.Dir, "server-key.pem"))
	b.WriteString("access to dn.base=\"\" by * read\n")
	b.WriteString("access to dn.base=\"cn=Subschema\" by * read\n")
	b.WriteString("\ndatabase mdb\n")
	fmt.Fprintf(&b, "suffix %q\nrootdn %q\nrootpw %s\n", Suffix, RootDN, s.RootPassword)
	fmt.Fprintf(&b, "directory %s\n", filepath.Join(s.Dir, "data"))
	b.WriteString("maxsize 104857600\ndbnosync\n")
	b.WriteString("index objectClass eq\nindex uid,cn,memberUid,member eq\n")
	fmt.Fprintf(&b, "limits dn.exact=%q size=unlimited time=unlimited\n", ServiceDN)
	b.WriteString("access to attrs=userPassword by anonymous auth by * none\n")
	fmt.Fprintf(&b, "access to * by dn.exact=%q read by * none\n", ServiceDN)
	b.WriteString("overlay memberof\n")
	b.WriteString("memberof-group-oc groupOfNames\nmemberof-member-ad member\nmemberof-memberof-ad memberOf\n")
	b.WriteString("memberof-refint TRUE\nmemberof-dangling ignore\n")
	return b.String()
}

func (s *Server) baseLDIF() string {
	return fmt.Sprintf(`dn: %s
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: %s
objectClass: organizationalUnit
ou: people

dn: %s
objectClass: organizationalUnit
ou: groups

dn: ou=services,%s
objectClass: organizationalUnit
ou: services

dn: %s
objectClass: applicationProcess
objectClass: simpleSecurityObject
cn: usher
userPassword: %s
`, Suffix, PeopleDN, GroupsDN, Suffix, ServiceDN, s.ServicePassword)
}

// findSlapd returns the slapd binary, the schema directory and the module
// directory, each "" when not found (the module directory is optional:
// slapd may have back_mdb and memberof built in).
func findSlapd() (bin, schemaDir, moduleDir string) {
	if p := os.Getenv("SLAPD"); p != "" {
		bin = p
	} else if p, err := exec.LookPath("slapd"); err == nil {
		bin = p
	} else {
		for _, p := range []string{"/usr/sbin/slapd", "/usr/libexec/slapd", "/usr/local/libexec/slapd"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
				break
			}
		}
	}
	for _, d := range []string{"/etc/ldap/schema", "/etc/openldap/schema", "/usr/local/etc/openldap/schema"} {
		if _, err := os.Stat(filepath.Join(d, "core.schema")); err == nil {
			schemaDir = d
			break
		}
	}
	for _, d := range []string{"/usr/lib/ldap", "/usr/lib64/openldap", "/usr/lib/openldap", "/usr/libexec/openldap", "/usr/local/libexec/openldap"} {
		if moduleExists(d, "back_mdb") {
			moduleDir = d
			break
		}
	}
	return bin, schemaDir, moduleDir
}

func moduleExists(dir, name string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, name+"*.so*"))
	if len(m) > 0 {
		return true
	}
	m, _ = filepath.Glob(filepath.Join(dir, name+".la"))
	return len(m) > 0
}

// reservePort returns 127.0.0.1:PORT for a port nothing listens on,
// reserved for the rest of the test. It is below the kernel's ephemeral
// range, which port-0 listeners and outgoing connections draw from, so
// these never take it, and it is locked (flock on a file named after it,
// in a directory every slapdtest process shares) so that no other test
// picks it, also while slapd is stopped.
func reservePort(t testing.TB) string {
	t.Helper()
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 26000 {
				lo = n
			}
		}
	}
	dir := filepath.Join(os.TempDir(), "usher-slapdtest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	for range 1000 {
		// Clear of hack/e2e-cluster.sh's ports, the 12,000 below lo.
		port := strconv.Itoa(lo - 24000 + mathrand.IntN(12000))
		f, err := os.OpenFile(filepath.Join(dir, port), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatalf("slapdtest: %v", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close()
			continue
		}
		addr := "127.0.0.1:" + port
		l, err := net.Listen("tcp", addr)
		if err != nil {
			f.Close()
			continue
		}
		l.Close()
		t.Cleanup(func() { f.Close() })
		return addr
	}
	t.Fatal("slapdtest: found no free port to reserve")
	return ""
}

func randomSecret() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer safe for the writes of a child process and
// concurrent reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
