package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/policy"
)

const cachedYAML = `partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        alice: [dev, ops]
        bob: [ops]
    queues:
      - name: root
        adminacl: " ops"
        queues:
          - name: a
            queues:
              - name: b
                submitacl: " dev"
`

// TestCachedDecisionDoesNotAllocate checks that a decision for a user
// whose groups are cached allocates nothing: the user's Subject is kept
// with the cached groups.
func TestCachedDecisionDoesNotAllocate(t *testing.T) {
	e := newEngine(t, cachedYAML)
	ctx := context.Background()
	req := engine.Request{Queue: "root.a.b", User: "alice"}
	if res, err := e.Check(ctx, req); err != nil || !res.Allowed || res.By.Match.Name != "dev" {
		t.Fatalf("%+v, %v", res, err)
	}
	n := testing.AllocsPerRun(200, func() {
		res, err := e.Check(ctx, req)
		if err != nil || !res.Allowed {
			t.Fatal(res, err)
		}
	})
	if n != 0 {
		t.Errorf("a cached decision allocates %v times", n)
	}
}

// TestCachedIdentityFollowsTheGeneration checks that a cached user's
// decisions change with the configuration, while the groups stay cached
// (same resolver settings), and that the explained and the plain
// decision agree.
func TestCachedIdentityFollowsTheGeneration(t *testing.T) {
	e := newEngine(t, cachedYAML)
	ctx := context.Background()
	check := func(user, queue string, action policy.Action, want bool, by string) {
		t.Helper()
		req := engine.Request{Queue: queue, User: user, Action: action}
		for range 3 {
			res, err := e.Check(ctx, req)
			if err != nil || res.Allowed != want || res.By.Queue != by {
				t.Fatalf("%s %v %s: got %+v, %v; want allowed=%t by %q", user, action, queue, res.Decision, err, want, by)
			}
			exp, _, err := e.Explain(ctx, req)
			if err != nil || exp.Decision != res.Decision {
				t.Fatalf("Explain %+v, Check %+v", exp.Decision, res.Decision)
			}
		}
	}
	check("alice", "root.a.b", policy.Submit, true, "root.a.b")
	check("bob", "root.a.b", policy.Submit, true, "root")
	check("bob", "root.a", policy.Admin, true, "root")
	calls := e.CacheStats()["default"].Calls

	changed := `partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        alice: [dev, ops]
        bob: [ops]
    queues:
      - name: root
        adminacl: "carol"
        queues:
          - name: a
            adminacl: " dev"
            queues:
              - name: b
                submitacl: "bob"
`
	c, err := config.Parse("q.yaml", []byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	e = reload(t, e, c)
	check("alice", "root.a.b", policy.Submit, true, "root.a")
	check("bob", "root.a.b", policy.Submit, true, "root.a.b")
	check("bob", "root.a", policy.Admin, false, "")
	check("alice", "root", policy.Admin, false, "")
	if got := e.CacheStats()["default"].Calls; got != calls {
		t.Errorf("the groups were asked again across the reload: %d calls, want %d", got, calls)
	}
}

// TestGivenGroupsDecisionIsReused checks that a decision for groups
// supplied with the request reuses the identity prepared for the same
// user and groups (no allocation), and that other groups, or the same in
// another order, are decided for what they are.
func TestGivenGroupsDecisionIsReused(t *testing.T) {
	e := newEngine(t, cachedYAML)
	ctx := context.Background()
	dev := []string{"system:authenticated", "dev"}
	req := engine.Request{Queue: "root.a.b", User: "carol", Groups: dev}
	for range 2 {
		res, err := e.Check(ctx, req)
		if err != nil || !res.Allowed || res.By.Match.Name != "dev" || res.Identity.SourceOf(1) != "given" {
			t.Fatalf("%+v, %v", res, err)
		}
	}
	if n := testing.AllocsPerRun(200, func() {
		if res, err := e.Check(ctx, req); err != nil || !res.Allowed {
			t.Fatal(res, err)
		}
	}); n != 0 {
		t.Errorf("a repeated decision with given groups allocates %v times", n)
	}
	for _, c := range []struct {
		groups []string
		want   bool
	}{
		{[]string{"system:authenticated"}, false},
		{[]string{"dev", "system:authenticated"}, true},
		{[]string{"ops"}, true}, // root's adminacl
		{[]string{"system:authenticated", "dev"}, true},
		{[]string{"dev", "dev"}, true},
	} {
		res, err := e.Check(ctx, engine.Request{Queue: "root.a.b", User: "carol", Groups: c.groups})
		if err != nil || res.Allowed != c.want || !slices.Equal(res.Identity.Groups, slices.Compact(slices.Clone(c.groups))) {
			t.Errorf("groups %v: %+v (identity %v), %v; want allowed=%t", c.groups, res.Decision, res.Identity, err, c.want)
		}
	}
	if res, err := e.Check(ctx, engine.Request{Queue: "root.a.b", User: "bad user", Groups: dev}); err == nil || res.Allowed {
		t.Errorf("an invalid user name was decided: %+v", res)
	}
}

// TestUncachedResolverAndGivenGroupsKeepApart checks, in a partition whose
// resolver has no cache (type none), that the identity kept for the
// resolver's groups is never served for the same groups supplied with a
// request, nor the other way round: each keeps where its groups came from.
func TestUncachedResolverAndGivenGroupsKeepApart(t *testing.T) {
	e := newEngine(t, modesYAML)
	ctx := context.Background()
	none, err := e.Check(ctx, engine.Request{Partition: "plain", User: "alice"})
	if err != nil || !none.Allowed || len(none.Identity.Groups) == 0 || none.Identity.SourceOf(0) != "none" {
		t.Fatalf("%+v, %v", none, err)
	}
	for range 2 {
		for _, c := range []struct {
			groups []string
			source identity.Source
		}{{nil, "none"}, {none.Identity.Groups, "given"}} {
			res, err := e.Check(ctx, engine.Request{Partition: "plain", User: "alice", Groups: c.groups})
			if err != nil || !res.Allowed || res.Identity.SourceOf(0) != c.source || res.Decision != none.Decision {
				t.Errorf("groups %v: %+v (identity %v), %v; want source %s", c.groups, res.Decision, res.Identity, err, c.source)
			}
		}
	}
}
