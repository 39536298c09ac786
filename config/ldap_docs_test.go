package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

// TestLDAPDocumentationExamples loads every partitions: example of
// docs/ldap.md (with a root queue added: the page leaves the queues out)
// and the usergroupresolver example of "Who is looked up": none may have a
// problem, so the page never shows a configuration usher refuses.
func TestLDAPDocumentationExamples(t *testing.T) {
	page, err := os.ReadFile("../docs/ldap.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(page), -1)
	n := 0
	for _, b := range blocks {
		src := b[1]
		switch {
		case strings.HasPrefix(src, "partitions:"):
		case strings.HasPrefix(src, "usergroupresolver:") && strings.Contains(src, "namemapping:"):
			// The lookup policy example, with a real ldap block.
			src = strings.Replace(src, "  ldap: { ... }\n", "  ldap: {urls: [\"ldaps://ldap.example.org\"], binddn: \"cn=usher,dc=example,dc=org\","+
				" bindpasswordfile: /run/pw, userbasedn: \"ou=people,dc=example,dc=org\", groupbasedn: \"ou=groups,dc=example,dc=org\"}\n", 1)
			src = "partitions:\n  - name: default\n" + indent(src, "    ")
		default:
			continue
		}
		n++
		c, err := config.Parse("ldap.md", []byte(src+"    queues:\n      - name: root\n"))
		if err != nil {
			t.Errorf("example %d:\n%s\n%v", n, src, err)
			continue
		}
		if len(c.Warnings) > 0 {
			t.Errorf("example %d:\n%s\nwarnings: %v", n, src, diagStrings(c.Warnings))
		}
	}
	if n < 5 {
		t.Fatalf("%d examples found, want at least 5", n)
	}
}
