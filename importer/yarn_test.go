package importer_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/importer"
	"github.com/usherhq/usher/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const examples = "../examples/yarn/"

func read(t *testing.T, path string) *importer.Source {
	t.Helper()
	s, err := importer.ReadSource(path)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

func src(name, data string) *importer.Source { return &importer.Source{Name: name, Data: []byte(data)} }

// imported imports files and loads the YAML written, as usher would.
func imported(t *testing.T, f importer.YARNFiles) (*importer.Config, *config.Config, []byte) {
	t.Helper()
	c, err := importer.YARN(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("imported.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return c, cfg, out
}

func warnings(c *importer.Config) string {
	var b strings.Builder
	for _, w := range c.Warnings {
		b.WriteString(w.String() + "\n")
	}
	return b.String()
}

type queueCase struct {
	queue  string
	user   string
	groups []string
	action policy.Action
	allow  bool
}

// checkQueues compares queue decisions of an imported configuration with
// what YARN's documented rules give: a queue's ACL or any ancestor's allows
// (bottom-up to root), administer implies submit, yarn.admin.acl is admin
// everywhere.
func checkQueues(t *testing.T, cfg *config.Config, cases []queueCase) {
	t.Helper()
	for _, c := range cases {
		p, err := cfg.Snapshot.Partition("")
		if err != nil {
			t.Fatal(err)
		}
		d, err := p.Decide(c.queue, acl.NewSubject(c.user, c.groups), c.action)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != c.allow {
			t.Errorf("%s %v %s: allowed %v, want %v (%s)", c.user, c.action, c.queue, d.Allowed, c.allow, d.Reason())
		}
	}
}

type appCase struct {
	name   string
	app    application.Application
	user   string
	groups []string
	action application.Action
	target string
	allow  bool
}

func checkApps(t *testing.T, cfg *config.Config, cases []appCase) {
	t.Helper()
	cp, _ := cfg.Snapshot.Partition("")
	p := application.Policy{Partition: cp, Defaults: cfg.Partitions[0].Applications}
	for _, c := range cases {
		d, err := p.Decide(c.app, acl.NewSubject(c.user, c.groups), c.action, c.target)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d.Allowed != c.allow {
			t.Errorf("%s: allowed %v, want %v: %s", c.name, d.Allowed, c.allow, d.Reason())
		}
	}
}

// The second example of the "Managing YARN ACLs" guide as a fair-scheduler.xml: the stories of
// "Moving the Application and Viewing the Log in the Queue Test" hold on the
// imported configuration.
func TestFairSchedulerYARNGuide(t *testing.T) {
	c, cfg, _ := imported(t, importer.YARNFiles{FairScheduler: read(t, examples+"fair-scheduler.xml"), YARNSite: read(t, examples+"yarn-site.xml")})
	// The queues and ACLs import without warnings; the placement policy
	// (specified, reject) has no exact YuniKorn equivalent, and each
	// difference is said once, as is Marketing's weight.
	var other []string
	for _, w := range c.Warnings {
		if !strings.Contains(w.String(), "placement rule") && !strings.Contains(w.String(), "placement rules are imported") &&
			!strings.Contains(w.String(), "fair-scheduler.xml:14:7: warning: queue root.marketing: weight is not imported") {
			other = append(other, w.String())
		}
	}
	if len(other) > 0 || len(c.Warnings) != 4 {
		t.Errorf("a complete, explicit configuration imports without warnings but the placement policy's three and the weight:\n%s", warnings(c))
	}
	jane := []string{"jane", "others"}
	checkQueues(t, cfg, []queueCase{
		{"root.marketing", "john", nil, policy.Submit, true},
		{"root.marketing", "jane", jane, policy.Admin, true},               // aclAdministerApps " others"
		{"root.marketing", "ann", []string{"others"}, policy.Submit, true}, // administer implies submit
		{"root.marketing", "ann", nil, policy.Submit, false},               // root is " ": nothing inherited
		{"root.dev", "jane", nil, policy.Admin, true},
		{"root.dev", "john", nil, policy.Submit, false},
		{"root.datascience.test", "john", nil, policy.Submit, true},
		{"root.datascience.test", "jane", jane, policy.Submit, false},
		{"root.datascience", "bob", nil, policy.Admin, true}, // yarn.admin.acl
	})
	app := application.Application{ID: "application_1536220066338_0002", Owner: "john", Queue: "root.Datascience.Test", ViewACL: aclOf(t, "jane")}
	checkApps(t, cfg, []appCase{
		{"john views his logs", app, "john", nil, application.View, "", true},
		{"jane may not move to Marketing", app, "jane", jane, application.Move, "root.Marketing", false},
		{"jane may not kill", app, "jane", jane, application.Kill, "", false},
		{"jane views through acl-view-job", app, "jane", jane, application.View, "", true},
		{"bob moves to Marketing", app, "bob", nil, application.Move, "root.Marketing", true},
	})
}

// The first example of the "Managing YARN ACLs" guide as a capacity-scheduler.xml: the stories of
// "Killing an Application in the Queue Production".
func TestCapacitySchedulerYARNGuide(t *testing.T) {
	c, cfg, _ := imported(t, importer.YARNFiles{CapacityScheduler: read(t, examples+"capacity-scheduler.xml"), YARNSite: read(t, examples+"yarn-site.xml")})
	// The capacities are percentages, which need the cluster's size.
	for _, w := range c.Warnings {
		if !strings.Contains(w.Msg, `capacity "40" is not imported`) && !strings.Contains(w.Msg, `capacity "20" is not imported`) {
			t.Errorf("a complete, explicit configuration imports without warnings but the capacities:\n%s", warnings(c))
		}
	}
	if got := strings.Join(cfg.Snapshot.Partitions(), ","); got != "default" {
		t.Fatal(got)
	}
	cp, _ := cfg.Snapshot.Partition("")
	if got := strings.Join(cp.Queues(), " "); got != "root root.marketing root.dev root.datascience root.datascience.production root.datascience.test" {
		t.Fatalf("hierarchy: %s", got)
	}
	checkQueues(t, cfg, []queueCase{
		{"root.datascience.production", "john", nil, policy.Submit, true},
		{"root.datascience.production", "jane", nil, policy.Submit, true}, // admin of the parent
		{"root.datascience.production", "sue", nil, policy.Submit, false},
		{"root.marketing", "jane", nil, policy.Admin, false},
		{"root.dev", "bob", nil, policy.Submit, true},
	})
	app := application.Application{ID: "application_1536220066338_0001", Owner: "john", Queue: "root.Datascience.Production"}
	checkApps(t, cfg, []appCase{
		{"john kills his application", app, "john", nil, application.Kill, "", true},
		{"jane kills as admin of the parent queue", app, "jane", nil, application.Kill, "", true},
		{"bob kills as cluster admin", app, "bob", nil, application.Kill, "", true},
		{"sue may not kill", app, "sue", nil, application.Kill, "", false},
	})
}

func aclOf(t *testing.T, text string) *acl.ACL {
	t.Helper()
	a, _, err := acl.Parse(text, acl.YARN)
	if err != nil {
		t.Fatal(err)
	}
	return &a
}

const siteOn = `<configuration>
  <property><name>yarn.acl.enable</name><value>true</value></property>
  <property><name>yarn.admin.acl</name><value>admin</value></property>
</configuration>`

// YARN's defaults: root's unset ACLs are "*", other queues' unset ACLs
// grant nothing, both schedulers alike; each default is a warning.
func TestRootDefaults(t *testing.T) {
	fair := `<allocations>
  <queue name="a"><aclSubmitApps>ann</aclSubmitApps></queue>
  <queue name="b"/>
</allocations>`
	capacity := `<configuration>
  <property><name>yarn.scheduler.capacity.root.queues</name><value>a,b</value></property>
  <property><name>yarn.scheduler.capacity.root.a.acl_submit_applications</name><value>ann</value></property>
</configuration>`
	for _, f := range []importer.YARNFiles{
		{FairScheduler: src("fair.xml", fair), YARNSite: src("site.xml", siteOn)},
		{CapacityScheduler: src("cs.xml", capacity), YARNSite: src("site.xml", siteOn)},
	} {
		c, cfg, out := imported(t, f)
		w := warnings(c)
		for _, want := range []string{
			`the root queue sets no submit ACL: YARN's default "*" lets everyone submit to every queue`,
			`the root queue sets no administer ACL: YARN's default "*" lets everyone administer every queue and kill any application`,
		} {
			if !strings.Contains(w, want) {
				t.Errorf("%s: warnings lack %q:\n%s", c.Sources[0], want, w)
			}
		}
		if !bytes.Contains(out, []byte(`submitacl: "*" # YARN's default for the root queue when the ACL is not set`)) {
			t.Errorf("the default is not marked in the YAML:\n%s", out)
		}
		checkQueues(t, cfg, []queueCase{
			{"root.b", "zed", nil, policy.Submit, true}, // inherited from root's default
			{"root.b", "zed", nil, policy.Admin, true},
		})
		for _, q := range c.Root.Children {
			if q.Name == "b" && (q.Submit != nil || q.Admin != nil) {
				t.Errorf("%s: queue b has no ACL in YARN and must have none here: %+v", c.Sources[0], q)
			}
		}
	}
	// With root closed, an unset ACL below grants nothing.
	closed := `<allocations><queue name="root"><aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps>
  <queue name="a"><aclSubmitApps>ann</aclSubmitApps></queue><queue name="b"/></queue></allocations>`
	_, cfg, _ := imported(t, importer.YARNFiles{FairScheduler: src("fair.xml", closed), YARNSite: src("site.xml", siteOn)})
	checkQueues(t, cfg, []queueCase{
		{"root.a", "ann", nil, policy.Submit, true},
		{"root.b", "ann", nil, policy.Submit, false},
		{"root.b", "admin", nil, policy.Submit, true},
	})
}

func TestYARNSiteDefaults(t *testing.T) {
	fair := src("fair.xml", `<allocations><queue name="root"><aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps><queue name="a"><aclSubmitApps>ann</aclSubmitApps></queue></queue></allocations>`)
	tests := []struct {
		name      string
		site      *importer.Source
		adminacl  string // "" when none
		open      bool   // everyone may submit and administer everywhere
		warnings  []string
		noWarning string
	}{
		{"no yarn-site", nil, "", false, []string{`fair.xml: warning: no yarn-site.xml given: assuming yarn.acl.enable=true and no cluster admin ACL`}, ""},
		{"acls on with an admin", src("site.xml", siteOn), "admin", false, nil, "warning"},
		{"yarn.admin.acl not set", src("site.xml", `<configuration><property><name>yarn.acl.enable</name><value>true</value></property></configuration>`),
			"*", false, []string{`site.xml: warning: yarn.admin.acl is not set: Hadoop's default "*" makes every user a cluster admin`}, ""},
		{"yarn.acl.enable false", src("site.xml", `<configuration>
<property><name>yarn.acl.enable</name><value> False </value></property>
<property><name>yarn.admin.acl</name><value>admin</value></property></configuration>`),
			"admin", true, []string{
				`site.xml:2:46: warning: yarn.acl.enable is false: YARN checks no ACL at all`,
				`site.xml: warning: the root queue's submitacl " " (fair.xml:1) is replaced by "*" because YARN checks no ACL`,
			}, ""},
		{"yarn.acl.enable not set", src("site.xml", `<configuration><property><name>yarn.admin.acl</name><value>admin</value></property></configuration>`),
			"admin", true, []string{`site.xml: warning: yarn.acl.enable is not set: Hadoop's default is false`}, ""},
		{"scheduler class mismatch", src("site.xml", strings.Replace(siteOn, "</configuration>",
			"<property><name>yarn.resourcemanager.scheduler.class</name><value>org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler</value></property></configuration>", 1)),
			"admin", false, []string{"the cluster runs the Capacity Scheduler"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, cfg, _ := imported(t, importer.YARNFiles{FairScheduler: fair, YARNSite: tt.site})
			got := ""
			if c.AdminACL != nil {
				got = c.AdminACL.ACL.String()
			}
			if got != tt.adminacl {
				t.Errorf("adminacl %q, want %q", got, tt.adminacl)
			}
			w := warnings(c)
			for _, want := range tt.warnings {
				if !strings.Contains(w, want) {
					t.Errorf("warnings lack %q:\n%s", want, w)
				}
			}
			if tt.noWarning != "" && strings.Contains(w, tt.noWarning) {
				t.Errorf("unexpected warnings:\n%s", w)
			}
			checkQueues(t, cfg, []queueCase{
				{"root.a", "zed", nil, policy.Submit, tt.open || tt.adminacl == "*"},
				{"root.a", "zed", nil, policy.Admin, tt.open || tt.adminacl == "*"},
				{"root.a", "ann", nil, policy.Submit, true},
			})
		})
	}
}

// An ACL that YARN's second-space rule truncates is imported truncated,
// with a warning naming the queue and the dropped text.
func TestSecondSpaceTruncation(t *testing.T) {
	fair := "<allocations>\n  <queue name=\"root\">\n    <aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps>\n" +
		"    <queue name=\"etl\">\n      <aclSubmitApps>john,jane marketing extra,stuff</aclSubmitApps>\n" +
		"      <aclAdministerApps>ops g1, g2</aclAdministerApps>\n    </queue>\n  </queue>\n</allocations>\n"
	c, cfg, out := imported(t, importer.YARNFiles{FairScheduler: src("fair.xml", fair), YARNSite: src("site.xml", siteOn)})
	w := warnings(c)
	for _, want := range []string{
		`fair.xml:5:41: warning: queue root.etl: aclSubmitApps "john,jane marketing extra,stuff": YARN ignores everything after the second space: " extra,stuff" is dropped and the ACL imported as "john,jane marketing" (check it: Hadoop's own parser reads the groups as ["marketing extra", "stuff"])`,
		`fair.xml:6:33: warning: queue root.etl: aclAdministerApps "ops g1, g2": YARN ignores everything after the second space: " g2" is dropped and the ACL imported as "ops g1" (check it: Hadoop's own parser reads the groups as ["g1", "g2"])`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack\n%s\ngot\n%s", want, w)
		}
	}
	if !bytes.Contains(out, []byte(`submitacl: "john,jane marketing" # fair.xml:5`)) {
		t.Errorf("YAML:\n%s", out)
	}
	checkQueues(t, cfg, []queueCase{
		{"root.etl", "pat", []string{"marketing"}, policy.Submit, true},
		{"root.etl", "pat", []string{"stuff"}, policy.Submit, false},
	})
}

// Malformed input is refused with every error positioned FILE:LINE:COL.
func TestMalformedYARNFiles(t *testing.T) {
	site := src("site.xml", siteOn)
	tests := []struct {
		name  string
		files importer.YARNFiles
		want  []string
	}{
		{"mismatched tag", importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations>\n  <queue name=\"a\">\n  </pool>\n</allocations>")},
			[]string{"fair.xml:3:3: malformed XML: element <queue> closed by </pool>"}},
		{"unclosed element", importer.YARNFiles{CapacityScheduler: src("cs.xml", "<configuration>\n  <property>\n    <name>x</name>\n")},
			[]string{"cs.xml:4:1: malformed XML: unexpected end of file: <property> is not closed"}},
		{"bad entity", importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations>\n<queue name=\"a\"><aclSubmitApps>a&b</aclSubmitApps></queue></allocations>")},
			[]string{"fair.xml:2:"}},
		{"empty file", importer.YARNFiles{FairScheduler: src("fair.xml", "")}, []string{"fair.xml: no XML element found"}},
		{"text outside", importer.YARNFiles{FairScheduler: src("fair.xml", "junk <allocations/>")}, []string{"fair.xml:1:1: malformed XML: text outside the top-level element"}},
		{"wrong top element", importer.YARNFiles{FairScheduler: src("fair.xml", "<?xml version=\"1.0\"?>\n<configuration/>")},
			[]string{"fair.xml:2:1: the top element of a fair-scheduler.xml is <allocations>, not <configuration>: this looks like a Hadoop configuration file"}},
		{"fair file as capacity", importer.YARNFiles{CapacityScheduler: src("cs.xml", "<allocations/>")},
			[]string{"cs.xml:1:1: the top element of a capacity-scheduler.xml is <configuration>, not <allocations>: this looks like a fair-scheduler.xml"}},
		{"root beside other queues", importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations>\n<queue name=\"a\"/>\n<queue name=\"root\"/>\n</allocations>")},
			[]string{"fair.xml:3:1: the root queue is configured, so every other queue must be inside it"}},
		{"queue names", importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations>\n<queue name=\"a.b\"/>\n<queue name=\"\"/>\n<queue name=\"c d\"/>\n<queue name=\"x\"/><queue name=\"X\"/>\n</allocations>")},
			[]string{
				`fair.xml:2:1: queue name "a.b" under root contains a period`,
				`fair.xml:3:1: a <queue> under root has no name`,
				`fair.xml:4:1: queue "c d" under root: the YARN importer takes queue names of 1 to 64 letters`,
				`fair.xml:5:18: queue root.x is defined twice (first at line 5`,
			}},
		{"empty ACL element", importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations>\n  <queue name=\"a\"><aclSubmitApps></aclSubmitApps></queue>\n</allocations>")},
			[]string{`fair.xml:2:19: queue root.a: aclSubmitApps is empty, which YARN fails to load`}},
		{"invalid ACL name", importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations>\n  <queue name=\"a\">\n    <aclSubmitApps>\n      john\n    </aclSubmitApps>\n  </queue>\n</allocations>")},
			[]string{`fair.xml:3:20: queue root.a: aclSubmitApps "\n      john\n    ": name "\n" contains whitespace U+000A`}},
		{"no root.queues", importer.YARNFiles{CapacityScheduler: src("cs.xml", "<configuration/>")},
			[]string{"cs.xml: no yarn.scheduler.capacity.root.queues property"}},
		{"bad capacity queue name", importer.YARNFiles{CapacityScheduler: src("cs.xml", "<configuration>\n<property><name>yarn.scheduler.capacity.root.queues</name><value>a, b@c</value></property>\n</configuration>")},
			[]string{`cs.xml:2:69: queue "b@c" under root: the YARN importer takes queue names`}},
		{"capacity ACL", importer.YARNFiles{CapacityScheduler: src("cs.xml", "<configuration>\n<property><name>yarn.scheduler.capacity.root.queues</name><value>a</value></property>\n"+
			"<property><name>yarn.scheduler.capacity.root.a.acl_administer_queue</name><value>ok,b*d</value></property>\n</configuration>")},
			[]string{`cs.xml:3:85: queue root.a: acl_administer_queue "ok,b*d": name "b*d" contains '*'`}},
		{"yarn.acl.enable", importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations/>"), YARNSite: src("site.xml", "<configuration>\n<property><name>yarn.acl.enable</name><value>yes</value></property>\n</configuration>")},
			[]string{`site.xml:2:46: yarn.acl.enable "yes": want true or false`}},
		{"two scheduler files", importer.YARNFiles{FairScheduler: site, CapacityScheduler: site}, []string{"not both"}},
		{"no scheduler file", importer.YARNFiles{YARNSite: site}, []string{"a scheduler file is needed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := importer.YARN(tt.files)
			if err == nil {
				t.Fatal("imported")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			var inv *config.InvalidError
			if errors.As(err, &inv) && len(inv.Diagnostics) != len(tt.want) {
				t.Errorf("%d errors, want %d:\n%v", len(inv.Diagnostics), len(tt.want), err)
			}
		})
	}
}

func TestCapacityWarnings(t *testing.T) {
	cs := `<configuration>
  <property><name>yarn.scheduler.capacity.root.queues</name><value>a</value></property>
  <property><name>yarn.scheduler.capacity.root.acl_submit_applications</name><value> </value></property>
  <property><name>yarn.scheduler.capacity.root.acl_administer_queue</name><value> </value></property>
  <property><name>yarn.scheduler.capacity.root.gone.acl_submit_applications</name><value>x</value></property>
  <property><name>yarn.scheduler.capacity.root.a.acl_submit_reservations</name><value>x</value></property>
  <property><name>yarn.scheduler.capacity.root.a.acl_submit_applications</name><value>x</value></property>
  <property><name>yarn.scheduler.capacity.root.a.acl_submit_applications</name><value>y</value></property>
</configuration>`
	c, cfg, _ := imported(t, importer.YARNFiles{CapacityScheduler: src("cs.xml", cs), YARNSite: src("site.xml", siteOn)})
	w := warnings(c)
	for _, want := range []string{
		"cs.xml:5:3: warning: yarn.scheduler.capacity.root.gone.acl_submit_applications is ignored: queue root.gone is not in the hierarchy",
		"cs.xml:6:3: warning: yarn.scheduler.capacity.root.a.acl_submit_reservations is not imported: usher has no reservations",
		`cs.xml:8:3: warning: property yarn.scheduler.capacity.root.a.acl_submit_applications is set twice (first at line 7); the later value "y" is used`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	checkQueues(t, cfg, []queueCase{{"root.a", "y", nil, policy.Submit, true}, {"root.a", "x", nil, policy.Submit, false}})
}

// The YAML written is deterministic and matches the golden file.
func TestGoldenYAML(t *testing.T) {
	files := importer.YARNFiles{FairScheduler: read(t, examples+"fair-scheduler.xml"), YARNSite: read(t, examples+"yarn-site.xml")}
	_, _, first := imported(t, files)
	c, _, second := imported(t, files)
	if err := c.AddSpark(*read(t, examples+"spark-defaults.conf")); err != nil {
		t.Fatal(err)
	}
	withSpark, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("two imports differ:\n%s\n%s", first, second)
	}
	golden := filepath.Join("testdata", "fair-scheduler.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, withSpark, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(withSpark, want) {
		t.Errorf("YAML differs from %s (go test -update rewrites it):\n%s", golden, withSpark)
	}
}
