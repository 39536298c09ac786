package admission

import (
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// With WithState the handler reads settings and authorizer from the
// provider at the start of each review, so whoever swaps the provider's
// state swaps both at once; Store is refused.
func TestWithStateReadsTheProvider(t *testing.T) {
	var cur atomic.Pointer[State]
	cur.Store(NewState(settings.MustCompile(settings.Config{}), Authorizers{}))
	h := newTestHandler(nil, WithState(cur.Load))
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", bob, kc.build(nil, m(UserInfoAnnotation, forgedCarol), nil), nil)
	wantDenied(t, run(t, h, hookMutate, req), 403)

	authz := &fakeAuthz{}
	cur.Store(NewState(mustCompile(t, settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^bob$"}}}), Authorizers{Queue: authz}))
	wantAllowed(t, run(t, h, hookMutate, req))
	if c, a := h.Current(); c.Config().AccessControl.ExternalUsers[0] != "^bob$" || a != authz {
		t.Fatalf("Current() = %v, %v", c, a)
	}
	if err := h.Store(mustCompile(t, settings.Config{}), nil); err == nil {
		t.Fatal("Store on a handler with WithState succeeded")
	}
	if got := cur.Load().Config(); got.Config().AccessControl.ExternalUsers[0] != "^bob$" {
		t.Fatalf("State.Config() = %+v", got.Config())
	}
}
