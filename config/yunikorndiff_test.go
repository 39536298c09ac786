package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yamlcore "go.yaml.in/yaml/v3"
	yamlold "gopkg.in/yaml.v3"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/policy"
)

// schedulerConfig is shaped like yunikorn-core's SchedulerConfig
// (pkg/common/configs/config.go): the keys its decoder knows and the
// types it decodes them into.
type schedulerConfig struct {
	Partitions []struct {
		Name           string
		Queues         []queueConfig
		PlacementRules []placementRule
		Limits         []limit
		Preemption     struct {
			Enabled                *bool
			QuotaPreemptionEnabled *bool
		}
		NodeSortPolicy struct {
			Type            string
			ResourceWeights map[string]float64
		}
		UserGroupResolver struct {
			Type string `yaml:"type,omitempty"`
		}
	}
	Checksum string
}

type queueConfig struct {
	Name            string
	Parent          bool
	Resources       resources
	MaxApplications uint64
	Properties      map[string]string
	AdminACL        string
	SubmitACL       string
	ChildTemplate   struct {
		MaxApplications uint64
		Properties      map[string]string
		Resources       resources
	}
	Queues []queueConfig
	Limits []limit
}

type resources struct {
	Guaranteed map[string]string
	Max        map[string]string
}

type placementRule struct {
	Name   string
	Create bool
	Filter struct {
		Type   string
		Users  []string
		Groups []string
	}
	Parent *placementRule
	Value  string
}

type limit struct {
	Limit           string
	Users           []string
	Groups          []string
	MaxResources    map[string]string
	MaxApplications uint64
}

// aclsOnly is the part of SchedulerConfig usher and YuniKorn both read
// from any usher document, usher's own keys beside it.
type aclsOnly struct {
	Partitions []struct {
		Name   string
		Queues []aclQueue
	}
}

type aclQueue struct {
	Name                string
	SubmitACL, AdminACL string
	Queues              []aclQueue
}

// decoders are the YAML decoders of YuniKorn's releases, each as
// yunikorn-core's ParseAndValidateConfig calls it: gopkg.in/yaml.v3
// v3.0.1 (YuniKorn 1.7 and before) and go.yaml.in/yaml/v3 (1.8 and
// after pin v3.0.4; this module's v3.0.6 differs from it only in
// resolving "<<", a merge key, which usher refuses).
var decoders = map[string]func(data []byte, strict bool, out any) error{
	"gopkg.in/yaml.v3": func(data []byte, strict bool, out any) error {
		d := yamlold.NewDecoder(bytes.NewReader(data))
		d.KnownFields(strict)
		return eofOK(d.Decode(out))
	},
	"go.yaml.in/yaml/v3": func(data []byte, strict bool, out any) error {
		d := yamlcore.NewDecoder(bytes.NewReader(data))
		d.KnownFields(strict)
		return eofOK(d.Decode(out))
	},
}

// eofOK is ParseAndValidateConfig's reading of an empty document.
func eofOK(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func decodeStrict(t *testing.T, data []byte, out any) {
	t.Helper()
	if err := decoders["go.yaml.in/yaml/v3"](data, true, out); err != nil {
		t.Fatal(err)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

// FuzzYuniKornReadsSameACLs decodes every document usher accepts (usher
// lint: Strict) both ways, usher's reading and YuniKorn's decoders into
// SchedulerConfig's shape, and requires the same ACL in every queue. A
// document usher accepts as the queues.yaml of YuniKorn's ConfigMap is
// also decoded as yunikorn-core decodes it, with KnownFields(true), which
// must not refuse it. Its seeds (the repository's YAML configurations and
// the edge cases below) run in go test.
func FuzzYuniKornReadsSameACLs(f *testing.F) {
	for _, glob := range []string{"../examples/*.yaml", "../examples/*/*.yaml", "testdata/yunikorn-docs/*.yaml", "../deploy/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add(config.DefaultYAML())
	for _, acl := range []string{
		`!!binary KiAg`, `!!binary "YWxpY2U="`, `!!null`, `!!null alice`, `!!int 5`, `!!float 1.5`, `!!bool true`,
		`!!timestamp 2001-12-14`, `!custom alice`, `!!str alice`, `! alice`, `!<tag:yaml.org,2002:str> alice`,
		`"*"`, `'*'`, `" ml"`, `' ml'`, `alice,bob ml`, `"\x61lice"`, `"al\nice"`, `~`, `null`, ``, `""`, `5`, `0x1F`, `1e3`,
		`yes`, `.inf`, `2001-12-14`, "|\n          alice ml", "|-\n          alice ml", ">-\n          alice\n          ml", "alice\n          ml",
		`&a alice`, `*a`, `[alice]`, `{a: b}`, `alice # comment`, `"alice" # comment`, `alice  ml`, `' alice'`,
	} {
		f.Add([]byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        adminacl: &a admin\n        submitacl: " + acl + "\n"))
	}
	f.Add([]byte("partitions:\n  - queues:\n      - name: a\n        submitacl: x\n      - name: b\n        submitacl: !!binary eA==\n"))
	f.Add([]byte("partitions: [{name: p, queues: [{name: ROOT, submitacl: ' g', queues: [{name: x, adminacl: u}]}]}]\n"))
	f.Add([]byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        limits: [{limit: !!int x}]\n"))
	f.Add([]byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        <<: {submitacl: x}\n"))
	f.Add([]byte("%YAML 1.1\n---\npartitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: alice\n...\n"))
	f.Add([]byte("partitions:\n- name: default\n  queues:\n  - name: root\n    submitacl: \"\\t alice\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse("f.yaml", data, config.Strict())
		if err != nil {
			return
		}
		_, ykErr := config.FromConfigMap("configmap/yunikorn/yunikorn-configs", map[string]string{"queues.yaml": string(data)}, config.Strict())
		for name, decode := range decoders {
			var acls aclsOnly
			if err := decode(data, false, &acls); err != nil {
				t.Fatalf("%s: usher accepts what YuniKorn's decoder refuses: %v", name, err)
			}
			if ykErr == nil {
				var full schedulerConfig
				if err := decode(data, true, &full); err != nil {
					t.Fatalf("%s: usher accepts as YuniKorn's queues.yaml what yunikorn-core's strict decoder refuses: %v", name, err)
				}
			}
			if len(acls.Partitions) != len(c.Partitions) {
				t.Fatalf("%s: %d partitions, usher reads %d", name, len(acls.Partitions), len(c.Partitions))
			}
			for i, p := range acls.Partitions {
				root := aclQueue{Name: policy.RootQueue, Queues: p.Queues}
				if len(p.Queues) == 1 && strings.EqualFold(p.Queues[0].Name, policy.RootQueue) {
					root = p.Queues[0]
				}
				sameACLs(t, name, c.Partitions[i].Name, root, c.Partitions[i].Root)
			}
		}
	})
}

// sameACLs requires the queue tree YuniKorn decoded (yk) and usher's to
// hold the same queues with the same ACLs.
func sameACLs(t *testing.T, decoder, partition string, yk aclQueue, q *policy.Queue) {
	t.Helper()
	if !strings.EqualFold(yk.Name, q.Name) || len(yk.Queues) != len(q.Children) {
		t.Fatalf("%s: partition %s: queue %q with %d children, usher reads %q with %d", decoder, partition, yk.Name, len(yk.Queues), q.Name, len(q.Children))
	}
	for _, a := range []struct {
		what string
		text string
		got  *acl.ACL
	}{{"submitacl", yk.SubmitACL, q.SubmitACL}, {"adminacl", yk.AdminACL, q.AdminACL}} {
		want, _, err := acl.Parse(a.text, acl.YuniKorn)
		got := "<none>"
		if a.got != nil {
			got = a.got.String()
		}
		if a.got == nil && a.text == "" {
			continue
		}
		if err != nil || got != want.String() {
			t.Fatalf("%s: partition %s: queue %s: %s is %q to YuniKorn (%v), %s to usher", decoder, partition, q.Name, a.what, a.text, err, got)
		}
	}
	for i := range yk.Queues {
		sameACLs(t, decoder, partition, yk.Queues[i], q.Children[i])
	}
}
