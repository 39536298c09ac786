package importer_test

import (
	"bytes"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/importer"
)

// limitFixtures are real scheduler files with queue limits: the example
// allocation file of Hadoop's Fair Scheduler page, and a production-like
// fair-scheduler.xml and capacity-scheduler.xml holding every limit the
// import reads and settings YuniKorn has no equivalent of.
var limitFixtures = []struct {
	name  string
	files func(t *testing.T) importer.YARNFiles
	// lint are the warnings usher lint may give: the placement rules the
	// Hadoop example uses are usher extensions.
	lint string
}{
	{"hadoop-fair-scheduler", func(t *testing.T) importer.YARNFiles {
		return importer.YARNFiles{FairScheduler: read(t, "testdata/hadoop-fair-scheduler.xml")}
	}, "is an usher extension"},
	{"fair-scheduler-limits", func(t *testing.T) importer.YARNFiles {
		return importer.YARNFiles{FairScheduler: read(t, "testdata/fair-scheduler-limits.xml"), YARNSite: read(t, examples+"yarn-site.xml")}
	}, ""},
	{"capacity-scheduler-limits", func(t *testing.T) importer.YARNFiles {
		return importer.YARNFiles{CapacityScheduler: read(t, "testdata/capacity-scheduler-limits.xml"), YARNSite: read(t, examples+"yarn-site.xml")}
	}, ""},
}

// Queue limits are imported as YuniKorn's keys, and every setting that is
// not, or not as written, is a warning at its position: the YAML and the
// warnings match the golden files (go test -update rewrites them).
func TestImportLimitsGolden(t *testing.T) {
	for _, f := range limitFixtures {
		t.Run(f.name, func(t *testing.T) {
			c, _, out := imported(t, f.files(t))
			for _, g := range []struct {
				file string
				got  []byte
			}{{f.name + ".golden.yaml", out}, {f.name + ".warnings", []byte(warnings(c))}} {
				golden := filepath.Join("testdata", g.file)
				if *update {
					if err := os.WriteFile(golden, g.got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(g.got, want) {
					t.Errorf("differs from %s (go test -update rewrites it):\n%s", golden, g.got)
				}
			}
		})
	}
}

// The YAML imported lints clean, passes the check of YuniKorn's strict
// decoder once usher split has moved usher's own keys out (as YuniKorn's
// ConfigMap yunikorn-configs), and keeps to the rules of YuniKorn's
// validator about limits.
func TestImportLimitsLoadInYuniKorn(t *testing.T) {
	for _, f := range limitFixtures {
		t.Run(f.name, func(t *testing.T) {
			c, _, out := imported(t, f.files(t))
			path := filepath.Join(t.TempDir(), "usher.yaml")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, config.Strict()) // as usher lint reads it
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range cfg.Warnings {
				if f.lint == "" || !strings.Contains(w.Msg, f.lint) {
					t.Errorf("lint: %s", w)
				}
			}
			// Unsplit, the partition adminacl makes YuniKorn refuse the file: the check runs.
			if _, err := config.FromConfigMap("yunikorn/yunikorn-configs", map[string]string{"queues.yaml": string(out)}, config.Strict()); err == nil && c.AdminACL != nil {
				t.Fatal("YuniKorn's key check did not run")
			}
			split, _, err := config.Split(path)
			if err != nil {
				t.Fatal(err)
			}
			var data map[string]string
			if err := yaml.Unmarshal(split, &data); err != nil {
				t.Fatal(err)
			}
			if _, err := config.FromConfigMap("yunikorn/yunikorn-configs", data, config.Strict()); err != nil {
				t.Fatalf("as YuniKorn's ConfigMap: %v\n%s", err, data["queues.yaml"])
			}
			var doc struct{ Partitions []struct{ Queues []ykQueue } }
			if err := yaml.Unmarshal([]byte(data["queues.yaml"]), &doc); err != nil {
				t.Fatal(err)
			}
			for _, p := range doc.Partitions {
				ykValidate(t, p.Queues[0], true, nil, 0)
			}
		})
	}
}

type ykQueue struct {
	Name            string
	Resources       struct{ Guaranteed, Max map[string]string }
	MaxApplications uint64
	Queues          []ykQueue
	Limits          []struct {
		Users           []string
		MaxApplications uint64
	}
}

var ykQuantity = regexp.MustCompile(`^([0-9]+)\s*([mkKMGTPE]i?)?$`)

// ykResource reads quantities as yunikorn-core's resources.NewResourceFromConf.
func ykResource(t *testing.T, m map[string]string) map[string]*big.Int {
	out := map[string]*big.Int{}
	for k, v := range m {
		p := ykQuantity.FindStringSubmatch(v)
		if p == nil || (p[2] == "m" && k != "vcore") {
			t.Fatalf("%s: %q is not a YuniKorn quantity", k, v)
		}
		n, _ := new(big.Int).SetString(p[1], 10)
		scale := map[string]int64{"": 1, "m": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}[p[2]]
		if k == "vcore" && p[2] != "m" {
			scale *= 1000
		}
		out[k] = n.Mul(n, big.NewInt(scale))
	}
	return out
}

// fits reports whether small fits in large for the types both define
// (yunikorn-core's FitInMaxUndef).
func fits(large, small map[string]*big.Int) bool {
	for k, v := range small {
		if l, ok := large[k]; ok && v.Cmp(l) > 0 {
			return false
		}
	}
	return true
}

// ykValidate checks q as yunikorn-core's configvalidator.go does
// (checkQueueResource, checkQueueMaxApplications, checkLimits): root
// without resources, guaranteed within max, max within the parent's,
// children's guaranteed within the parent's guaranteed and max, a
// maxapplications under a parent that sets one and no larger, user
// limits valid and within the queue's. It returns q's guaranteed as the
// parent counts it.
func ykValidate(t *testing.T, q ykQueue, root bool, pmax map[string]*big.Int, papps uint64) map[string]*big.Int {
	t.Helper()
	g, m := ykResource(t, q.Resources.Guaranteed), ykResource(t, q.Resources.Max)
	switch {
	case root && len(g)+len(m) > 0:
		t.Errorf("root queue has resources")
	case !fits(m, g):
		t.Errorf("queue %s: guaranteed %v above max %v", q.Name, g, m)
	case !fits(pmax, m):
		t.Errorf("queue %s: max %v above the parent's %v", q.Name, m, pmax)
	case papps != 0 && (q.MaxApplications == 0 || q.MaxApplications > papps):
		t.Errorf("queue %s: maxapplications %d under a parent's %d", q.Name, q.MaxApplications, papps)
	}
	for k, v := range pmax {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	wildcard := false
	for _, l := range q.Limits {
		for _, u := range l.Users {
			if wildcard || l.MaxApplications == 0 || q.MaxApplications != 0 && l.MaxApplications > q.MaxApplications {
				t.Errorf("queue %s: limit of %s: %d applications", q.Name, u, l.MaxApplications)
			}
			wildcard = u == "*"
		}
	}
	sum := map[string]*big.Int{}
	for _, c := range q.Queues {
		for k, v := range ykValidate(t, c, false, m, q.MaxApplications) {
			if sum[k] == nil {
				sum[k] = new(big.Int)
			}
			sum[k].Add(sum[k], v)
		}
	}
	if !fits(g, sum) || !fits(m, sum) {
		t.Errorf("queue %s: children guaranteed %v, more than guaranteed %v or max %v", q.Name, sum, g, m)
	}
	if len(g) == 0 {
		return sum
	}
	return g
}

// Resource values are read as YARN reads them and written in YuniKorn's
// units; what YARN refuses is an error, what YuniKorn cannot express a
// warning.
func TestImportResourceValues(t *testing.T) {
	fair := func(max string) *importer.Source {
		return src("fair.xml", "<allocations>\n<queue name=\"a\"><maxResources>"+max+"</maxResources></queue>\n</allocations>")
	}
	capacity := func(max string) *importer.Source {
		return src("cs.xml", "<configuration>\n<property><name>yarn.scheduler.capacity.root.queues</name><value>a</value></property>\n"+
			"<property><name>yarn.scheduler.capacity.root.a.maximum-capacity</name><value>"+max+"</value></property>\n</configuration>")
	}
	tests := []struct {
		name    string
		file    *importer.Source
		max     string // the max written, "" for none
		warning string
		err     string
	}{
		{"old style", fair("1024 mb, 2 vcores"), "memory: 1Gi vcore: \"2\"", "", ""},
		{"old style reversed, no spaces, fractions", fair("2.5vcores,1536.9MB"), "memory: 1536Mi vcore: \"2\"", "", ""},
		{"new style", fair("memory-mb=10000, vcores=4"), "memory: 10000Mi vcore: \"4\"", "", ""},
		{"new style, memory only", fair("memory-mb=2048"), "memory: 2Gi", "", ""},
		{"new style, another type", fair("memory-mb=2048, yarn.io/gpu=2"), "memory: 2Gi", "fair.xml:2:31: warning: queue root.a: maxResources: resource yarn.io/gpu is not imported", ""},
		{"zero vcores", fair("2048 mb, 0 vcores"), "memory: 2Gi vcore: \"0\"", "queue root.a: maxResources allows no vcore: YuniKorn runs no pod that asks for vcore", ""},
		{"only zeros", fair("memory-mb=0"), "", "queue root.a: maxResources allows nothing, which YuniKorn reads as no limit: not written", ""},
		{"percentage", fair("50%"), "", `fair.xml:2:31: warning: queue root.a: maxResources "50%" is not imported: a share of the cluster needs the cluster's size`, ""},
		{"percentages", fair("memory-mb=50%, vcores=25%"), "", `maxResources "memory-mb=50%, vcores=25%" is not imported`, ""},
		{"old style without vcores", fair("1024 mb"), "", "", `fair.xml:2:31: queue root.a: maxResources "1024 mb": no vcores: YARN reads "X mb, Y vcores"`},
		{"negative", fair("-1 mb, 1 vcores"), "", "", `queue root.a: maxResources "-1 mb, 1 vcores": -1 is not a whole number from 0 to 2147483647`},
		{"not a number", fair("memory-mb=lots"), "", "", `queue root.a: maxResources "memory-mb=lots": memory-mb "lots" is not a whole number, which YARN fails to load`},
		{"empty", fair(" "), "", "", "queue root.a: maxResources is empty, which YARN fails to load"},
		{"capacity absolute", capacity("[memory=10240,vcores=12]"), "memory: 10Gi vcore: \"12\"", "", ""},
		{"capacity units", capacity("[memory=4Gi, vcores=2]"), "memory: 4Gi vcore: \"2\"", "", ""},
		{"capacity decimal unit", capacity("[memory=3G,vcores=2]"), "memory: 3G vcore: \"2\"", "", ""},
		{"capacity 100", capacity("100"), "", "", ""},
		{"capacity -1", capacity("-1"), "", "", ""},
		{"capacity percentage", capacity("50.5"), "", `cs.xml:3:78: warning: queue root.a: maximum-capacity "50.5" is not imported: a share of the parent needs the cluster's size`, ""},
		{"capacity bad vcores", capacity("[memory=1024,vcores=2k]"), "", "", `queue root.a: maximum-capacity "memory=1024,vcores=2k": vcores "2k" is not a whole number`},
		{"capacity garbage", capacity("lots"), "", "", `cs.xml:3:78: queue root.a: maximum-capacity "lots": want a percentage, a weight such as 2w, or an absolute resource`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := importer.YARNFiles{YARNSite: src("site.xml", siteOn)}
			if strings.HasPrefix(tt.file.Name, "fair") {
				files.FairScheduler = tt.file
			} else {
				files.CapacityScheduler = tt.file
			}
			c, err := importer.YARN(files)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.YAML()
			if err != nil {
				t.Fatal(err)
			}
			var doc struct{ Partitions []struct{ Queues []ykQueue } }
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			max := doc.Partitions[0].Queues[0].Queues[0].Resources.Max
			var got []string
			for _, k := range []string{"memory", "vcore"} {
				if v, ok := max[k]; ok {
					got = append(got, fmt.Sprintf("%s: %q", k, v))
				}
			}
			if g := strings.ReplaceAll(strings.Join(got, " "), `memory: "`+max["memory"]+`"`, "memory: "+max["memory"]); g != tt.max {
				t.Errorf("max %s, want %s\n%s", g, tt.max, out)
			}
			if w := warnings(c); tt.warning == "" && strings.Contains(w, "root.a") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings lack %q:\n%s", tt.warning, w)
			}
		})
	}
}

// User limits keep YARN's reading (a later <user> wins) within what
// YuniKorn's validator accepts (the wildcard last, none above the root
// queue's maxapplications); the scheduling policy defaults as YARN's do.
func TestImportUserLimitsAndPolicy(t *testing.T) {
	fair := `<allocations>
  <userMaxAppsDefault>5</userMaxAppsDefault>
  <user name="ann"><maxRunningApps>3</maxRunningApps></user>
  <user name="ann"><maxRunningApps>30</maxRunningApps></user>
  <queueMaxAppsDefault>20</queueMaxAppsDefault>
  <defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy>
  <queue name="a"><schedulingPolicy>FIFO</schedulingPolicy></queue>
</allocations>`
	c, _, out := imported(t, importer.YARNFiles{FairScheduler: src("fair.xml", fair), YARNSite: src("site.xml", siteOn)})
	w := warnings(c)
	for _, want := range []string{
		`fair.xml:4:36: warning: user ann: maxRunningApps is set twice (first at fair.xml:3); the later one is used, as YARN does`,
		`fair.xml:4:36: warning: user ann: maxRunningApps: 30 running applications are more than the 20 of the root queue: written as 20`,
		`fair.xml:6:33: warning: defaultQueueSchedulingPolicy "drf" is not imported`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	var doc struct {
		Partitions []struct {
			Queues []struct {
				Properties      map[string]string
				MaxApplications int
				Limits          []struct {
					Users           []string
					MaxApplications int
				}
				Queues []struct{ Properties map[string]string }
			}
		}
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Partitions[0].Queues[0]
	if got := fmt.Sprint(root.MaxApplications, root.Limits, root.Properties, root.Queues[0].Properties); got != "20 [{[ann] 20} {[*] 5}] map[application.sort.policy:fair] map[application.sort.policy:fifo]" {
		t.Errorf("got %s\n%s", got, out)
	}
	if _, err := importer.YARN(importer.YARNFiles{FairScheduler: src("fair.xml", "<allocations>\n<defaultQueueSchedulingPolicy>fifo</defaultQueueSchedulingPolicy>\n</allocations>")}); err == nil ||
		!strings.Contains(err.Error(), "fair.xml:2:31: defaultQueueSchedulingPolicy cannot be fifo (YARN fails to load it)") {
		t.Errorf("error %v", err)
	}
}
