package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/config"
)

// A reload keeps a partition's resolver, and so its cache, exactly when
// the key of its settings is unchanged: another groups mode or ACL keeps
// it, an edited users-to-groups file or other cache settings replace it.
func TestSwapKeepsResolversByKey(t *testing.T) {
	dir := t.TempDir()
	groups := filepath.Join(dir, "groups")
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(dir, "q.yaml")
	load := func(yaml string) *config.Config {
		t.Helper()
		write(cfgFile, yaml)
		c, err := config.Load(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const base = "partitions:\n  - name: default\n    usergroupresolver: {type: file, file: groups}\n    queues: [{name: root, submitacl: \" dev\"}]\n"
	write(groups, "alice: dev\n")
	e, err := New(load(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	resolver := func() any { return e.parts["default"].resolver }
	ctx := context.Background()
	if res, err := e.Check(ctx, Request{Queue: "root", User: "alice"}); err != nil || !res.Allowed {
		t.Fatalf("%+v %v", res, err)
	}
	first := resolver()
	for _, tt := range []struct {
		name string
		yaml string
		file string
		kept bool
	}{
		{"same settings", base, "alice: dev\n", true},
		{"another groups mode and ACL", "partitions:\n  - name: default\n    groups: merge\n    usergroupresolver: {type: file, file: groups}\n    queues: [{name: root, submitacl: \"*\"}]\n", "alice: dev\n", true},
		{"the file changed", base, "alice: dev, ops\n", false},
		{"the cache settings changed", "partitions:\n  - name: default\n    usergroupresolver: {type: file, file: groups, cache: {positivettl: 1s}}\n    queues: [{name: root, submitacl: \" dev\"}]\n", "alice: dev, ops\n", false},
	} {
		write(groups, tt.file)
		before := resolver()
		e = swap(t, e, load(tt.yaml))
		if kept := resolver() == before; kept != tt.kept {
			t.Errorf("%s: kept %v, want %v", tt.name, kept, tt.kept)
		}
	}
	if resolver() == first {
		t.Fatal("the resolver was never replaced")
	}
	// The generation in service answers with the new file.
	in, err := e.Identify(ctx, "default", "alice", nil)
	if err != nil || len(in.Groups) != 2 {
		t.Fatalf("%v %v", in, err)
	}
}

// A reload that changes only the lookup policy (namemapping, skip,
// unknownuser, overrides) keeps the resolver and its cache, and the new
// policy decides from the next request on.
func TestSwapAppliesLookupPolicyAndKeepsCache(t *testing.T) {
	load := func(policy string) *config.Config {
		t.Helper()
		c, err := config.Parse("q.yaml", []byte("partitions:\n  - name: default\n    usergroupresolver:\n      type: test\n      users: {alice: [dev]}\n"+
			policy+"    queues: [{name: root, submitacl: \" dev\"}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e, err := New(load(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Check(ctx, Request{Queue: "root", User: "oidc:alice"}); err == nil {
		t.Fatal("oidc:alice found without a mapping")
	}
	if res, err := e.Check(ctx, Request{Queue: "root", User: "alice"}); err != nil || !res.Allowed {
		t.Fatalf("%+v %v", res, err)
	}
	before := e.parts["default"].resolver
	e = swap(t, e, load("      namemapping: [{pattern: 'oidc:(.+)', replacement: $1}]\n"))
	if e.parts["default"].resolver != before {
		t.Fatal("a lookup policy change replaced the resolver and its cache")
	}
	res, err := e.Check(ctx, Request{Queue: "root", User: "oidc:alice"})
	if err != nil || !res.Allowed || res.Identity.Lookup.Name != "alice" {
		t.Fatalf("after the reload: %+v %v", res, err)
	}
	if st := before.Cache.Stats(); st.Calls != 2 || st.Hits != 1 {
		t.Errorf("cache %+v: want alice's answer reused for oidc:alice", st)
	}
}

// TestCachedIdentityHonoursLookupPolicy: the prepared identity kept with a
// cached answer is only ever the plain lookup's. A skipped user's given
// groups, a mapped name's answer and an override are decided afresh every
// time, so groups given with one request never decide another, and the
// name ACLs match stays the authenticated one.
func TestCachedIdentityHonoursLookupPolicy(t *testing.T) {
	c, err := config.Parse("q.yaml", []byte("partitions:\n  - name: default\n    usergroupresolver:\n      type: test\n      users: {alice: [dev], bob: [ops]}\n"+
		"      namemapping: [{pattern: 'oidc:(.+)', replacement: $1}]\n"+
		"      overrides: {svc-etl: [dev]}\n"+
		"    queues: [{name: root, submitacl: \" dev\", queues: [{name: ops, submitacl: \"oidc:bob\"}]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		for _, tt := range []struct {
			user   string
			groups []string
			queue  string
			want   bool
		}{
			// Skipped by default (system:): the given groups, each time.
			{"system:serviceaccount:spark:driver", []string{"dev"}, "root", true},
			{"system:serviceaccount:spark:driver", []string{"ops"}, "root", false},
			{"system:serviceaccount:spark:driver", nil, "root", false},
			// Mapped: the directory's groups of bob; the ACL names the
			// authenticated name.
			{"oidc:bob", nil, "root.ops", true},
			{"bob", nil, "root.ops", false}, // in ops, which root.ops does not name
			{"oidc:alice", nil, "root", true},
			{"alice", nil, "root", true},
			// Override wins over the directory (which does not know it).
			{"svc-etl", nil, "root", true},
		} {
			res, err := e.Check(ctx, Request{Queue: tt.queue, User: tt.user, Groups: tt.groups})
			if err != nil || res.Allowed != tt.want {
				t.Fatalf("round %d: %s %v on %s: allowed %v (%v), want %v", i, tt.user, tt.groups, tt.queue, res.Allowed, err, tt.want)
			}
		}
	}
}
