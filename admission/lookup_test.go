package admission

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// TestAuditRecordLookup: what the queue authorizer notes about how it
// identified the submitter reaches the review's audit record, once per
// note however many queues were checked, and only that review's.
func TestAuditRecordLookup(t *testing.T) {
	const note = "the resolver does not know the user; decided on the given groups alone (unknownuser given-groups)"
	authz := QueueAuthorizerFunc(func(ctx context.Context, r SubmitRequest) (SubmitDecision, error) {
		if r.User == alice.Username {
			NoteLookup(ctx, note)
		}
		return SubmitDecision{Allowed: true}, nil
	})
	labels := m("queue", "root.team-a")
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			sink := &auditSink{}
			h := NewHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}), WithAuthorizer(authz), WithAudit(sink.hook))
			req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(labels, nil, nil), nil)
			wantAllowed(t, run(t, h, hookMutate, req))
			if got := sink.last(t).Lookup; got != note {
				t.Fatalf("Record.Lookup = %q, want %q", got, note)
			}
			req = request(t, kc, admissionv1.Create, "team-a", bob, kc.build(labels, nil, nil), nil)
			wantAllowed(t, run(t, h, hookMutate, req))
			if got := sink.last(t).Lookup; got != "" {
				t.Fatalf("bob's Record.Lookup = %q, want none", got)
			}
		})
	}
	// Outside a review NoteLookup does nothing.
	NoteLookup(context.Background(), note)
}
