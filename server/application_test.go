package server_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/server"
)

// The queues of the Marketing example of the "Managing YARN ACLs" guide, with a cluster admin.
const marketingYAML = `partitions:
  - name: default
    adminacl: yarnadmin
    queues:
      - name: root
        queues:
          - name: marketing
            submitacl: john,jane
            adminacl: " others"
          - name: dev
            submitacl: " dev"
`

func TestApplicationDecisions(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, marketingYAML)
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	app := `"application":{"id":"application_1_0001","owner":"john","queue":"root.marketing"}`
	tests := []struct {
		name, body string
		allowed    bool
		reason     string
	}{
		{"owner views", `{"user":"john","groups":["x"],"action":"view",` + app + `}`, true, ""},
		{"stranger may not kill", `{"user":"jane","groups":["x"],"action":"kill",` + app + `}`, false, "jane may not kill"},
		{"queue admin kills", `{"user":"sam","groups":["others"],"action":"kill",` + app + `}`, true, ""},
		{"cluster admin kills", `{"user":"yarnadmin","groups":["x"],"action":"kill",` + app + `}`, true, ""},
		{"view ACL", `{"user":"jane","groups":["x"],"action":"view","application":{"owner":"john","queue":"root.marketing","viewACL":"jane"}}`, true, ""},
		{"view ACL does not grant kill", `{"user":"jane","groups":["x"],"action":"kill","application":{"owner":"john","queue":"root.marketing","viewACL":"jane"}}`, false, ""},
		{"modify ACL grants kill", `{"user":"jane","groups":["x"],"action":"kill","application":{"owner":"john","queue":"root.marketing","modifyACL":" x"}}`, true, ""},
		{"move needs submit on the target", `{"user":"john","groups":["x"],"action":"move","targetQueue":"root.dev",` + app + `}`, false, ""},
		{"move with submit on both", `{"user":"john","groups":["dev"],"action":"move","targetQueue":"root.dev",` + app + `}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.post("/v1/access", "application/json", tt.body)
			var res decision.Output
			if code != 200 || json.Unmarshal([]byte(body), &res) != nil {
				t.Fatalf("%d %s", code, body)
			}
			if res.Allowed != tt.allowed || !strings.Contains(res.Reason, tt.reason) || res.Owner != "john" || len(res.Requirements) == 0 {
				t.Fatalf("%s", body)
			}
			if strings.Contains(tt.body, `"move"`) && len(res.Requirements) != 3 {
				t.Fatalf("a move has three requirements: %s", body)
			}
		})
	}
	for _, tt := range []struct{ body, msg string }{
		{`{"user":"john","action":"submit",` + app + `}`, "unknown application action"},
		{`{"user":"john","action":"view","queue":"root.dev",` + app + `}`, "application.queue"},
		{`{"user":"john","action":"view","application":{"queue":"root.dev"}}`, "owner"},
		{`{"user":"john","action":"view","application":{"owner":"john","viewACL":"a\tb"}}`, "application.viewACL"},
		{`{"user":"john","action":"view","application":{"owner":"john","queue":"root.nope"}}`, "unknown queue"},
		{`{"user":"john","action":"submit","queue":"root.dev","targetQueue":"root.dev"}`, "targetQueue is only for"},
		{`{"user":"john","action":"view","application":{"owner":"john","colour":"red"}}`, "colour"},
	} {
		code, body := h.post("/v1/access", "application/json", tt.body)
		if code != 400 || !strings.Contains(body, tt.msg) {
			t.Errorf("%s: %d %s, want 400 and %q", tt.body, code, body, tt.msg)
		}
	}
}
