package server_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/hack/authtest"
	"github.com/usherhq/usher/server"
)

// /v1/access with "queues": true answers with every queue of the partition
// and what the user may do there (the tree usher access prints), and the
// user's groups with their sources. Asking about someone else needs the
// same permission as any other question.
func TestAccessQueues(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	ca := authtest.NewCA(t, "usher-clients")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "q.yaml")
	writeFile(t, cfg, placeYAML)
	h := start(t, server.Options{ConfigPath: cfg, AccessAuth: []string{server.AccessAuthClientCert}, ClientCAFile: ca.WriteFile(t, dir)}, nil)
	carolCert := ca.Issue(t, "carol", []string{"dev"}, authtest.CertOptions{})
	carol := caller{cert: &carolCert}
	eveCert := ca.Issue(t, "eve", nil, authtest.CertOptions{})
	eve := caller{cert: &eveCert}

	a := h.as(carol, "POST", "/v1/access", `{"queues":true,"user":"carol"}`)
	a.want(t, "carol's queues", 200)
	var res decision.Output
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("%v\n%s", err, a.body)
	}
	if res.Identity.User != "carol" || res.Partition != "default" || !res.Allowed || len(res.Identity.Groups) != 1 || res.Identity.Groups[0].Name != "dev" || res.Identity.Groups[0].Source == "" {
		t.Fatalf("identity: %s", a.body)
	}
	got := map[string][2]bool{}
	for _, q := range res.Queues {
		got[q.Queue] = [2]bool{q.Submit, q.Admin}
		if q.Submit && q.SubmitReason == "" {
			t.Errorf("%s: no submit reason", q.Queue)
		}
	}
	want := map[string][2]bool{"root": {false, false}, "root.teams": {true, false}, "root.teams.ml": {true, false}}
	if len(got) != len(want) {
		t.Fatalf("queues %v, want %v\n%s", got, want, a.body)
	}
	for q, w := range want {
		if got[q] != w {
			t.Errorf("%s: submit, admin %v, want %v", q, got[q], w)
		}
	}
	if res.Queues[0].Queue != "root" {
		t.Errorf("queues not in tree order: %s", a.body)
	}

	// Another partition by name.
	h.as(carol, "POST", "/v1/access", `{"queues":true,"user":"carol","partition":"implicit"}`).want(t, "partition implicit", 200, `"queue":"root.ml.training"`)
	// Someone else: the same permission as any other question.
	h.as(eve, "POST", "/v1/access", `{"queues":true,"user":"carol"}`).want(t, "eve about carol", 403, "accessreviews")
	// A queue list is not a decision about one queue or an application.
	for _, body := range []string{
		`{"queues":true,"user":"carol","queue":"root.teams"}`,
		`{"queues":true,"user":"carol","action":"admin"}`,
		`{"queues":true,"user":"carol","place":true}`,
		`{"queues":true,"user":"carol","application":{"id":"a","owner":"carol","queue":"root.teams.ml"}}`,
	} {
		h.as(carol, "POST", "/v1/access", body).want(t, body, 400, "queues")
	}
	h.as(carol, "POST", "/v1/access", `{"queues":true,"user":"carol","partition":"nope"}`).want(t, "unknown partition", 400, "nope")
}
