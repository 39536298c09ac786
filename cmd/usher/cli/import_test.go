package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/cmd/usher/cli"
	"github.com/usherhq/usher/config"
)

const yarnExamples = "../../../examples/yarn/"

// Import the first example of the "Managing YARN ACLs" guide from capacity-scheduler.xml and
// yarn-site.xml, then ask the imported configuration the page's questions.
func TestImportYARNThenDecide(t *testing.T) {
	out, errs, code := run(t, "import", "yarn", "--capacity-scheduler", yarnExamples+"capacity-scheduler.xml", "--yarn-site", yarnExamples+"yarn-site.xml")
	// The only warnings: the capacities are percentages, which need the cluster's size.
	if code != 0 || strings.Count(errs, "\n") != 3 || strings.Count(errs, "is not imported: a share of the parent needs the cluster's size") != 3 {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	if _, err := config.Parse("stdout", []byte(out)); err != nil {
		t.Fatalf("the YAML written does not load: %v\n%s", err, out)
	}
	cfg := writeConfig(t, out)
	app := []string{"app", "--config", cfg, "--queue", "root.Datascience.Production", "--owner", "john", "--action", "kill"}
	for _, tt := range []struct {
		user string
		code int
		want string
	}{
		{"john", 0, "john owns it"},
		{"jane", 0, `queue admin: user entry "jane" in adminacl of root.datascience`},
		{"bob", 0, "cluster admin"},
		{"sue", 1, "sue may not kill"},
	} {
		out, errs, code := run(t, append(app, "--user", tt.user)...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("%s: code %d out %q err %q", tt.user, code, out, errs)
		}
	}
	out, _, code = run(t, "check", "--config", cfg, "--queue", "root.Datascience.Test", "--user", "jane")
	if code != 0 || !strings.Contains(out, "adminacl of root.datascience") {
		t.Errorf("check: %d %q", code, out)
	}
}

func TestImportYARNToFile(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "usher.yaml")
	out, errs, code := run(t, "import", "yarn", "--fair-scheduler", yarnExamples+"fair-scheduler.xml",
		"--spark-defaults", yarnExamples+"spark-defaults.conf", "--partition", "yarn", "-o", dst)
	if code != 0 || out != "" {
		t.Fatalf("code %d out %q err %q", code, out, errs)
	}
	// No yarn-site.xml: the import says what it assumed.
	if !strings.Contains(errs, "fair-scheduler.xml: warning: no yarn-site.xml given") || !strings.Contains(errs, "wrote "+dst) {
		t.Errorf("stderr %q", errs)
	}
	c, err := config.Load(dst)
	if err != nil {
		t.Fatal(err)
	}
	if c.Partitions[0].Name != "yarn" || c.Partitions[0].Applications.Admin == nil {
		t.Fatalf("%+v", c.Partitions[0])
	}
	if _, errs, code := run(t, "lint", dst); code != 0 {
		t.Errorf("lint: %d %q", code, errs)
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	badXML := filepath.Join(dir, "fair.xml")
	os.WriteFile(badXML, []byte("<allocations>\n  <queue name=\"a\">\n    <aclSubmitApps>a</aclSubmitApps>\n</allocations>\n"), 0o600)
	badSite := filepath.Join(dir, "yarn-site.xml")
	os.WriteFile(badSite, []byte("<configuration>\n  <property><name>yarn.acl.enable</name><value>yes</value></property>\n</configuration>\n"), 0o600)
	badConf := filepath.Join(dir, "spark-defaults.conf")
	os.WriteFile(badConf, []byte("spark.acls.enable true\nspark.admin.acls ann, b*b\n"), 0o600)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"malformed XML", []string{"yarn", "--fair-scheduler", badXML}, 1, badXML + ":4:1: malformed XML: element <queue> closed by </allocations>"},
		{"bad yarn-site", []string{"yarn", "--capacity-scheduler", yarnExamples + "capacity-scheduler.xml", "--yarn-site", badSite}, 1,
			badSite + `:2:48: yarn.acl.enable "yes": want true or false`},
		{"bad spark-defaults", []string{"spark", "--defaults", badConf}, 1, badConf + `:2:23: spark.admin.acls "ann, b*b": name "b*b"`},
		{"bad spark-defaults with yarn", []string{"yarn", "--fair-scheduler", yarnExamples + "fair-scheduler.xml", "--spark-defaults", badConf}, 1, badConf + ":2:23:"},
		{"unknown subcommand", []string{"mesos"}, 2, `unknown command "mesos" for "usher import": want spark or yarn`},
		{"no scheduler", []string{"yarn", "--yarn-site", badSite}, 2, "give one of --fair-scheduler and --capacity-scheduler"},
		{"two schedulers", []string{"yarn", "--fair-scheduler", badXML, "--capacity-scheduler", badXML}, 2, "give one of"},
		{"unreadable", []string{"yarn", "--fair-scheduler", filepath.Join(dir, "none.xml")}, 2, "no such file"},
		{"spark without defaults", []string{"spark"}, 2, "--defaults is required"},
		{"spark into an invalid configuration", []string{"spark", "--defaults", yarnExamples + "spark-defaults.conf", "--into", "../../../examples/broken.yaml"}, 2, "--into: invalid configuration"},
		{"spark into an unknown partition", []string{"spark", "--defaults", yarnExamples + "spark-defaults.conf", "--partition", "gpu"}, 2, `no partition "gpu"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := run(t, append([]string{"import"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errs, tt.msg) || out != "" {
				t.Fatalf("code %d, stdout %q, stderr %q; want %d and %q", code, out, errs, tt.code, tt.msg)
			}
			if tt.code == cli.ExitDenied && !strings.Contains(errs, "nothing written") {
				t.Errorf("stderr %q", errs)
			}
		})
	}
}

func TestImportSpark(t *testing.T) {
	out, errs, code := run(t, "import", "spark", "--defaults", yarnExamples+"spark-defaults.conf", "--into", yunikornACL)
	if code != 0 || errs != "" {
		t.Fatalf("code %d err %q", code, errs)
	}
	for _, want := range []string{
		"# The example of YuniKorn's ACL page",
		"applicationacls:\n      admin: \"sparkadmin spark-admins\" # spark.admin.acls (../../../examples/yarn/spark-defaults.conf:6)",
		"adminacl: sue dev,test",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	cfg := writeConfig(t, out)
	got, _, code := run(t, "app", "--config", cfg, "--queue", "root.test", "--owner", "sue", "--user", "ann", "--groups", "analysts", "--action", "view")
	if code != 0 || !strings.Contains(got, "default view ACL") {
		t.Errorf("view by default: %d %q", code, got)
	}
	// Without --into the embedded default configuration gets the ACLs;
	// spark.acls.enable unset makes everyone an application admin, said
	// on stderr.
	conf := filepath.Join(t.TempDir(), "spark-defaults.conf")
	os.WriteFile(conf, []byte("spark.ui.view.acls ann\n"), 0o600)
	out, errs, code = run(t, "import", "spark", "--defaults", conf)
	if code != 0 || !strings.Contains(out, `admin: "*"`) || !strings.Contains(errs, "spark.acls.enable is not set") {
		t.Fatalf("code %d out %q err %q", code, out, errs)
	}
	if _, err := config.Parse("out", []byte(out)); err != nil {
		t.Fatal(err)
	}
	if errs, _, code := run(t, "import", "--help"); code != 0 || !strings.Contains(errs, "usher import spark --defaults") {
		t.Errorf("help: %d %q", code, errs)
	}
}
