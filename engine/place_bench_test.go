package engine_test

import (
	"context"
	"testing"

	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
)

// BenchmarkAuthorizePod compares what the webhook's authorizer asks of
// the engine for a pod labelled for root.teams.ml, with groups supplied
// (the user.info annotation): the queue check it asked before (check),
// and the placement it asks now for YuniKorn's markers, with the implicit
// provided rule and with rules that read the namespace tag; and a pod
// placed elsewhere than its marker asks, whose trail is kept for the
// admission warning.
//
//	go test -run '^$' -bench AuthorizePod -benchmem ./engine/
func BenchmarkAuthorizePod(b *testing.B) {
	ctx := context.Background()
	groups := []string{"dev"}
	b.Run("check", func(b *testing.B) {
		e := newEngine(b, placeYAML)
		req := engine.Request{Partition: "implicit", Queue: "root.ml.training", User: "alice", Groups: groups, Action: policy.Submit}
		b.ReportAllocs()
		for b.Loop() {
			if res, err := e.Check(ctx, req); err != nil || !res.Allowed {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("place/implicit", func(b *testing.B) {
		e := newEngine(b, placeYAML)
		req := engine.PlaceRequest{Partition: "implicit", Queue: "root.ml.training", Namespace: "team-a", User: "alice", Groups: groups}
		b.ReportAllocs()
		for b.Loop() {
			if res, err := e.Place(ctx, req); err != nil || !res.Placed {
				b.Fatal(res.Reason(), err)
			}
		}
	})
	b.Run("place/tag-rule", func(b *testing.B) {
		e := newEngine(b, placeYAML)
		req := engine.PlaceRequest{Queue: "root.teams.ml", Namespace: "spark", User: "alice", Groups: groups}
		b.ReportAllocs()
		for b.Loop() {
			if res, err := e.Place(ctx, req); err != nil || !res.Placed {
				b.Fatal(res.Reason(), err)
			}
		}
	})
	b.Run("place/elsewhere", func(b *testing.B) {
		e := newEngine(b, placeYAML)
		req := engine.PlaceRequest{Queue: "root.users.x", Namespace: "spark", User: "alice", Groups: groups}
		b.ReportAllocs()
		for b.Loop() {
			if res, err := e.Place(ctx, req); err != nil || res.Asked == "" {
				b.Fatal(res.Reason(), err)
			}
		}
	})
}
