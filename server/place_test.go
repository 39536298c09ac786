package server_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/server"
)

const placeYAML = `partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        carol: [dev]
        eve: [contractors]
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
        filter:
          type: deny
          groups: [contractors]
        parent:
          name: fixed
          value: root.teams
    queues:
      - name: root
        queues:
          - name: teams
            parent: true
            submitacl: " dev"
            queues:
              - name: ml
  - name: implicit
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: ml
            queues:
              - name: training
`

// /v1/access with "place": true runs the partition's placement rules: the
// queue is the provided rule's input, tags feed tag rules, and the answer
// is the queue placed in, the rule, the decision and (explain) the trail.
// Without "place" the request keeps its meaning: the queue asked about.
func TestAccessPlacement(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, placeYAML)
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	for _, tt := range []struct {
		name, body string
		allowed    bool
		queue      string
		rule       string
		reasonHas  string
		trail      int
	}{
		{"provided queue", `{"place":true,"queue":"root.teams.ml","user":"carol"}`, true, "root.teams.ml", "rule 1: provided", "carol may submit to root.teams.ml", 0},
		{"no queue: the tag rule places", `{"place":true,"user":"carol","tags":{"namespace":"spark"},"explain":true}`, true, "root.teams.spark", "rule 2: tag", "to be created", 2},
		{"filtered, no root.default: rejected", `{"place":true,"user":"eve","tags":{"namespace":"spark"},"explain":true}`, false, "", "the root.default fallback", "the filter does not let the user through", 3},
		{"implicit rule qualifies a dotted queue", `{"partition":"implicit","place":true,"queue":"ml.training","user":"bob","groups":[]}`, false, "", "the root.default fallback", "root.ml_dot_training does not exist", 0},
		{"implicit rule, full path", `{"partition":"implicit","place":true,"queue":"root.ml.training","user":"bob","groups":["x"]}`, true, "root.ml.training", "rule 1: provided", "bob may submit", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.post("/v1/access", "application/json", tt.body)
			var res decision.Output
			if err := json.Unmarshal([]byte(body), &res); err != nil || code != 200 {
				t.Fatalf("%d %s %v", code, body, err)
			}
			p := res.Placement
			if p == nil || res.Allowed != tt.allowed || p.Placed != tt.allowed || res.Queue != tt.queue || p.Queue != tt.queue ||
				!strings.HasPrefix(p.Rule, tt.rule) || !strings.Contains(res.Reason, tt.reasonHas) || res.Trail != nil && len(res.Trail.Placement) != tt.trail || res.Trail == nil && tt.trail != 0 {
				t.Fatalf("response %s", body)
			}
			if tt.allowed != (res.DecidedBy != nil) {
				t.Fatalf("decidedBy: %s", body)
			}
		})
	}
	bad := []struct{ name, body, msg string }{
		{"tags without place", `{"user":"carol","tags":{"namespace":"x"}}`, "placement inputs"},
		{"admin with place", `{"user":"carol","place":true,"action":"admin"}`, "placement decides a submission"},
		{"unknown partition", `{"user":"carol","place":true,"partition":"gpu"}`, "unknown partition"},
	}
	for _, tt := range bad {
		code, body := h.post("/v1/access", "application/json", tt.body)
		if code != 400 || !strings.Contains(body, tt.msg) {
			t.Errorf("%s: %d %s, want 400 and %q", tt.name, code, body, tt.msg)
		}
	}
	// The existing shape is unchanged: no queue is the default queue.
	if code, body := h.post("/v1/access", "application/json", `{"queue":"root.teams.ml","user":"carol"}`); code != 200 || strings.Contains(body, "placement") || !strings.Contains(body, `"allowed":true`) {
		t.Fatalf("plain request: %d %s", code, body)
	}
}
