package importer_test

import (
	"os"
	"testing"

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
// writes YAML that loads.
func FuzzFairScheduler(f *testing.F) {
	seedFile(f, examples+"fair-scheduler.xml")
	f.Add([]byte("<allocations><queue name=\"a\"><aclSubmitApps>u g1 g2</aclSubmitApps></queue></allocations>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkImport(t, importer.YARNFiles{FairScheduler: &importer.Source{Name: "f.xml", Data: data}})
	})
}

func FuzzCapacityScheduler(f *testing.F) {
	seedFile(f, examples+"capacity-scheduler.xml")
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
	if _, err := c.YAML(); err != nil {
		t.Fatal(err)
	}
}
