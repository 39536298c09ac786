package importer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/usherhq/usher/importer"
)

// bigFairScheduler is an allocation file of 100 parents with 100 leaves
// each (10,101 queues), every queue with both ACLs.
func bigFairScheduler() []byte {
	var b strings.Builder
	b.WriteString("<allocations>\n<queue name=\"root\"><aclSubmitApps> </aclSubmitApps><aclAdministerApps> admins</aclAdministerApps>\n")
	for i := range 100 {
		fmt.Fprintf(&b, "<queue name=\"team%d\"><aclAdministerApps>lead%d team%d-admins</aclAdministerApps>\n", i, i, i)
		for j := range 100 {
			fmt.Fprintf(&b, "  <queue name=\"q%d\"><aclSubmitApps>u%d,v%d team%d,g%d</aclSubmitApps><aclAdministerApps>a%d</aclAdministerApps></queue>\n", j, j, j, i, j, j)
		}
		b.WriteString("</queue>\n")
	}
	b.WriteString("</queue>\n</allocations>\n")
	return []byte(b.String())
}

// BenchmarkImportFairScheduler imports 10,101 queues and writes the YAML,
// which YAML() loads again with config.Parse to check it.
func BenchmarkImportFairScheduler(b *testing.B) {
	data := bigFairScheduler()
	site := &importer.Source{Name: "site.xml", Data: []byte(siteOn)}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := importer.YARN(importer.YARNFiles{FairScheduler: &importer.Source{Name: "fair.xml", Data: data}, YARNSite: site})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.YAML(); err != nil {
			b.Fatal(err)
		}
	}
}
