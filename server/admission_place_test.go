package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/server"
)

const admissionPlaceYAML = `partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        parent:
          name: fixed
          value: root.teams
      - name: provided
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: teams
            parent: true
            queues:
              - name: spark
                submitacl: alice
          - name: secret
            submitacl: bob
          - name: ml
            queues:
              - name: training
                submitacl: alice
admissionController:
  enforceQueueACLs: true
`

// alicePodReview is a pod CREATE by alice in ns with the given labels.
func alicePodReview(ns string, labels map[string]string) string {
	l, _ := json.Marshal(labels)
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",
	  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":%q,"operation":"CREATE","userInfo":{"username":"alice","groups":["system:authenticated"]},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":%s},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, ns, l)
}

// With enforceQueueACLs, YuniKorn's markers are checked on the queue
// YuniKorn's placement rules give, with the namespace as the shim's
// namespace tag; a rejected placement denies with the placement's reason.
// Other schedulers' markers keep their mapping.
func TestAdmissionChecksThePlacedQueue(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, admissionPlaceYAML)
	h := start(t, server.Options{ConfigPath: cfg, AccessAuth: []string{server.AccessAuthNone}}, nil)
	for _, tt := range []struct {
		name    string
		ns      string
		labels  map[string]string
		allowed bool
		msg     []string
	}{
		// The tag rule places the pod in root.teams.spark, where alice may
		// submit, whatever queue it names: YuniKorn never runs it in
		// root.secret.
		{"the tag rule places before the named queue", "spark", map[string]string{"queue": "root.secret"}, true, nil},
		{"no marker: the tag rule places", "spark", nil, true, nil},
		// No root.teams.other: the provided rule places in root.secret,
		// where alice may not submit, and there is no root.default.
		{"the named queue is denied and nothing else places", "other", map[string]string{"queue": "root.secret"}, false,
			[]string{`label queue="root.secret"`, "YuniKorn's placement rejected", "alice may not submit to root.secret", "root.default does not exist"}},
		// YuniKorn qualifies ml.training as root.ml_dot_training, not
		// root.ml.training (which alice may use).
		{"an unqualified dotted marker", "other", map[string]string{"yunikorn.apache.org/queue": "ml.training"}, false,
			[]string{`queue "root.ml_dot_training"`, "root.ml_dot_training does not exist and create is false"}},
		{"a full path", "other", map[string]string{"queue": "root.ml.training"}, true, nil},
		{"no marker, nothing places", "other", nil, false, []string{"default queue", "rejected"}},
		// Kueue's marker keeps its mapping: ml.training is root.ml.training.
		{"another scheduler's marker keeps its mapping", "spark", map[string]string{"kueue.x-k8s.io/queue-name": "ml.training"}, true, nil},
		{"another scheduler's marker, denied", "spark", map[string]string{"kueue.x-k8s.io/queue-name": "secret"}, false,
			[]string{`queue "root.secret"`, "read for kueue", "alice may not submit to root.secret"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.post("/mutate", "application/json", alicePodReview(tt.ns, tt.labels))
			var rv struct {
				Response struct {
					Allowed bool
					Status  struct{ Message string }
				}
			}
			if err := json.Unmarshal([]byte(body), &rv); err != nil || code != 200 {
				t.Fatalf("%d %s %v", code, body, err)
			}
			if rv.Response.Allowed != tt.allowed {
				t.Fatalf("allowed %v, want %v: %s", rv.Response.Allowed, tt.allowed, rv.Response.Status.Message)
			}
			for _, m := range tt.msg {
				if !strings.Contains(rv.Response.Status.Message, m) {
					t.Errorf("message %q lacks %q", rv.Response.Status.Message, m)
				}
			}
		})
	}
}

// A partition without placementrules: YuniKorn's implicit provided rule.
// A pod without a marker is checked against usher's default queue as
// before (YuniKorn's own admission controller labels it with its default
// queue).
func TestAdmissionImplicitPlacement(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, `partitions:
  - name: default
    queues:
      - name: root
        submitacl: alice
        queues:
          - name: ml
            queues:
              - name: training
admissionController:
  enforceQueueACLs: true
`)
	h := start(t, server.Options{ConfigPath: cfg, AccessAuth: []string{server.AccessAuthNone}}, nil)
	for _, tt := range []struct {
		labels  map[string]string
		allowed bool
		msg     string
	}{
		{map[string]string{"queue": "ml.training"}, false, "root.ml_dot_training does not exist"},
		{map[string]string{"queue": "root.ml.training"}, true, ""},
		{map[string]string{"queue": "root.ml"}, false, "root.ml is a parent queue"},
		{nil, true, ""},
	} {
		code, body := h.post("/mutate", "application/json", alicePodReview("ns", tt.labels))
		if code != 200 || strings.Contains(body, `"allowed":true`) != tt.allowed || !strings.Contains(body, tt.msg) {
			t.Errorf("%v: %d %s, want allowed %v and %q", tt.labels, code, body, tt.allowed, tt.msg)
		}
	}
}

// A placement that rejects the pod is refused with the placement's trail;
// in warn mode the pod is admitted with that refusal as its warning. A
// trail of many rules is cut to a bounded length, with a mark.
func TestAdmissionPlacementRejectedTrail(t *testing.T) {
	var rules strings.Builder
	for i := range 60 {
		fmt.Fprintf(&rules, "      - name: tag\n        value: tag%d\n", i)
	}
	for _, mode := range []string{"deny", "warn"} {
		t.Run(mode, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "q.yaml")
			writeFile(t, cfg, "partitions:\n  - name: default\n    placementrules:\n      - name: provided\n"+rules.String()+`    queues:
      - name: root
        submitacl: " "
        queues:
          - name: ops
            submitacl: bob
admissionController:
  enforceQueueACLs: true
  enforceQueueACLsMode: `+mode+"\n")
			h := start(t, server.Options{ConfigPath: cfg}, nil)
			code, body := h.post("/mutate", "application/json", alicePodReview("spark", map[string]string{"queue": "root.ops"}))
			var rv struct {
				Response struct {
					Allowed  bool
					Warnings []string
					Status   struct{ Message string }
				}
			}
			if err := json.Unmarshal([]byte(body), &rv); err != nil || code != 200 {
				t.Fatalf("%d %s %v", code, body, err)
			}
			msg := rv.Response.Status.Message
			if mode == "warn" {
				if !rv.Response.Allowed || len(rv.Response.Warnings) != 1 {
					t.Fatalf("warn mode: allowed %v warnings %q", rv.Response.Allowed, rv.Response.Warnings)
				}
				msg = rv.Response.Warnings[0]
			} else if rv.Response.Allowed {
				t.Fatal("deny mode: a rejected placement was admitted")
			}
			for _, want := range []string{`label queue="root.ops"`, "YuniKorn's placement rejected: rule 1 (provided): alice may not submit to root.ops",
				`rule 2 (tag "tag0"): the application has no tag "tag0"`, "[cut "} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if len(msg) > 2200 {
				t.Errorf("message of %d bytes, want it cut near 2 KiB", len(msg))
			}
		})
	}
}
