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
