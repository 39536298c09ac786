package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/policy"
)

// usherInQueues is YuniKorn's ConfigMap whose queues.yaml holds usher's
// own settings: yunikorn-core decodes that document with KnownFields(true)
// and refuses the whole file.
const usherInQueues = `apiVersion: v1
kind: ConfigMap
metadata: {name: NAME, namespace: yunikorn}
data:
  queues.yaml: |
    admissionController:
      enforceQueueACLs: false
    partitions:
      - name: default
        groups: merge
        adminacl: ops
        usergroupresolver:
          type: test
          users: {alice: [ml]}
        statedumpfilepath: /tmp/dump
        queues:
          - name: root
            submitacl: "*"
            limits:
              - limit: one
                maxapplications: many
`

// In YuniKorn's ConfigMaps, every key YuniKorn's strict decoder does not
// know, and a value it cannot decode, is reported at its position with
// where usher's setting belongs: an error in lint (Strict), a warning
// that a later release refuses it when served. usher's own ConfigMap is
// not YuniKorn's, and may hold them.
func TestYuniKornConfigMapStaysReadable(t *testing.T) {
	dir := t.TempDir()
	yk := writeFile(t, dir, "yk.yaml", strings.Replace(usherInQueues, "NAME", "yunikorn-configs", 1))
	_, err := config.Load(yk, config.Strict())
	got := errorLines(t, err)
	home := `usher's setting belongs in the ConfigMap's usher.yaml key, under the partition's name (usher split moves it; docs/yunikorn.md)`
	want := []string{
		yk + `:6:5: YuniKorn's scheduler does not know the key "admissionController" here and refuses the whole file: write the admission settings as the ConfigMap's admissionController.* keys, or in its usher.yaml key`,
		yk + `:10:9: YuniKorn's scheduler does not know the key "groups" here and refuses the whole file: ` + home,
		yk + `:11:9: YuniKorn's scheduler does not know the key "adminacl" here and refuses the whole file: ` + home,
		yk + `:14:11: YuniKorn's scheduler does not know the key "users" here and refuses the whole file: move usergroupresolver into the ConfigMap's usher.yaml key, under the partition's name (usher split moves it; docs/yunikorn.md)`,
		yk + `:15:9: YuniKorn's scheduler does not know the key "statedumpfilepath" here and refuses the whole file: YuniKorn 1.5 removed it and usher does not read it: delete it`,
		yk + ":21:34: YuniKorn's scheduler refuses the whole file: cannot unmarshal !!str `many` into uint64",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lint:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Served: the same, as warnings that a later release refuses it.
	c, err := config.Load(yk)
	if err != nil {
		t.Fatalf("a configuration that loaded before must still load: %v", err)
	}
	var upgrade []string
	for _, w := range c.Warnings {
		if w.Upgrade {
			upgrade = append(upgrade, w.String())
		}
	}
	if len(upgrade) != len(want) || !strings.HasSuffix(upgrade[1], home+"; usher "+config.RefusingRelease+" refuses this: see docs/upgrade.md") {
		t.Fatalf("served warnings:\n%s", strings.Join(upgrade, "\n"))
	}

	// Helm values (yunikorn-defaults) and a ConfigMap read through the
	// API are YuniKorn's too.
	helm := writeFile(t, dir, "values.yaml", "yunikornDefaults:\n  queues.yaml: |\n    partitions: [{name: default, groups: merge, queues: [{name: root}]}]\n")
	if _, err := config.Load(helm, config.Strict()); err == nil || !strings.Contains(err.Error(), helm+`:3:34: YuniKorn's scheduler does not know the key "groups"`) {
		t.Errorf("Helm values: %v", err)
	}
	data := map[string]string{"queues.yaml": "partitions: [{name: default, groups: merge, queues: [{name: root}]}]\n"}
	if _, err := config.FromConfigMap("configmap/yunikorn/yunikorn-defaults", data, config.Strict()); err == nil ||
		!strings.Contains(err.Error(), `configmap/yunikorn/yunikorn-defaults/queues.yaml:1:30: YuniKorn's scheduler does not know the key "groups"`) {
		t.Errorf("through the API: %v", err)
	}

	// usher's own ConfigMap, and a usher YAML file, are not YuniKorn's.
	own := writeFile(t, dir, "own.yaml", strings.Replace(strings.Replace(usherInQueues, "NAME", "usher-config", 1), "many", "2", 1))
	if _, err := config.Load(own, config.Strict()); err != nil {
		t.Errorf("usher's own ConfigMap: %v", err)
	}
	if _, err := config.FromConfigMap("configmap/usher-system/usher-config", data, config.Strict()); err != nil {
		t.Errorf("usher's own ConfigMap through the API: %v", err)
	}
}

// The usher.yaml key of a ConfigMap holds usher's settings outside the
// document YuniKorn reads, merged by partition name; its mistakes are
// reported at their place in that key.
func TestUsherYAMLKey(t *testing.T) {
	dir := t.TempDir()
	manifest := `apiVersion: v1
kind: ConfigMap
metadata: {name: yunikorn-configs, namespace: yunikorn}
data:
  queues.yaml: |
    partitions:
      - name: default
        queues:
          - name: root
            submitacl: " ml"
            queues:
              - name: training
  usher.yaml: |
    admissionController:
      enforceQueueACLs: true
    partitions:
      - name: Default
        groups: merge
        adminacl: ops
        usergroupresolver:
          type: test
          users: {alice: [ml]}
`
	f := writeFile(t, dir, "cm.yaml", manifest)
	c, err := config.Load(f, config.Strict())
	if err != nil {
		t.Fatal(err)
	}
	part := c.Partitions[0]
	if part.Groups != identity.ModeMerge || part.Resolver.Type != "test" || part.AdminACL == nil || part.AdminACL.String() != "ops" {
		t.Errorf("usher.yaml not merged: groups %v, resolver %q, adminacl %v", part.Groups, part.Resolver.Type, part.AdminACL)
	}
	if !c.Admission.Config().EnforceQueueACLs {
		t.Error("usher.yaml's admissionController not read")
	}

	tests := []struct{ name, from, to, want string }{
		{"a mistake inside usher.yaml", "adminacl: ops", "adminacl: \"ops  x\"", f + `:19:24: partition adminacl "ops  x": more than one space`},
		{"a partition queues.yaml lacks", "- name: Default", "- name: gpu", f + `:17:9: usher.yaml: partition "gpu" is not in the partitions document`},
		{"a key of YuniKorn's", "        groups: merge\n", "        groups: merge\n        placementrules: []\n", f + `:19:9: usher.yaml: "placementrules" belongs in the partitions document, which YuniKorn reads`},
		{"set twice", "      - name: default\n        queues:", "      - name: default\n        groups: given\n        queues:", f + `:19:9: usher.yaml: groups is set both here and in the partitions document (line 3): set it in one`},
		{"not YAML", "    partitions:\n      - name: Default", "    partitions:\n      - name: [Default", f + `:16:5: YAML: `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := writeFile(t, dir, "g.yaml", strings.Replace(manifest, tc.from, tc.to, 1))
			_, err := config.Load(g, config.Strict())
			if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), g, f), tc.want) {
				t.Errorf("err = %v\nwant %q", err, tc.want)
			}
		})
	}

	// Held in memory and mounted, usher.yaml is named as its own key.
	data := map[string]string{"queues.yaml": "partitions: [{name: default, queues: [{name: root}]}]\n", "usher.yaml": "partitions: [{name: default, groups: sometimes}]\n"}
	if _, err := config.FromConfigMap("configmap/yunikorn/yunikorn-configs", data); err == nil ||
		!strings.Contains(err.Error(), "configmap/yunikorn/yunikorn-configs/usher.yaml:1:38: unknown groups mode") {
		t.Errorf("in memory: %v", err)
	}
	mounted := t.TempDir()
	for k, v := range data {
		writeFile(t, mounted, k, v)
	}
	if _, err := config.Load(mounted); err == nil || !strings.Contains(err.Error(), mounted+"/usher.yaml:1:38: unknown groups mode") {
		t.Errorf("mounted: %v", err)
	}
}

// usher reads a value as its YAML node's text whatever its tag, where
// yunikorn-core decodes queues.yaml with yaml.v3 into string fields:
// every explicit tag but !!str on a value usher reads is reported with
// what YuniKorn's decoder makes of it.
func TestTaggedValues(t *testing.T) {
	tests := []struct{ value, want string }{
		{"!!binary KiAg", `q.yaml:5:20: submitacl is tagged !!binary: usher reads the text "KiAg", YuniKorn's YAML decoder reads "*  "; write the value without the tag`},
		{"!!int abc", "q.yaml:5:20: submitacl is tagged !!int: usher reads the text \"abc\", YuniKorn's YAML decoder refuses the whole file (cannot decode !!str `abc` as a !!int); write the value without the tag"},
		{"!!null alice", "q.yaml:5:20: submitacl is tagged !!null: usher reads the text \"\", YuniKorn's YAML decoder refuses the whole file (cannot decode !!str `alice` as a !!null); write the value without the tag"},
		{"!!float 1.5", `q.yaml:5:20: submitacl is tagged !!float: usher reads the text "1.5", YuniKorn's YAML decoder reads "1.5"; write the value without the tag`},
		{"!custom alice", `q.yaml:5:20: submitacl is tagged !custom: usher reads the text "alice", YuniKorn's YAML decoder reads "alice"; write the value without the tag`},
		{"!!str alice", ""},
		{"! alice", ""},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			src := "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: " + tc.value + "\n"
			_, err := config.Parse("q.yaml", []byte(src), config.Strict())
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := errorLines(t, err); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("lint:\n%s\nwant\n%s", strings.Join(got, "\n"), tc.want)
			}
			c, err := config.Parse("q.yaml", []byte(src))
			if err != nil || len(c.Warnings) == 0 || !c.Warnings[0].Upgrade {
				t.Fatalf("served: a warning that a later release refuses it: %v %v", c, err)
			}
		})
	}
}

// A ConfigMap whose service.policyGroup names a key it lacks: YuniKorn's
// scheduler serves its default configuration, and usher does the same,
// with a warning at service.policyGroup; with queue or delete ACLs
// enforced, that configuration (every queue open) is refused.
func TestPolicyGroupKeyMissing(t *testing.T) {
	dir := t.TempDir()
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yunikorn-configs}\ndata:\n  service.policyGroup: nope\n  queues.yaml: |\n    partitions: [{name: default, queues: [{name: root, submitacl: ' admins'}]}]\n"
	f := writeFile(t, dir, "cm.yaml", body)
	c, err := config.Load(f, config.Strict())
	if err != nil {
		t.Fatal(err)
	}
	want := f + `:5:24: warning: service.policyGroup is "nope", but the ConfigMap has no nope.yaml key: YuniKorn's scheduler serves its default configuration, where everyone may submit to every queue, and so does usher`
	if ws := diagStrings(c.Warnings); !slices.Contains(ws, want) {
		t.Errorf("warnings:\n%s\nwant %s", strings.Join(ws, "\n"), want)
	}
	p, _ := c.Snapshot.Partition("default")
	if d, err := p.Decide("root", acl.NewSubject("anyone", nil), policy.Submit); err != nil || !d.Allowed || len(c.Partitions) != 1 || c.Partitions[0].Placement == nil {
		t.Errorf("not YuniKorn's default configuration: %+v %v", d, err)
	}

	for _, setting := range []string{"enforceQueueACLs", "enforceDeleteACLs"} {
		g := writeFile(t, dir, "g.yaml", strings.Replace(body, "data:\n", "data:\n  admissionController."+setting+": \"true\"\n", 1))
		_, err := config.Load(g)
		if got := errorLines(t, err); len(got) != 1 || got[0] != g+`:6:24: service.policyGroup is "nope", but the ConfigMap has no nope.yaml key: YuniKorn's scheduler serves its default configuration, where everyone may submit to every queue, and usher refuses it while enforceQueueACLs or enforceDeleteACLs is on` {
			t.Errorf("%s:\n%s", setting, strings.Join(got, "\n"))
		}
	}
}

// yunikorn-core's DefaultSchedulerConfig (pkg/common/configs/config.go),
// which its scheduler serves when given no configuration.
const yunikornDefault = `
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
`

// The embedded default is YuniKorn's own default configuration.
func TestEmbeddedDefaultIsYuniKorns(t *testing.T) {
	var ours, theirs schedulerConfig
	decodeStrict(t, config.DefaultYAML(), &ours)
	decodeStrict(t, []byte(yunikornDefault), &theirs)
	if !equalJSON(t, ours, theirs) {
		t.Errorf("the embedded default %+v is not YuniKorn's %+v", ours, theirs)
	}
}
