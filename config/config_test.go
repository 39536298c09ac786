package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/policy"
)

func mustParse(t *testing.T, src string) *config.Config {
	t.Helper()
	c, err := config.Parse("q.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func diagStrings(ds []config.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

func TestYuniKornACLPageExample(t *testing.T) {
	c := mustParse(t, `
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: test
            submitacl: "*"
            adminacl: sue dev,test
          - name: product
            submitacl: " product"
`)
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings: %v", diagStrings(c.Warnings))
	}
	p, err := c.Snapshot.Partition("default")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		queue, user string
		groups      []string
		action      policy.Action
		allowed     bool
	}{
		{"root.test", "sue", nil, policy.Admin, true},
		{"root.test", "john", []string{"dev"}, policy.Admin, true},
		{"root.test", "bob", []string{"test"}, policy.Admin, true},
		{"root.test", "bob", []string{"ops"}, policy.Admin, false},
		{"root.test", "anyone", nil, policy.Submit, true},
		{"root.product", "sue", nil, policy.Submit, false},
		{"root.product", "pat", []string{"product"}, policy.Submit, true},
		{"root", "sue", nil, policy.Submit, false},
	}
	for _, tt := range tests {
		d, err := p.Decide(tt.queue, acl.NewSubject(tt.user, tt.groups), tt.action)
		if err != nil || d.Allowed != tt.allowed {
			t.Errorf("%s %s %v on %s: %+v %v", tt.user, tt.action, tt.groups, tt.queue, d, err)
		}
	}
}

func TestErrorsArePositioned(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"two spaces", `partitions:
  - name: default
    queues:
      - name: root
        submitacl: u1  g1
`, []string{"q.yaml:5:23: submitacl \"u1  g1\": more than one space"}},
		{"quoted two spaces", `partitions:
  - name: default
    queues:
      - name: root
        adminacl: "sue dev test"
`, []string{"q.yaml:5:27: adminacl \"sue dev test\": more than one space"}},
		{"bad name in ACL", `partitions:
  - name: default
    queues:
      - name: root
        submitacl: alice,b*b
`, []string{"q.yaml:5:26: submitacl \"alice,b*b\": name \"b*b\" contains '*'"}},
		{"unknown key with hint", `partitions:
  - name: default
    queues:
      - name: root
        submitACL: alice
`, []string{`q.yaml:5:9: queue: unknown key "submitACL" (did you mean "submitacl"?)`}},
		{"unknown top key", `partition:
  - name: default
`, []string{`q.yaml:1:1: configuration: unknown key "partition"`, "q.yaml:1:1: missing partitions"}},
		{"duplicate siblings", `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a
          - name: A
`, []string{"q.yaml:7:19: queue root.a is defined twice (first at line 6"}},
		{"bad queue name", `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a.b
`, []string{`q.yaml:6:19: queue name "a.b" is invalid`}},
		{"test resolver's bad group at its node", `partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        alice: [dev, "b*d"]
    queues:
      - name: root
`, []string{`q.yaml:6:22: users: groups of alice: name "b*d" contains '*'`}},
		{"yaml syntax", "partitions:\n  - name: default\n    queues: [a\n", []string{"q.yaml:2:1: YAML: did not find expected ',' or ']'"}},
		{"empty", "", []string{"q.yaml: empty configuration"}},
		{"not a mapping", "- a\n- b\n", []string{"q.yaml:1:1: the configuration must be a mapping"}},
		{"duplicate key", `partitions:
  - name: default
    name: other
    queues:
      - name: root
`, []string{`q.yaml:3:5: partition: key "name" is repeated (first at line 2)`}},
		{"parent false with children", `partitions:
  - name: default
    queues:
      - name: root
        parent: false
        queues:
          - name: a
`, []string{"q.yaml:5:17: queue root says parent: false but has child queues"}},
		{"bad resolver", `partitions:
  - name: default
    usergroupresolver:
      type: kerberos
    queues:
      - name: root
`, []string{`q.yaml:4:13: unknown usergroupresolver type "kerberos"`}},
		{"bad groups mode", `partitions:
  - name: default
    groups: both
    queues:
      - name: root
`, []string{`q.yaml:3:13: unknown groups mode "both"`}},
		{"many errors at once", `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "a  b"
        adminacl: "c  d"
`, []string{"q.yaml:5:23:", "q.yaml:6:22:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("q.yaml", []byte(tt.src))
			var ie *config.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("want an *InvalidError, got %v", err)
			}
			got := diagStrings(ie.Diagnostics)
			if len(got) < len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("diagnostic %d = %q, want prefix %q", i, got[i], w)
				}
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	c := mustParse(t, `partitions:
  - name: default
    queues:
      - name: root
        adminacl: " admins"
        queues:
          - name: a
            submitacl: admins
          - name: b
            submitacl: alice,*
          - name: c
            submitacl: "bob,bob Dev,dev"
          - name: d
            submitacl: " "
`)
	got := strings.Join(diagStrings(c.Warnings), "\n")
	for _, w := range []string{
		`q.yaml:8:24: warning: submitacl "admins" lists admins as a user, but admins is a group elsewhere`,
		`q.yaml:10:30: warning: submitacl "alice,*": "*" mixed with users is not a wildcard`,
		`q.yaml:12:29: warning: submitacl "bob,bob Dev,dev": duplicate user "bob"`,
		`q.yaml:12:24: warning: submitacl "bob,bob Dev,dev": group "dev" differs from "Dev"`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing warning %q in\n%s", w, got)
		}
	}
	// root's adminacl names a group, so d is reachable by admins: no leaf warning.
	if strings.Contains(got, "nobody can submit") {
		t.Errorf("unexpected leaf warning:\n%s", got)
	}
	c = mustParse(t, `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: closed
            submitacl: " "
`)
	if got := diagStrings(c.Warnings); len(got) != 1 || !strings.HasPrefix(got[0], "q.yaml:6:19: warning: leaf queue root.closed: nobody can submit") {
		t.Fatalf("got %q", got)
	}
}

func TestResolverSettings(t *testing.T) {
	dir := t.TempDir()
	groupsFile := filepath.Join(dir, "groups.txt")
	if err := os.WriteFile(groupsFile, []byte("alice: dev, ops\nbob:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "q.yaml")
	src := `partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: file
      file: groups.txt
      cache:
        positivettl: 10m
        negativettl: 5s
    queues:
      - name: root
        submitacl: dev
  - name: gpu
    adminacl: carol
    usergroupresolver:
      type: test
      users:
        carol: [ml]
    queues:
      - name: root
`
	if err := os.WriteFile(cfgFile, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Partitions[0]
	if p.Groups != identity.ModeMerge || p.Resolver.Type != "file" || p.Resolver.File != groupsFile || p.Resolver.Table == nil {
		t.Fatalf("partition settings: %+v", p)
	}
	if p.Resolver.Cache.PositiveTTL.Minutes() != 10 || p.Resolver.Cache.NegativeTTL.Seconds() != 5 {
		t.Fatalf("cache settings: %+v", p.Resolver.Cache)
	}
	if got := c.Partitions[1].Resolver.Users["carol"]; len(got) != 1 || got[0] != "ml" {
		t.Fatalf("test users: %v", got)
	}
	// "dev" is known to the file resolver as a group: the unquoted ACL is a trap.
	w := diagStrings(c.Warnings)
	if len(w) == 0 || !strings.Contains(strings.Join(w, "\n"), `lists dev as a user, but dev is a group`) {
		t.Fatalf("warnings %q", w)
	}

	bad := strings.Replace(src, "groups.txt", "missing.txt", 1)
	bad = strings.Replace(bad, "positivettl: 10m", "positivettl: soon", 1)
	_, err = config.Parse("q.yaml", []byte(bad))
	if err == nil || !strings.Contains(err.Error(), "missing.txt") || !strings.Contains(err.Error(), "cache") {
		t.Fatalf("got %v", err)
	}
	abs := strings.Replace(src, "groups.txt", groupsFile, 1)
	_, err = config.Parse("q.yaml", []byte(strings.Replace(abs, "negativettl: 5s", "negativettl: 5s\n        ttl: 1s", 1)))
	if err == nil || err.Error() != `q.yaml:10:9: cache: unknown key "ttl" (known keys: maxentries, negativettl, positivettl, stalettl)` {
		t.Fatalf("got %v", err)
	}
}

func TestYuniKornSchemaKeysAccepted(t *testing.T) {
	c := mustParse(t, `partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    limits:
      - limit: one
        users: [alice]
        maxapplications: 2
    nodesortpolicy:
      type: binpacking
    queues:
      - name: root
        parent: true
        submitacl: "*"
        properties:
          application.sort.policy: fifo
        resources:
          guaranteed: {memory: 1G}
        maxapplications: 10
        childtemplate:
          maxapplications: 2
`)
	if c.Snapshot == nil {
		t.Fatal("not compiled")
	}
}

func TestDefault(t *testing.T) {
	c := config.Default()
	p, err := c.Snapshot.Partition("default")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := p.Decide("root", acl.NewSubject("anyone", nil), policy.Submit); !d.Allowed {
		t.Fatal("the default configuration lets everyone submit to root")
	}
	if len(c.Warnings) != 0 {
		t.Fatalf("default has warnings: %v", c.Warnings)
	}
}

func TestLoadLimits(t *testing.T) {
	if _, err := config.Load(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestLoadBoundsFilesThatDoNotSayTheirSize has Load read files whose
// size the file system does not report (a device, a pipe): reading stops
// past MaxFileSize with the size error, where trusting the reported size
// (0) read /dev/zero until memory ran out.
func TestLoadBoundsFilesThatDoNotSayTheirSize(t *testing.T) {
	// Reading stops at the size cap or, on a machine too busy to read the
	// cap within the deadline, at the deadline: bounded either way.
	bounded := func(err error) bool {
		return err != nil && (strings.Contains(err.Error(), "larger than the") || strings.Contains(err.Error(), "not read within"))
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := config.Load("/dev/zero")
	if !bounded(err) {
		t.Fatalf("Load(/dev/zero) = %v, want the size limit or the deadline", err)
	}
	// A resolver's file is read the same way.
	dir := t.TempDir()
	conf := filepath.Join(dir, "q.yaml")
	src := "partitions:\n  - name: default\n    usergroupresolver:\n      type: file\n      file: /dev/zero\n    queues:\n      - name: root\n"
	if err := os.WriteFile(conf, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = config.Load(conf)
	if !bounded(err) {
		t.Fatalf("a resolver file of /dev/zero: %v, want the size limit or the deadline", err)
	}
}

// An ACL entry YuniKorn's ACL parser drops (a user outside
// ^[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?$, a group outside ^[_a-zA-Z][a-zA-Z0-9_-]*$)
// is a warning at its ACL: usher grants by it, YuniKorn does not.
func TestLintNamesYuniKornDrops(t *testing.T) {
	c := mustParse(t, `
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "john.doe@EXAMPLE.COM,_svc$ dev,data_eng-2"
        adminacl: "system:serviceaccount:spark:driver team.a,system:authenticated,9lives"
`)
	got := strings.Join(diagStrings(c.Warnings), "\n")
	for _, want := range []string{
		`q.yaml:7:19: warning: adminacl "system:serviceaccount:spark:driver team.a,system:authenticated,9lives": YuniKorn's ACL parser drops user "system:serviceaccount:spark:driver"`,
		`drops group "team.a" (it keeps only ^[_a-zA-Z][a-zA-Z0-9_-]*$), so in YuniKorn this entry grants nothing`,
		`drops group "system:authenticated"`, `drops group "9lives"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "YuniKorn's ACL parser drops"); n != 4 {
		t.Errorf("%d warnings about dropped names, want 4 (none for the submitacl):\n%s", n, got)
	}
}
