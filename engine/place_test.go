package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/usherhq/usher/engine"
)

const placeYAML = `partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        alice: [dev]
        carl: [staff]
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
      - name: user
        create: true
        filter:
          type: allow
          groups: [staff]
        parent:
          name: fixed
          value: root.users
    queues:
      - name: root
        queues:
          - name: default
            submitacl: " dev"
          - name: teams
            parent: true
            submitacl: " dev"
            queues:
              - name: ml
          - name: users
            parent: true
            submitacl: " staff"
  - name: implicit
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: ml
            queues:
              - name: training
`

// Place identifies the user as Check does (the resolver's groups when none
// are supplied) and runs the partition's rules; the implicit provided rule
// applies when the partition configures none.
func TestPlace(t *testing.T) {
	e := newEngine(t, placeYAML)
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		req       engine.PlaceRequest
		placed    bool
		queue     string
		rule      string
		reasonHas string
	}{
		{"provided, groups from the resolver", engine.PlaceRequest{User: "alice", Queue: "root.teams.ml"}, true, "root.teams.ml", "rule 1: provided", "dev"},
		{"tag namespace, created under teams", engine.PlaceRequest{User: "alice", Tags: map[string]string{"namespace": "spark"}}, true, "root.teams.spark", "rule 2:", "to be created"},
		{"supplied groups replace the resolver's (mode given)", engine.PlaceRequest{User: "alice", Groups: []string{"staff"}}, true, "root.users.alice", "rule 3:", "staff"},
		{"filtered everywhere, root.default denies", engine.PlaceRequest{User: "eve", Tags: map[string]string{"namespace": "spark"}}, false, "", "the root.default fallback", "root.default"},
		{"falls to root.default", engine.PlaceRequest{User: "alice"}, true, "root.default", "the root.default fallback", "dev"},
		{"implicit rule qualifies a dotted marker", engine.PlaceRequest{Partition: "implicit", User: "bob", Queue: "ml.training"}, false, "", "the root.default fallback", "root.default does not exist"},
		{"implicit rule, full path", engine.PlaceRequest{Partition: "implicit", User: "bob", Queue: "root.ml.training"}, true, "root.ml.training", "rule 1: provided", "placed in root.ml.training"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, explain := range []bool{false, true} {
				req := tt.req
				req.Explain = explain
				res, err := e.Place(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if res.Placed != tt.placed || res.Queue != tt.queue {
					t.Fatalf("explain=%v: placed %v in %q, want %v in %q (%s)", explain, res.Placed, res.Queue, tt.placed, tt.queue, res.Reason())
				}
				if !strings.HasPrefix(res.RuleName(), tt.rule) {
					t.Errorf("rule %q, want prefix %q", res.RuleName(), tt.rule)
				}
				if !strings.Contains(res.Reason(), tt.reasonHas) {
					t.Errorf("reason %q lacks %q", res.Reason(), tt.reasonHas)
				}
				if explain {
					if len(res.Trail) == 0 {
						t.Error("Explain: no trail")
					}
					if !res.Placed && !strings.Contains(res.Why(), "rule 1 (provided") {
						t.Errorf("Why %q does not name each rule tried", res.Why())
					}
					if res.Placed && len(res.Steps) == 0 {
						t.Error("Explain: placed without the ACL trail of the decisive queue")
					}
				} else if (res.Placed && res.Trail != nil) || res.Steps != nil {
					t.Error("Place kept a trail")
				}
			}
		})
	}
}

func TestPlaceErrors(t *testing.T) {
	e := newEngine(t, placeYAML)
	ctx := context.Background()
	if _, err := e.Place(ctx, engine.PlaceRequest{Partition: "nope", User: "alice"}); err == nil {
		t.Error("unknown partition: no error")
	}
	if _, err := e.Place(ctx, engine.PlaceRequest{User: "a b"}); err == nil {
		t.Error("invalid user: no error")
	}
	res, err := e.Place(ctx, engine.PlaceRequest{User: "nobody-known"})
	var gerr *engine.GroupsError
	if !errors.As(err, &gerr) || res.Placed {
		t.Errorf("unknown user to the resolver: %v placed=%v, want a GroupsError and no placement", err, res.Placed)
	}
}

// Place says when the application is placed elsewhere than the queue it
// names (Asked, read as a path under root), and Why gives every rule
// tried, with or without Explain: the admission warning and every other
// surface print it. An application that names no queue in a partition
// without placementrules goes to the partition's default queue, as the
// admission webhook has always checked it.
func TestPlaceElsewhere(t *testing.T) {
	e := newEngine(t, placeYAML)
	for _, tt := range []struct {
		name         string
		req          engine.PlaceRequest
		queue, asked string
		why          []string
	}{
		{"placed where it asks", engine.PlaceRequest{User: "alice", Queue: "root.teams.ml"}, "root.teams.ml", "", nil},
		{"names compare without regard to case", engine.PlaceRequest{User: "alice", Queue: "root.Teams.ML"}, "root.teams.ml", "", nil},
		// YuniKorn's provided rule takes only "root." for a full path.
		{"ROOT. is a name", engine.PlaceRequest{User: "alice", Queue: "ROOT.Teams.ML"}, "root.default", "root.teams.ml",
			[]string{`queue "ROOT.Teams.ML" does not start with "root."`, "root.root_dot_teams_dot_ml does not exist"}},
		{"nothing asked", engine.PlaceRequest{User: "alice", Namespace: "spark"}, "root.teams.spark", "", nil},
		{"the dots of a name without root.", engine.PlaceRequest{User: "alice", Queue: "teams.ml", Namespace: "spark"}, "root.teams.spark", "root.teams.ml",
			[]string{`queue "teams.ml" does not start with "root."`, "rule 1 (provided): root.teams_dot_ml does not exist and create is false",
				"rule 2 (tag", "placed in root.teams.spark"}},
		{"create: false, then the root.default fallback", engine.PlaceRequest{User: "alice", Queue: "root.users.x"}, "root.default", "root.users.x",
			[]string{"rule 1 (provided): root.users.x does not exist and create is false", "the filter does not let the user through", "placed in root.default"}},
		{"an ACL falls through", engine.PlaceRequest{User: "carl", Queue: "root.default"}, "root.users.carl", "root.default",
			[]string{"rule 1 (provided): carl may not submit to root.default", "rule 3 (user", "placed in root.users.carl"}},
		{"the default queue", engine.PlaceRequest{Partition: "implicit", User: "bob"}, "root", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, explain := range []bool{false, true} {
				req := tt.req
				req.Explain = explain
				res, err := e.Place(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Placed || res.Queue != tt.queue || res.Asked != tt.asked {
					t.Fatalf("explain=%v: placed %v in %q asked %q, want %q asked %q (%s)", explain, res.Placed, res.Queue, res.Asked, tt.queue, tt.asked, res.Why())
				}
				rest := res.Why()
				for _, w := range tt.why {
					i := strings.Index(rest, w)
					if i < 0 {
						t.Fatalf("explain=%v: Why %q lacks %q (in order)", explain, res.Why(), w)
					}
					rest = rest[i+len(w):]
				}
				if tt.asked == "" && res.Why() != res.Reason() {
					t.Errorf("placed where asked: Why %q, want the reason %q", res.Why(), res.Reason())
				}
			}
		})
	}
	res, err := e.Place(context.Background(), engine.PlaceRequest{Partition: "implicit", User: "bob", Explain: true})
	if err != nil || !res.Default || res.RuleName() != "the partition's default queue (no placementrules, no queue named)" || len(res.Steps) == 0 {
		t.Fatalf("default queue: %v %+v", err, res)
	}
}
