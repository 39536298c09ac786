package server_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// yunikornReview is an AdmissionReview of YuniKorn's ConfigMap
// yunikorn/yunikorn-configs holding data.
func yunikornReview(t *testing.T, data map[string]string) string {
	t.Helper()
	var review map[string]any
	if err := json.Unmarshal([]byte(configReview(t, "UPDATE", "")), &review); err != nil {
		t.Fatal(err)
	}
	req := review["request"].(map[string]any)
	req["name"], req["namespace"] = "yunikorn-configs", "yunikorn"
	req["object"] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "yunikorn-configs", "namespace": "yunikorn"}, "data": data}
	b, _ := json.Marshal(review)
	return string(b)
}

// /validate-config refuses a change of YuniKorn's ConfigMap that
// YuniKorn's scheduler would refuse whole: a key its strict decoder does
// not know, an ACL its YAML decoder reads otherwise than usher. usher's
// settings in the usher.yaml key pass.
func TestValidateConfigKeepsYuniKornReadable(t *testing.T) {
	h := start(t, server.Options{ReloadInterval: time.Hour}, nil)
	queues := "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n"
	for _, tc := range []struct{ name, queues, want string }{
		{"usher's key in queues.yaml", strings.Replace(queues, "    queues:", "    groups: merge\n    queues:", 1),
			`configmap/yunikorn/yunikorn-configs/queues.yaml:3:5: YuniKorn's scheduler does not know the key "groups" here and refuses the whole file`},
		{"a tagged ACL", strings.Replace(queues, `"*"`, "!!binary KiAg", 1),
			`configmap/yunikorn/yunikorn-configs/queues.yaml:5:20: submitacl is tagged !!binary: usher reads the text "KiAg", YuniKorn's YAML decoder reads "*  "`},
	} {
		r := postConfigReview(t, h, yunikornReview(t, map[string]string{"queues.yaml": tc.queues}))
		if r.Allowed || r.Result == nil || !strings.Contains(r.Result.Message, tc.want) {
			t.Errorf("%s: %+v\nwant %q", tc.name, r.Result, tc.want)
		}
	}
	r := postConfigReview(t, h, yunikornReview(t, map[string]string{"queues.yaml": queues, "usher.yaml": "partitions: [{name: default, groups: merge}]\n"}))
	if !r.Allowed {
		t.Errorf("usher.yaml: %+v", r.Result)
	}
}

// Served from a ConfigMap whose service.policyGroup names a key it
// lacks, usher serves YuniKorn's default configuration, and says so on
// /readyz and in the log.
func TestMissingPolicyGroupShown(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "service.policyGroup"), "batch")
	writeFile(t, filepath.Join(dir, "queues.yaml"), teamsYAML)
	h := start(t, server.Options{ConfigPath: dir, ReloadInterval: time.Hour}, nil)
	want := `default: service.policyGroup names "batch", whose key the ConfigMap lacks: serving YuniKorn's default configuration, where everyone may submit to every queue`
	if _, ready := h.get("/readyz"); !strings.Contains(ready, want) {
		t.Errorf("/readyz:\n%s", ready)
	}
	if !strings.Contains(h.logs.String(), `service.policyGroup is \"batch\", but the ConfigMap has no batch.yaml key`) {
		t.Errorf("log:\n%s", h.logs.String())
	}
}

// YuniKorn's ConfigMap holding usher's keys in queues.yaml loaded before
// and still serves, with warnings that usher v0.3 refuses it: in the log,
// on /readyz and in usher_config_upgrade_warnings.
func TestServedYuniKornConfigMapWithUsherKeys(t *testing.T) {
	cm := filepath.Join(t.TempDir(), "cm.yaml")
	writeFile(t, cm, "kind: ConfigMap\nmetadata: {name: yunikorn-configs}\ndata:\n  queues.yaml: |\n    partitions: [{name: default, groups: merge, queues: [{name: root, submitacl: '*'}]}]\n")
	h := start(t, server.Options{ConfigPath: cm, ReloadInterval: time.Hour}, nil)
	if _, ready := h.get("/readyz"); !strings.Contains(ready, "upgrade: the configuration in service has 1 warnings") {
		t.Errorf("/readyz:\n%s", ready)
	}
	if _, m := h.get("/metrics"); metricValue(m, "usher_config_upgrade_warnings") != "1" {
		t.Errorf("usher_config_upgrade_warnings: %q", metricValue(m, "usher_config_upgrade_warnings"))
	}
	if !strings.Contains(h.logs.String(), `does not know the key \"groups\"`) {
		t.Errorf("log:\n%s", h.logs.String())
	}
}
