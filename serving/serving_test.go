package serving_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/serving"
)

func parse(t *testing.T, src string) *config.Config {
	t.Helper()
	c, err := config.Parse("q.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newStore(t *testing.T, c *config.Config) *serving.Store {
	t.Helper()
	s, err := serving.New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A reload swaps the whole configuration at once; decisions running
// concurrently see either the old or the new rules, never a mix or a wait.
func TestSwapUnderLoad(t *testing.T) {
	const closed = "partitions:\n  - name: default\n    usergroupresolver: {type: test, users: {bob: []}}\n    queues: [{name: root, queues: [{name: dev, submitacl: \" dev\"}]}]\n"
	const open = "partitions:\n  - name: default\n    usergroupresolver: {type: test, users: {bob: []}}\n    queues: [{name: root, queues: [{name: dev, submitacl: \"*\"}]}]\n"
	cfgs := []*config.Config{parse(t, closed), parse(t, open)}
	s := newStore(t, cfgs[0])
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := s.Current().Check(context.Background(), engine.Request{Queue: "root.dev", User: "bob", Groups: []string{"ops"}})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed && res.By.Match.Name != "*" {
					t.Errorf("inconsistent decision %+v", res)
					return
				}
			}
		})
	}
	for i := range 200 {
		if err := s.Swap(cfgs[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := s.Swap(nil); err == nil {
		t.Fatal("Swap(nil) must fail")
	}
	if s.Current().Config() != cfgs[1] {
		t.Fatal("a failed swap must keep the configuration in force")
	}
}

// The admission state belongs to its generation: a swap replaces both,
// and its authorizers answer from that generation.
func TestStateCarriesAdmission(t *testing.T) {
	c1 := parse(t, "partitions:\n  - name: default\n    queues: [{name: root, queues: [{name: a, submitacl: carol}]}]\nadmissionController: {enforceQueueACLs: true}\n")
	c2 := parse(t, "partitions:\n  - name: default\n    queues: [{name: root, queues: [{name: b, submitacl: carol}]}]\n")
	s := newStore(t, c1)
	st1 := s.Current()
	if st1.Admission.Config() != c1.Admission || !st1.Admission.Config().EnforceQueue || s.Admission() != st1.Admission {
		t.Fatal("the state does not carry its admission settings")
	}
	if err := s.Swap(c2); err != nil {
		t.Fatal(err)
	}
	st2 := s.Current()
	if st2 == st1 || s.Admission() != st2.Admission || st2.Admission.Config() != c2.Admission {
		t.Fatal("a swap did not replace the admission state with the generation")
	}
	// A review that took the first state keeps deciding with it, through
	// its authorizer.
	ctx := context.Background()
	h := admission.NewHandler(nil, admission.WithState(func() *admission.State { return st1.Admission }))
	if _, authz := h.Current(); authz == nil {
		t.Fatal("no queue authorizer")
	} else if d, err := authz.AuthorizeSubmit(ctx, admission.SubmitRequest{Partition: "default", Queue: "root.a", User: "carol"}); err != nil || !d.Allowed {
		t.Fatalf("state 1: %+v %v", d, err)
	}
	if _, err := st2.Check(ctx, engine.Request{Queue: "root.a", User: "carol"}); err == nil {
		t.Fatal("state 2 has no root.a")
	}
}
