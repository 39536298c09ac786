package importer_test

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/importer"
)

func seedFile(f *testing.F, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
}

// Whatever the input, an import either fails with positioned errors or
// writes YAML that loads, with limits YuniKorn's validator accepts.
func FuzzFairScheduler(f *testing.F) {
	seedFile(f, examples+"fair-scheduler.xml")
	seedFile(f, "testdata/hadoop-fair-scheduler.xml")
	seedFile(f, "testdata/fair-scheduler-limits.xml")
	f.Add([]byte("<allocations><queue name=\"a\"><aclSubmitApps>u g1 g2</aclSubmitApps></queue></allocations>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkImport(t, importer.YARNFiles{FairScheduler: &importer.Source{Name: "f.xml", Data: data}})
	})
}

func FuzzCapacityScheduler(f *testing.F) {
	seedFile(f, examples+"capacity-scheduler.xml")
	f.Add([]byte(`<configuration><property><name>yarn.scheduler.capacity.root.queues</name><value>a</value></property>
<property><name>yarn.scheduler.capacity.root.a.queues</name><value>b</value></property>
<property><name>yarn.scheduler.capacity.root.a.maximum-capacity</name><value>[memory=1Gi,vcores=2]</value></property>
<property><name>yarn.scheduler.capacity.root.a.b.capacity</name><value>[memory=2048,vcores=1]</value></property>
<property><name>yarn.scheduler.capacity.root.a.b.max-parallel-apps</name><value>5</value></property>
<property><name>yarn.scheduler.capacity.user.u.max-parallel-apps</name><value>9</value></property></configuration>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkImport(t, importer.YARNFiles{CapacityScheduler: &importer.Source{Name: "c.xml", Data: data}})
	})
}

func FuzzSpark(f *testing.F) {
	seedFile(f, examples+"spark-defaults.conf")
	f.Add([]byte("a\\\n  b = c\\u0041\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		apps, _, err := importer.Spark(importer.Source{Name: "s.conf", Data: data})
		if err != nil {
			return
		}
		if _, err := importer.MergeApplicationACLs(importer.Source{Name: "d", Data: config.DefaultYAML()}, "", apps); err != nil {
			t.Fatal(err)
		}
	})
}

func checkImport(t *testing.T, files importer.YARNFiles) {
	c, err := importer.YARN(files)
	if err != nil {
		return
	}
	out, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Partitions []struct{ Queues []ykQueue } }
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	ykValidate(t, doc.Partitions[0].Queues[0], true, nil, 0)
}
