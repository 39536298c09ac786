package server_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/server"
)

// /v1/access with "explain": true returns the trail object the CLI's
// -o json prints (package decision): for a queue decision the ACLs in
// check order, for a placement the rules tried and then the ACLs of the
// queue that decided. The existing fields stay.
func TestAccessTrail(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, placeYAML)
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	decode := func(body string) (decision.Output, *decision.Trail) {
		t.Helper()
		var res decision.Output
		dec := json.NewDecoder(bytes.NewReader([]byte(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&res); err != nil {
			t.Fatalf("%v\n%s", err, body)
		}
		return res, res.Trail
	}

	code, body := h.post("/v1/access", "application/json", `{"queue":"root.teams.ml","user":"carol","explain":true}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	res, tr := decode(body)
	if !res.Allowed || res.DecidedBy == nil || tr == nil || len(tr.Placement) != 0 {
		t.Fatalf("queue decision: %s", body)
	}
	// root.teams.ml: submitacl (not set), adminacl, root.teams submitacl
	// " dev" matches; the rest are not reached.
	want := []decision.ACLStep{
		{Queue: "root.teams.ml", ACL: "submitacl", Reached: true},
		{Queue: "root.teams.ml", ACL: "adminacl", Reached: true},
		{Queue: "root.teams", ACL: "submitacl", Set: true, Entry: " dev", Reached: true, Matched: true, Match: &decision.Match{Kind: "group", Name: "dev"}},
		{Queue: "root.teams", ACL: "adminacl"},
		{Queue: "root", ACL: "submitacl"},
		{Queue: "root", ACL: "adminacl"},
	}
	if len(tr.ACLs) != len(want) {
		t.Fatalf("acls %+v\n%s", tr.ACLs, body)
	}
	for i := range want {
		g, w := tr.ACLs[i], want[i]
		if g.Queue != w.Queue || g.ACL != w.ACL || g.Set != w.Set || g.Entry != w.Entry || g.Reached != w.Reached || g.Matched != w.Matched ||
			(w.Match == nil) != (g.Match == nil) || (w.Match != nil && *w.Match != *g.Match) {
			t.Errorf("acl %d: %+v, want %+v", i, g, w)
		}
	}

	// Without explain, no trail: the answer stays as small as before.
	if _, body := h.post("/v1/access", "application/json", `{"queue":"root.teams.ml","user":"carol"}`); bytes.Contains([]byte(body), []byte(`"trail"`)) {
		t.Fatalf("trail without explain: %s", body)
	}

	// A placement: the rules tried, then the ACLs of the nearest existing
	// ancestor of the queue to be created.
	code, body = h.post("/v1/access", "application/json", `{"place":true,"user":"carol","tags":{"namespace":"spark"},"explain":true}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	res, tr = decode(body)
	if tr == nil || len(tr.Placement) != 2 || tr.Placement[1].Outcome != "placed" || len(tr.ACLs) == 0 || tr.ACLs[0].Queue != "root.teams" ||
		res.Placement == nil || res.Command != "explain" {
		t.Fatalf("placement trail: %s", body)
	}
}
