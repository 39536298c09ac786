package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/usherhq/usher/engine"
)

// The namespace.parentqueue tag, as the webhook passes it from the
// Namespace's yunikorn.apache.org/parentqueue annotation, is the parent of
// YuniKorn's usual rule for it (tag namespace under tag
// namespace.parentqueue), and overrides one in Tags; without it the rule
// falls through.
func TestPlaceUnderTheNamespaceParentQueue(t *testing.T) {
	e := newEngine(t, `partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent:
          name: tag
          value: namespace.parentqueue
    queues:
      - name: root
        queues:
          - name: default
            submitacl: "*"
          - name: prod
            parent: true
            submitacl: " ops"
          - name: dev
            parent: true
            submitacl: "*"
`)
	ctx := context.Background()
	pq := func(v string, err error) func(context.Context, string) (string, error) {
		return func(context.Context, string) (string, error) { return v, err }
	}
	for _, tt := range []struct {
		req    engine.PlaceRequest
		placed bool
		queue  string
	}{
		{engine.PlaceRequest{Namespace: "web", ParentQueue: pq("root.prod", nil), User: "bob", Groups: []string{"ops"}}, true, "root.prod.web"},
		{engine.PlaceRequest{Namespace: "web", ParentQueue: pq("root.prod", nil), User: "alice", Groups: []string{"dev"}}, true, "root.default"},
		{engine.PlaceRequest{Namespace: "web", ParentQueue: pq("dev", nil), User: "alice", Groups: []string{"dev"},
			Tags: map[string]string{"namespace.parentqueue": "root.prod"}}, true, "root.dev.web"},
		{engine.PlaceRequest{Namespace: "web", User: "bob", Groups: []string{"ops"}}, true, "root.default"},
		{engine.PlaceRequest{Namespace: "web", ParentQueue: pq("", nil), User: "bob", Groups: []string{"ops"}}, true, "root.default"},
	} {
		res, err := e.Place(ctx, tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Placed != tt.placed || res.Queue != tt.queue {
			t.Errorf("%+v: placed %v in %q, want %v in %q (%s)", tt.req, res.Placed, res.Queue, tt.placed, tt.queue, res.Reason())
		}
	}
	_, err := e.Place(ctx, engine.PlaceRequest{Namespace: "web", ParentQueue: pq("", errors.New("forbidden")), User: "bob"})
	if err == nil || err.Error() != `cannot read Namespace "web" for tag namespace.parentqueue: forbidden` {
		t.Errorf("a failed read: %v", err)
	}
	// Rules that do not read the tag do not read the Namespace.
	_, err = newEngine(t, placeYAML).Place(ctx, engine.PlaceRequest{Namespace: "web", ParentQueue: pq("", errors.New("read")), User: "alice"})
	if err != nil {
		t.Errorf("rules without the tag read it: %v", err)
	}
}
