//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// fuzzRegressions are sequences TestFuzz found (shrunk), and attacks
// written in its terms; each is replayed on a fresh namespace with every
// invariant checked after every step.
var fuzzRegressions = []struct {
	name  string
	steps []fuzzStep
}{
	// The kill rule's ways around: bob deletes every pod of the
	// namespace, points alice's pod at a missing owner (the garbage collector would delete it), moves it to his
	// queue, evicts it, deletes it; erin (ops) and "Alice" try the same;
	// alice then lets bob in through her modify ACL and he deletes it.
	{name: "delete by proxy", steps: []fuzzStep{
		{Op: "create", Actor: "alice", Kind: "pod", Slot: 0},
		{Op: "create", Actor: "bob", Kind: "pod", Slot: 1},
		{Op: "deletecollection", Actor: "bob", Kind: "pod"},
		{Op: "patch-merge", Actor: "bob", Kind: "pod", Slot: 0, Owner: "x"},
		{Op: "patch-json", Actor: "bob", Kind: "pod", Slot: 0, Queue: "root.ops"},
		{Op: "evict", Actor: "bob", Kind: "pod", Slot: 0},
		{Op: "delete", Actor: "Alice", Kind: "pod", Slot: 0},
		{Op: "status", Actor: "erin", Kind: "pod", Slot: 0, Owner: "x"},
		{Op: "apply", Actor: "alice", Kind: "pod", Slot: 0, ACL: "bob"},
		{Op: "delete", Actor: "bob", Kind: "pod", Slot: 0},
	}},
	// Forged, case-variant and malformed identities on create and on
	// every kind of edit, and a Deployment, ReplicaSet and Job whose pods
	// the controllers make; bob's ReplicaSet selecting alice's pod.
	{name: "forged identities", steps: []fuzzStep{
		{Op: "create", Actor: "bob", Kind: "pod", Slot: 1, Ann: "alice"},
		{Op: "create", Actor: "alice", Kind: "pod", Slot: 2, Ann: "case", Sel: 3},
		{Op: "create", Actor: "alice", Kind: "pod", Slot: 3, Sel: 3},
		{Op: "create", Actor: "ext", Kind: "deploy", Slot: 1, Ann: "alice", Queue: "root.dev", N: 2, Sel: 1},
		{Op: "create", Actor: "op", Kind: "rs", Slot: 1, N: 1, Sel: 4},
		{Op: "create", Actor: "bob", Kind: "rs", Slot: 2, N: 0, Sel: 3},
		{Op: "create", Actor: "dave", Kind: "job", Slot: 1, Ann: "dg", N: 1, Sel: 2},
		{Op: "patch-strategic", Actor: "alice", Kind: "deploy", Slot: 1, Ann: "fold"},
		{Op: "update", Actor: "ext", Kind: "deploy", Slot: 1, Ann: "bob"},
		{Op: "apply", Actor: "op", Kind: "pod", Slot: 3, Ann: "remove"},
		{Op: "status", Actor: "alice", Kind: "pod", Slot: 3, Ann: "dg"},
		{Op: "bind", Actor: "bob", Kind: "pod", Slot: 3, Ann: "bob"},
		{Op: "bind", Actor: "bob", Kind: "pod", Slot: 3, Queue: "root.ops"},
		{Op: "scale", Actor: "bob", Kind: "deploy", Slot: 1, N: 3},
	}},
	// Found by TestFuzz (seed 1795665275797488460, sequence 84, shrunk
	// from 38 steps): ext, a trusted external user, bound a pod of erin's
	// Job with a Binding labelled queue=root.dev, a queue erin may not
	// submit to; the Binding was not checked against her identity.
	{name: "seed 1795665275797488460 sequence 84: queue", steps: []fuzzStep{
		{Op: "create", Actor: "erin", Kind: "job", Slot: 3, Queue: "root.ops", ACL: " ", N: 1},
		{Op: "bind", Actor: "ext", Kind: "pod", Slot: -5, Queue: "root.dev"},
		{Op: "create", Actor: "erin", Kind: "pod", Slot: 0, Queue: "root.ops"},
		{Op: "bind", Actor: "admin", Kind: "pod", Slot: 0, Queue: "root.dev"},
		{Op: "bind", Actor: "op", Kind: "pod", Slot: 0, Queue: "root.dev"},
	}},
}

func TestFuzzRegressions(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 10*time.Minute)
	f, _ := newFuzzer(t, ctx)
	for _, tc := range fuzzRegressions {
		if v := f.replay(ctx, tc.steps); v != nil {
			t.Errorf("%s: %v", tc.name, v)
		}
	}
}
