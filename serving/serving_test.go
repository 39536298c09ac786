package serving_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

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
	if !denies(t, st1.Admission) || s.Admission() != st1.Admission {
		t.Fatal("the state does not carry its admission settings")
	}
	if err := s.Swap(c2); err != nil {
		t.Fatal(err)
	}
	st2 := s.Current()
	if st2 == st1 || s.Admission() != st2.Admission || denies(t, st2.Admission) {
		t.Fatal("a swap did not replace the admission state with the generation")
	}
	// A review that took the first state keeps deciding with it, through
	// its authorizer.
	ctx := context.Background()
	authz := serving.Authorizers(st1.Generation, slog.New(slog.DiscardHandler)).Queue
	if d, err := authz.AuthorizeSubmit(ctx, admission.SubmitRequest{Partition: "default", Queue: "root.a", User: "carol"}); err != nil || !d.Allowed {
		t.Fatalf("state 1: %+v %v", d, err)
	}
	if _, err := st2.Check(ctx, engine.Request{Queue: "root.a", User: "carol"}); err == nil {
		t.Fatal("state 2 has no root.a")
	}
}

// denies reports whether st denies dave's pod for queue root.b, as only
// enforceQueueACLs does.
func denies(t *testing.T, st *admission.State) bool {
	t.Helper()
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"team-a","operation":"CREATE","userInfo":{"username":"dave"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-a","labels":{"queue":"root.b"}}}}}`
	req := httptest.NewRequest(http.MethodPost, "/mutate", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	admission.NewHandler(func() *admission.State { return st }).MutateHTTP().ServeHTTP(rec, req)
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &rv); err != nil || rv.Response == nil {
		t.Fatalf("review: %d %s", rec.Code, rec.Body)
	}
	return !rv.Response.Allowed
}
