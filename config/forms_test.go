package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func queuesOf(t *testing.T, c *config.Config) []string {
	t.Helper()
	p, err := c.Snapshot.Partition("default")
	if err != nil {
		t.Fatal(err)
	}
	return p.Queues()
}

// YuniKorn's configuration is written several ways; each loads, and a
// mistake inside the partitions is reported at its line and column in the
// file as written.
func TestYuniKornForms(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body string
		queues     []string
		warning    string // the leading-space trap, placed in the file
	}{
		{"ConfigMap data written as YAML", `service.clusterId: mycluster
queues.yaml: |
  partitions:
    - name: default
      queues:
        - name: root
          submitacl:  dev
          queues:
            - name: a
`, []string{"root", "root.a"}, ":7:23: warning: submitacl \"dev\""},
		{"data with service.policyGroup", `service.policyGroup: group_b
queues.yaml: |
  partitions: [{name: default, queues: [{name: root, queues: [{name: wrong}]}]}]
group_b.yaml: |
    partitions:
      - name: default
        queues:
          - name: root
            submitacl:  dev
            queues:
              - name: right
`, []string{"root", "root.right"}, ":9:25: warning: submitacl \"dev\""},
		{"Helm values with yunikornDefaults", `image: {tag: 1.7.0}
yunikornDefaults:
  service.policyGroup: group-01
  admissionController.filtering.bypassNamespaces: "^kube-system$"
  group-01.yaml: |
    partitions:
      - name: default
        queues:
        - name: root
          submitacl:  dev
          queues:
          - name: helm
`, []string{"root", "root.helm"}, ":10:23: warning: submitacl \"dev\""},
		{"yunikorn-defaults and yunikorn-configs: configs wins key by key", `apiVersion: v1
kind: ConfigMap
metadata: {name: yunikorn-configs}
data:
  queues.yaml: |
    partitions:
      - name: default
        queues:
          - name: root
            submitacl:  dev
            queues:
              - name: operator
---
apiVersion: v1
kind: ConfigMap
metadata: {name: yunikorn-defaults}
data:
  service.policyGroup: queues
  queues.yaml: |
    partitions: [{name: default, queues: [{name: root, queues: [{name: chart}]}]}]
`, []string{"root", "root.operator"}, ":10:25: warning: submitacl \"dev\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml", tc.body)
			c, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := queuesOf(t, c); !slices.Equal(got, tc.queues) {
				t.Errorf("queues %v, want %v", got, tc.queues)
			}
			w := diagStrings(c.Warnings)
			if len(w) != 1 || !strings.HasPrefix(w[0], f+tc.warning) {
				t.Errorf("warnings %q, want one at %s", w, tc.warning)
			}
		})
	}
}

// A key of yunikorn-configs wins over the same key of yunikorn-defaults,
// whichever document comes first; the policy group set in one picks the
// key of the merged data.
func TestConfigMapsMerged(t *testing.T) {
	dir := t.TempDir()
	defaults := `apiVersion: v1
kind: ConfigMap
metadata: {name: yunikorn-defaults}
data:
  service.policyGroup: team
  team.yaml: |
    partitions: [{name: default, queues: [{name: root, submitacl: "*", queues: [{name: fromdefaults}]}]}]
`
	configs := `apiVersion: v1
kind: ConfigMap
metadata: {name: yunikorn-configs}
data:
  admissionController.accessControl.bypassAuth: "true"
`
	list := "apiVersion: v1\nkind: List\nitems:\n- " + indent(configs, "  ")[2:] + "- " + indent(defaults, "  ")[2:]
	for _, order := range []string{defaults + "---\n" + configs, configs + "---\n" + defaults, list} {
		c, err := config.Load(writeFile(t, dir, "both.yaml", order))
		if err != nil {
			t.Fatal(err)
		}
		if got := queuesOf(t, c); !slices.Equal(got, []string{"root", "root.fromdefaults"}) {
			t.Errorf("queues %v", got)
		}
		if !c.Admission.Config().AccessControl.BypassAuth {
			t.Error("bypassAuth of yunikorn-configs not read")
		}
	}
}

func TestYuniKornFormErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, body, want string }{
		{"no queues.yaml", "service.policyGroup: queues\nq.yaml: |\n  partitions: []\n", `no queues.yaml key holding the partitions`},
		{"Helm values of the wrong shape", "yunikornDefaults: [a]\n", ":1:19: yunikornDefaults must be a mapping"},
		{"a key that is not a string", "queues.yaml:\n  partitions: []\n", ":2:3: ConfigMap key queues.yaml must hold a string, not a mapping"},
		{"a document that is no ConfigMap", "kind: ConfigMap\ndata: {queues.yaml: x}\n---\npartitions: []\n", ":4:1: document 2 is not a ConfigMap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(writeFile(t, dir, "f.yaml", tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A mounted ConfigMap and one held in memory honour service.policyGroup.
func TestPolicyGroupDirectoryAndMemory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "service.policyGroup", "mygroup")
	writeFile(t, dir, "mygroup.yaml", "partitions: [{name: default, queues: [{name: root, submitacl: '*', queues: [{name: mounted}]}]}]\n")
	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := queuesOf(t, c); !slices.Equal(got, []string{"root", "root.mounted"}) {
		t.Errorf("queues %v", got)
	}
	c, err = config.FromConfigMap("cm", map[string]string{
		"service.policyGroup": "g",
		"g.yaml":              "partitions: [{name: default, queues: [{name: root, submitacl: '*', queues: [{name: mem}]}]}]\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := queuesOf(t, c); !slices.Equal(got, []string{"root", "root.mem"}) || c.File != "cm/g.yaml" {
		t.Errorf("queues %v in %s", got, c.File)
	}
}
