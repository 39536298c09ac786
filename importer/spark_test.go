package importer_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/importer"
)

func aclText(s *importer.Setting) string {
	if s == nil {
		return "<unset>"
	}
	return s.ACL.String()
}

func TestSparkDefaults(t *testing.T) {
	apps, warns, err := importer.Spark(*read(t, examples+"spark-defaults.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if aclText(apps.Admin) != "sparkadmin spark-admins" || aclText(apps.View) != " analysts" || aclText(apps.Modify) != "john" {
		t.Fatalf("admin %q view %q modify %q", aclText(apps.Admin), aclText(apps.View), aclText(apps.Modify))
	}
	if apps.Admin.From != "spark.admin.acls ("+examples+"spark-defaults.conf:6), spark.admin.acls.groups ("+examples+"spark-defaults.conf:7)" {
		t.Errorf("from: %s", apps.Admin.From)
	}
}

// The Java properties syntax Spark reads: separators, continuation lines,
// escapes, comments; values trimmed as Spark trims them.
func TestSparkPropertiesSyntax(t *testing.T) {
	conf := "# comment\n! also a comment \\\n" +
		"spark.acls.enable = TRUE\n" +
		"spark.admin.acls:ann,\\\n    bob\n" +
		"spark.ui.view.acls.groups\t  dev.team , system:authenticated  \n" +
		"spark.modify.acls   \\u006aohn\r\n" +
		"   \n"
	apps, warns, err := importer.Spark(importer.Source{Name: "s.conf", Data: []byte(conf)})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if aclText(apps.Admin) != "ann,bob" || aclText(apps.View) != " dev.team,system:authenticated" || aclText(apps.Modify) != "john" {
		t.Fatalf("admin %q view %q modify %q", aclText(apps.Admin), aclText(apps.View), aclText(apps.Modify))
	}
}

// spark.acls.enable unset or false: Spark checks nothing, which is imported
// as everyone an application admin, with a warning.
func TestSparkACLsDisabled(t *testing.T) {
	for _, tt := range []struct{ conf, warn string }{
		{"spark.admin.acls ann\n", `s.conf: warning: spark.acls.enable is not set: Spark's default is false, so Spark checks no ACL`},
		{"spark.acls.enable false\nspark.admin.acls ann\n", `s.conf:1:19: warning: spark.acls.enable is false, so Spark checks no ACL`},
		{"spark.ui.acls.enable false\n", `s.conf:1:1: warning: spark.ui.acls.enable is the deprecated name of spark.acls.enable`},
	} {
		apps, warns, err := importer.Spark(importer.Source{Name: "s.conf", Data: []byte(tt.conf)})
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, w := range warns {
			all = append(all, w.String())
		}
		if !strings.Contains(strings.Join(all, "\n"), tt.warn) {
			t.Errorf("%q: warnings lack %q:\n%s", tt.conf, tt.warn, strings.Join(all, "\n"))
		}
		if !apps.Admin.ACL.All() {
			t.Errorf("%q: admin %q, want *", tt.conf, aclText(apps.Admin))
		}
	}
}

// Malformed properties files are refused with positioned errors.
func TestMalformedSparkDefaults(t *testing.T) {
	tests := []struct {
		name, conf string
		want       []string
	}{
		{"bad unicode escape", "spark.acls.enable true\nspark.admin.acls a\\u00zz\n", []string{`s.conf:2:19: property spark.admin.acls: malformed \uXXXX escape "\\u00zz"`}},
		{"short unicode escape", "spark.acls.enable true\nspark.admin.\\u12 x\n", []string{`s.conf:2:13: malformed \uXXXX escape`}},
		{"invalid UTF-8", "spark.acls.enable true\nspark.admin.acls j\xffhn\n", []string{"s.conf:2:19: the file is not valid UTF-8"}},
		{"bad boolean", "spark.acls.enable  yes\n", []string{`s.conf:1:20: spark.acls.enable "yes": want true or false`}},
		{"bad name", "spark.acls.enable true\nspark.ui.view.acls.groups  ok, b*d\n", []string{`s.conf:2:32: spark.ui.view.acls.groups "ok, b*d": name "b*d" contains '*'`}},
		{"several errors", "spark.acls.enable maybe\nspark.modify.acls a\\uXYZW\n", []string{"s.conf:1:19:", "s.conf:2:20:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := importer.Spark(importer.Source{Name: "s.conf", Data: []byte(tt.conf)})
			if err == nil {
				t.Fatal("imported")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			var inv *config.InvalidError
			if !errors.As(err, &inv) || len(inv.Diagnostics) != len(tt.want) {
				t.Errorf("want %d positioned errors: %v", len(tt.want), err)
			}
		})
	}
}

// Spark's ACLs merged into an existing usher configuration.
func TestMergeApplicationACLs(t *testing.T) {
	apps, _, err := importer.Spark(*read(t, examples+"spark-defaults.conf"))
	if err != nil {
		t.Fatal(err)
	}
	base := read(t, "../examples/yunikorn-acl.yaml")
	out, err := importer.MergeApplicationACLs(*base, "", apps)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("merged.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("# The example of YuniKorn's ACL page")) {
		t.Errorf("comments of the base were lost:\n%s", out)
	}
	d := cfg.Partitions[0].Applications
	if d.Admin == nil || d.Admin.String() != "sparkadmin spark-admins" {
		t.Fatalf("merged: %+v\n%s", d, out)
	}
	// The result decides Spark applications: spark.admin.acls may kill,
	// the default view ACL lets analysts view, not kill.
	cp, _ := cfg.Snapshot.Partition("")
	p := application.Policy{Partition: cp, Defaults: d}
	app := application.Application{Owner: "pat", Queue: "root.product"}
	for _, c := range []struct {
		user   string
		groups []string
		action application.Action
		allow  bool
	}{
		{"sam", []string{"spark-admins"}, application.Kill, true},
		{"ann", []string{"analysts"}, application.View, true},
		{"ann", []string{"analysts"}, application.Kill, false},
		{"john", nil, application.Kill, true},
	} {
		dec, err := p.Decide(app, acl.NewSubject(c.user, c.groups), c.action, "")
		if err != nil || dec.Allowed != c.allow {
			t.Errorf("%s %v: %v %s", c.user, c.action, err, dec.Reason())
		}
	}
	// Merging again replaces the block rather than adding a second one.
	again, err := importer.MergeApplicationACLs(importer.Source{Name: "merged.yaml", Data: out}, "default", importer.ApplicationACLs{View: apps.View})
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(again, []byte("applicationacls:")); n != 1 {
		t.Fatalf("%d applicationacls blocks:\n%s", n, again)
	}
	if _, err := importer.MergeApplicationACLs(*base, "gpu", apps); err == nil || !strings.Contains(err.Error(), `no partition "gpu"`) {
		t.Errorf("unknown partition: %v", err)
	}
	if _, err := importer.MergeApplicationACLs(importer.Source{Name: "x.yaml", Data: []byte("- a\n")}, "", apps); err == nil || !strings.Contains(err.Error(), "x.yaml: not an usher configuration") {
		t.Errorf("not a configuration: %v", err)
	}
}
