package cli_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/config"
)

// ykWithUsherKeys is YuniKorn's ConfigMap as usher configurations were
// written before usher.yaml: usher's keys in the queues.yaml YuniKorn's
// scheduler reads, and refuses whole.
const ykWithUsherKeys = `apiVersion: v1
kind: ConfigMap
metadata: {name: yunikorn-configs, namespace: yunikorn}
data:
  service.policyGroup: batch
  admissionController.accessControl.externalGroups: "^ml$"
  batch.yaml: |
    partitions:
      - name: default
        groups: merge
        adminacl: ops
        usergroupresolver:
          type: test
          users: {alice: [ml]}
        queues:
          - name: root
            submitacl: " ml"
            queues:
              - name: training
      - name: gpu
        usergroupresolver: {type: os}
        queues: [{name: root, submitacl: "*"}]
`

// usher split turns such a ConfigMap into data that YuniKorn reads and
// usher reads as before: lint refuses the old one and passes the new,
// whose partitions, identity settings and admission settings are the
// same.
func TestSplit(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(old, []byte(ykWithUsherKeys), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := run(t, "lint", old); code != 1 || !strings.Contains(out, `does not know the key "groups"`) {
		t.Fatalf("lint of the old ConfigMap: %d\n%s", code, out)
	}
	data, stderr, code := run(t, "split", old)
	if code != 0 || stderr != "usher split: moved to usher.yaml: partition default: groups, adminacl, usergroupresolver\n" {
		t.Fatalf("split: %d %s", code, stderr)
	}
	var keys map[string]string
	if err := yaml.Unmarshal([]byte(data), &keys); err != nil || len(keys) != 2 || strings.Contains(keys["batch.yaml"], "groups") {
		t.Fatalf("split wrote %v:\n%s", err, data)
	}
	// The new ConfigMap: the old one's data with split's keys.
	var cm map[string]any
	if err := yaml.Unmarshal([]byte(ykWithUsherKeys), &cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range keys {
		cm["data"].(map[string]any)[k] = v
	}
	b, _ := yaml.Marshal(cm)
	split := filepath.Join(dir, "split.yaml")
	if err := os.WriteFile(split, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := run(t, "lint", split); code != 0 {
		t.Fatalf("lint of the split ConfigMap: %d\n%s", code, out)
	}
	before, err := config.Load(old)
	if err != nil {
		t.Fatal(err)
	}
	after, err := config.Load(split, config.Strict())
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Partitions) != len(after.Partitions) {
		t.Fatalf("%d partitions, then %d", len(before.Partitions), len(after.Partitions))
	}
	for i, p := range before.Partitions {
		q := after.Partitions[i]
		if p.Name != q.Name || p.Groups != q.Groups || !reflect.DeepEqual(p.Resolver, q.Resolver) || !reflect.DeepEqual(p.AdminACL, q.AdminACL) ||
			!reflect.DeepEqual(p.Root, q.Root) {
			t.Errorf("partition %s changed:\n%+v\n%+v", p.Name, p, q)
		}
	}
	if !reflect.DeepEqual(before.Admission.Config(), after.Admission.Config()) {
		t.Error("the admission settings changed")
	}
	if _, stderr, code := run(t, "split", split); code != 2 || !strings.Contains(stderr, "has a usher.yaml key already") {
		t.Errorf("split of a split ConfigMap: %d %s", code, stderr)
	}
	if _, stderr, code := run(t, "split"); code != 2 || !strings.Contains(stderr, "want one FILE") {
		t.Errorf("split without FILE: %d %s", code, stderr)
	}
}

// Without a configuration, usher place answers what YuniKorn's default
// configuration does: the tag rule puts a pod in root.NAMESPACE.
func TestPlaceOnYuniKornsDefault(t *testing.T) {
	out, _, code := run(t, "place", "--user", "sue", "--tag", "namespace=ml")
	if code != 0 || !strings.HasPrefix(out, "root.ml\n") {
		t.Errorf("place: %d\n%s", code, out)
	}
}
