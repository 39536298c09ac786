package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/server"
)

// configReview is an AdmissionReview of a ConfigMap usher-system/usher
// whose queues.yaml is queues.
func configReview(t *testing.T, op, queues string) string {
	t.Helper()
	obj, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "usher", "namespace": "usher-system"},
		"data":     map[string]string{"queues.yaml": queues},
	})
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": "u-1", "operation": op, "name": "usher", "namespace": "usher-system",
			"kind":     map[string]string{"group": "", "version": "v1", "kind": "ConfigMap"},
			"resource": map[string]string{"group": "", "version": "v1", "resource": "configmaps"},
			"userInfo": map[string]any{"username": "admin"},
			"object":   json.RawMessage(obj),
		},
	})
	return string(b)
}

func postConfigReview(t *testing.T, h *harness, body string) admissionv1.AdmissionResponse {
	t.Helper()
	code, out := h.post("/validate-config", "application/json", body)
	var rr admissionv1.AdmissionReview
	if code != 200 || json.Unmarshal([]byte(out), &rr) != nil || rr.Response == nil {
		t.Fatalf("/validate-config: %d %s", code, out)
	}
	if rr.Response.UID != "u-1" {
		t.Fatalf("uid %q", rr.Response.UID)
	}
	return *rr.Response
}

// The ConfigMap's webhook refuses an invalid configuration with the
// diagnostics usher lint prints for the same queues.yaml, at
// configmap/NS/NAME/queues.yaml:LINE:COL, and returns lint warnings as
// admission warnings.
func TestValidateConfigMapWebhook(t *testing.T) {
	h := start(t, server.Options{ReloadInterval: time.Hour}, nil)
	broken := strings.Replace(teamsYAML, "adminacl: bob", "adminacl: \"bob  x\"", 1)
	r := postConfigReview(t, h, configReview(t, "UPDATE", broken))
	if r.Allowed || r.Result == nil {
		t.Fatalf("a broken configuration must be refused: %+v", r)
	}
	// What usher lint reports for the same key mounted as a file.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "queues.yaml"), broken)
	_, err := config.Load(dir)
	inv, ok := err.(*config.InvalidError)
	if !ok || len(inv.Diagnostics) == 0 {
		t.Fatalf("lint of the same data: %v", err)
	}
	for _, d := range inv.Diagnostics {
		want := strings.Replace(d.String(), filepath.Join(dir, "queues.yaml"), "configmap/usher-system/usher/queues.yaml", 1)
		if !strings.HasPrefix(want, "configmap/usher-system/usher/queues.yaml:") {
			t.Fatalf("diagnostic %q has no position in the key", want)
		}
		if !strings.Contains(r.Result.Message, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, r.Result.Message)
		}
	}

	// Valid, with a warning (a partition without a name).
	r = postConfigReview(t, h, configReview(t, "CREATE", "partitions:\n  - queues:\n      - name: root\n        submitacl: \"*\"\n"))
	if !r.Allowed {
		t.Fatalf("a valid configuration must be admitted: %+v", r.Result)
	}
	if len(r.Warnings) != 1 || r.Warnings[0] != "configmap/usher-system/usher/queues.yaml:2:5: warning: partition without a name: YuniKorn names it default" {
		t.Fatalf("warnings %q: want lint's warnings with positions", r.Warnings)
	}

	// Deleting is admitted: the last good configuration keeps serving.
	if r = postConfigReview(t, h, configReview(t, "DELETE", "")); !r.Allowed {
		t.Fatalf("delete: %+v", r.Result)
	}
	if code, _ := h.post("/validate-config", "text/plain", "x"); code != 415 {
		t.Fatalf("content type: %d", code)
	}
}

// With RefuseConfigWarnings (--validate-config-warnings=refuse) the
// leading-space trap cannot pass kubectl apply: "submitacl:  dev" is read
// by YAML as the user dev, a warning, and the change is refused with it;
// a configuration without warnings is still admitted.
func TestValidateConfigRefusesWarnings(t *testing.T) {
	trap := "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: dev\n            submitacl:  dev\n"
	h := start(t, server.Options{ReloadInterval: time.Hour}, nil)
	if r := postConfigReview(t, h, configReview(t, "UPDATE", trap)); !r.Allowed || len(r.Warnings) != 1 {
		t.Fatalf("by default the trap is admitted with its warning: %+v %q", r.Result, r.Warnings)
	}
	h = start(t, server.Options{ReloadInterval: time.Hour, RefuseConfigWarnings: true}, nil)
	r := postConfigReview(t, h, configReview(t, "UPDATE", trap))
	want := `configmap/usher-system/usher/queues.yaml:7:25: warning: submitacl "dev": the value starts 2 spaces after the colon`
	if r.Allowed || r.Result == nil || r.Result.Code != 422 || !strings.Contains(r.Result.Message, "--validate-config-warnings=refuse") ||
		!strings.Contains(r.Result.Message, want) {
		t.Fatalf("want the trap refused with its warning %q: %+v", want, r.Result)
	}
	clean := strings.Replace(trap, "submitacl:  dev", `submitacl: " dev"`, 1)
	if r := postConfigReview(t, h, configReview(t, "UPDATE", clean)); !r.Allowed || len(r.Warnings) != 0 {
		t.Fatalf("a configuration without warnings is admitted: %+v %q", r.Result, r.Warnings)
	}
}

// A body over the cap is refused without being decoded, whether its
// length is declared or not.
func TestValidateConfigBodyCap(t *testing.T) {
	h := start(t, server.Options{ReloadInterval: time.Hour, MaxReviewBody: 64 << 10}, nil)
	big := configReview(t, "UPDATE", "partitions: []\n#"+strings.Repeat("x", 128<<10)+"\n")
	if code, out := h.post("/validate-config", "application/json", big); code != 413 {
		t.Fatalf("a declared body over the cap: %d %s", code, out)
	}
	req, _ := http.NewRequest("POST", h.base+"/validate-config", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("a chunked body over the cap: %d", resp.StatusCode)
	}
}

// /readyz and usher_config_info say which generation is in service.
func TestGenerationShown(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	_, before := h.get("/readyz")
	if !strings.Contains(before, "generation: file (sha256 ") {
		t.Fatalf("/readyz:\n%s", before)
	}
	_, m := h.get("/metrics")
	if !strings.Contains(m, `usher_config_info{sha256="`) || !strings.Contains(m, `source="file"} 1`) {
		t.Fatalf("no usher_config_info:\n%s", m)
	}
	writeFile(t, cfg, strings.Replace(teamsYAML, "adminacl: bob", "adminacl: carol", 1))
	if ok, err := h.srv.Reload(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	_, after := h.get("/readyz")
	if after == before || !strings.Contains(after, "generation: file (sha256 ") {
		t.Fatalf("the generation must change:\n%s\n%s", before, after)
	}
	_, m = h.get("/metrics")
	if strings.Count(m, "usher_config_info{") != 1 {
		t.Fatalf("one series of usher_config_info:\n%s", m)
	}
}
