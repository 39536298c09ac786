package admission

import (
	"context"
	"runtime"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// A tenant's custom resource is read along the template paths only: 3 MiB
// of small values (the API server's limit on a request, and dry runs
// reach the webhook) must not become a hundred MiB of parsed values per
// review, past what usher's body budget plans for.
func TestTemplatesOfAHugeObjectCostItsSize(t *testing.T) {
	cfg := operatorsConfig("")
	cfg.CustomResources[0].Templates = append(cfg.CustomResources[0].Templates, "spec.workers.*.template.metadata")
	h := newTestHandler(mustCompile(t, cfg))
	kc := kindCase{kind: "SparkApplication", group: "sparkoperator.k8s.io", version: "v1beta2", resource: "sparkapplications"}
	for _, spec := range []string{`{"arguments":[` + strings.Repeat(`"",`, 1_000_000) + `""],"driver":{}}`, // values the paths skip
		`{"workers":[` + strings.Repeat(`0,`, 1_500_000) + `0],"driver":{}}`} { // items a path steps into
		req := request(t, kc, admissionv1.Create, "team-a", alice, sparkApp(nil, nil), nil)
		req.Object.Raw = []byte(`{"apiVersion":"sparkoperator.k8s.io/v1beta2","kind":"SparkApplication","metadata":{"name":"obj","namespace":"team-a"},"spec":` + spec + `}`)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp := h.Mutate(context.Background(), req)
		runtime.ReadMemStats(&after)
		if !resp.Allowed || !strings.Contains(string(resp.Patch), "/spec/driver/annotations") {
			t.Fatalf("%+v %s", resp.Result, resp.Patch)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 4*uint64(len(req.Object.Raw)) {
			t.Fatalf("a review of a %d-byte object allocated %d bytes", len(req.Object.Raw), n)
		}
	}
}

// Each template gets the stamp, so a list of many small templates would
// make a patch many times the object; past what the API server takes in a
// request the object is refused, before the patch is built.
func TestTemplatesPatchIsBounded(t *testing.T) {
	cfg := operatorsConfig("")
	cfg.CustomResources[0].Templates = []string{"spec.workers.*.template.metadata"}
	h := newTestHandler(mustCompile(t, cfg))
	kc := kindCase{kind: "SparkApplication", group: "sparkoperator.k8s.io", version: "v1beta2", resource: "sparkapplications"}
	req := request(t, kc, admissionv1.Create, "team-a", alice, sparkApp(nil, nil), nil)
	req.Object.Raw = []byte(`{"apiVersion":"sparkoperator.k8s.io/v1beta2","kind":"SparkApplication","metadata":{"name":"obj","namespace":"team-a"},` +
		`"spec":{"workers":[` + strings.Repeat(`{"template":{}},`, 150_000) + `{"template":{}}]}}`)
	resp := h.Mutate(context.Background(), req)
	if resp.Allowed || !strings.Contains(resp.Result.Message, "templates") {
		t.Fatalf("a %d-byte object got a %d-byte patch: %+v", len(req.Object.Raw), len(resp.Patch), resp.Result)
	}
	req.Object.Raw = []byte(strings.Replace(string(req.Object.Raw), strings.Repeat(`{"template":{}},`, 150_000), strings.Repeat(`{"template":{}},`, 100), 1))
	if resp := h.Mutate(context.Background(), req); !resp.Allowed || strings.Count(string(resp.Patch), `"op"`) != 102 {
		t.Fatalf("%+v %s", resp.Result, resp.Patch)
	}
}
