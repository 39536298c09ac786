package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/policy"
)

const modesYAML = `partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        alice: [dev]
        bob: []
    queues:
      - name: root
        queues:
          - name: dev
            submitacl: " dev"
          - name: k8s
            submitacl: " system:authenticated"
  - name: merged
    groups: merge
    usergroupresolver:
      type: test
      users:
        alice: [dev]
    queues:
      - name: root
        submitacl: " dev"
  - name: resolved
    groups: resolve
    usergroupresolver:
      type: test
      users:
        alice: [dev]
    queues:
      - name: root
        submitacl: " system:authenticated"
  - name: plain
    queues:
      - name: root
        submitacl: " alice"
`

// reload builds c on e and retires e, as package serving does.
func reload(t testing.TB, e *engine.Generation, c *config.Config) *engine.Generation {
	t.Helper()
	next, err := engine.New(c, e)
	if err != nil {
		t.Fatal(err)
	}
	e.Retire(next, time.Minute)
	return next
}

func newEngine(t testing.TB, src string) *engine.Generation {
	t.Helper()
	c, err := config.Parse("q.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestGroupModes(t *testing.T) {
	e := newEngine(t, modesYAML)
	ctx := context.Background()
	k8s := []string{"system:authenticated"}
	tests := []struct {
		name      string
		req       engine.Request
		allowed   bool
		sources   string
		wantError string
	}{
		{"given groups are used as they are", engine.Request{Queue: "root.k8s", User: "alice", Groups: k8s}, true, "system:authenticated=given", ""},
		{"given groups skip the resolver", engine.Request{Queue: "root.dev", User: "alice", Groups: k8s}, false, "system:authenticated=given", ""},
		{"no groups asks the resolver", engine.Request{Queue: "root.dev", User: "alice"}, true, "dev=test", ""},
		{"resolver failure denies with an error", engine.Request{Queue: "root.dev", User: "mallory"}, false, "", "unknown user"},
		{"merge uses both", engine.Request{Partition: "merged", Queue: "root", User: "alice", Groups: k8s}, true, "system:authenticated=given dev=test", ""},
		{"resolve ignores given groups", engine.Request{Partition: "resolved", Queue: "root", User: "alice", Groups: k8s}, false, "dev=test", ""},
		{"none resolver: primary group named like the user", engine.Request{Partition: "plain", Queue: "root", User: "alice"}, true, "alice=none", ""},
		{"unknown queue", engine.Request{Queue: "root.nope", User: "alice"}, false, "", "unknown queue"},
		{"unknown partition", engine.Request{Partition: "gpu", Queue: "root", User: "alice"}, false, "", "unknown partition"},
		{"invalid user name", engine.Request{Queue: "root", User: "al ice"}, false, "", "whitespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Check(ctx, tt.req)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) || res.Allowed {
					t.Fatalf("got %+v, %v; want error %q and a denial", res, err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != tt.allowed {
				t.Fatalf("allowed=%v: %s", res.Allowed, res.Reason())
			}
			var got []string
			for i, g := range res.Identity.Groups {
				got = append(got, g+"="+string(res.Identity.SourceOf(i)))
			}
			if strings.Join(got, " ") != tt.sources {
				t.Fatalf("groups %v, want %s", got, tt.sources)
			}
		})
	}
}

func TestExplainAndAccess(t *testing.T) {
	e := newEngine(t, modesYAML)
	res, steps, err := e.Explain(context.Background(), engine.Request{Queue: "root.dev", User: "alice", Action: policy.Submit})
	if err != nil || !res.Allowed || len(steps) != 4 || !steps[0].Match.Allowed() {
		t.Fatalf("%+v %+v %v", res, steps, err)
	}
	acc, err := e.Access(context.Background(), "", "alice", nil)
	queues := acc.Queues
	if err != nil || acc.Identity.User != "alice" || len(queues) != 3 || acc.Partition != "default" {
		t.Fatalf("%+v %v", acc, err)
	}
	if !queues[1].Submit.Allowed || queues[2].Submit.Allowed {
		t.Fatalf("access %+v", queues)
	}
}

// Caches survive a reload when the resolver settings are unchanged.
func TestCacheKeptAcrossReload(t *testing.T) {
	e := newEngine(t, modesYAML)
	ctx := context.Background()
	if _, err := e.Identify(ctx, "default", "alice", nil); err != nil {
		t.Fatal(err)
	}
	c, _ := config.Parse("q.yaml", []byte(modesYAML))
	e = reload(t, e, c)
	if _, err := e.Identify(ctx, "default", "alice", nil); err != nil {
		t.Fatal(err)
	}
	st := e.CacheStats()["default"]
	if st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("cache stats after reload: %+v", st)
	}
	_, err := e.Identify(ctx, "default", "zed", nil)
	if !errors.Is(err, identity.ErrUnknownUser) {
		t.Fatalf("unknown user: %v", err)
	}
}

// Groups marked decided (an admission review's identity, decided once)
// are the identity as they are, in every groups mode, even none: the
// resolver is not asked again, so a user it does not know is decided on
// them, and Check and Place agree.
func TestDecidedGroups(t *testing.T) {
	e := newEngine(t, `partitions:
  - name: default
    groups: merge
    usergroupresolver:
      type: test
      users:
        alice: [ml]
    queues:
      - name: root
        queues:
          - name: ml
            submitacl: " ml"
`)
	ctx := context.Background()
	for _, tc := range []struct {
		user   string
		groups []string
		allow  bool
	}{
		{"alice", []string{"ml"}, true},
		{"alice", nil, false}, // not merged with the directory's ml again
		{"nobody", []string{"ml"}, true},
	} {
		res, err := e.Check(ctx, engine.Request{Queue: "root.ml", User: tc.user, Groups: tc.groups, Decided: true})
		if err != nil || res.Allowed != tc.allow || len(res.Identity.Groups) != len(tc.groups) {
			t.Errorf("%s %v: %+v %v", tc.user, tc.groups, res, err)
		}
		pl, err := e.Place(ctx, engine.PlaceRequest{Queue: "root.ml", User: tc.user, Groups: tc.groups, Decided: true})
		if err != nil || pl.Placed != tc.allow {
			t.Errorf("place %s %v: %+v %v", tc.user, tc.groups, pl, err)
		}
	}
	if _, err := e.Check(ctx, engine.Request{Queue: "root.ml", User: "nobody", Groups: []string{"ml"}}); err == nil {
		t.Error("without Decided, a user the directory does not know is decided")
	}
}
