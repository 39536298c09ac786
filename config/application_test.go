package config_test

import (
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

// The applicationacls block of a partition: application admins and the
// default view and modify ACLs of applications that set none.
func TestApplicationACLs(t *testing.T) {
	c := mustParse(t, `
partitions:
  - name: default
    applicationacls:
      admin: "sparkadmin spark-admins"
      view: " analysts"
      modify: john
    queues:
      - name: root
        submitacl: "*"
  - name: gpu
    queues:
      - name: root
`)
	apps := c.Partitions[0].Applications
	if apps.Admin == nil || apps.Admin.String() != "sparkadmin spark-admins" ||
		apps.View == nil || apps.View.String() != " analysts" ||
		apps.Modify == nil || apps.Modify.String() != "john" {
		t.Fatalf("applicationacls: %+v", apps)
	}
	if gpu := c.Partitions[1].Applications; gpu.Admin != nil || gpu.View != nil || gpu.Modify != nil {
		t.Fatalf("a partition without applicationacls has no defaults: %+v", gpu)
	}
}

func TestApplicationACLsPartial(t *testing.T) {
	c := mustParse(t, "partitions:\n  - name: default\n    applicationacls:\n      view: \"\"\n    queues:\n      - name: root\n        submitacl: \"*\"\n")
	apps := c.Partitions[0].Applications
	if apps.Admin != nil || apps.Modify != nil || apps.View == nil || !apps.View.Empty() {
		t.Fatalf("an empty view ACL is set and allows nobody; unset ones stay nil: %+v", apps)
	}
}

func TestApplicationACLsErrors(t *testing.T) {
	tests := []struct {
		name, block, want string
	}{
		{"unknown key", "      delete: bob\n", `q.yaml:4:7: applicationacls: unknown key "delete"`},
		{"key case", "      Admin: bob\n", `(did you mean "admin"?)`},
		{"two spaces", "      admin: \"u1  g1\"\n", `q.yaml:4:18: applicationacls admin "u1  g1": more than one space`},
		{"bad name", "      modify: \"a,b*\"\n", `applicationacls modify "a,b*"`},
		{"not a mapping", "", `applicationacls must be a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "partitions:\n  - name: default\n    applicationacls:\n" + tt.block + "    queues:\n      - name: root\n"
			if tt.block == "" {
				src = "partitions:\n  - name: default\n    applicationacls: bob\n    queues:\n      - name: root\n"
			}
			_, err := config.Parse("q.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestApplicationACLsWarnings(t *testing.T) {
	c := mustParse(t, "partitions:\n  - name: default\n    applicationacls:\n      view: \"ann,ann\"\n    queues:\n      - name: root\n        submitacl: \"*\"\n")
	if got := strings.Join(diagStrings(c.Warnings), "\n"); !strings.Contains(got, `q.yaml:4:18: warning: applicationacls view "ann,ann": duplicate user "ann"`) {
		t.Fatalf("warnings:\n%s", got)
	}
}
