package server

import (
	"context"
	"fmt"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/engine"
)

// deleteAuthorizer implements admission.DeleteAuthorizer over the engine:
// a Kubernetes DELETE of a workload is YARN's kill (application.Kill),
// decided with the partition's queue policy and application ACL defaults
// for the requester's identity (the given groups, combined with the
// resolver's as the partition's groups mode says). It only translates:
// the rules for a workload without a recorded owner
// (application.Application.Unowned) and for a queue marker naming a queue
// the configuration lacks (application.Application.UnknownQueueAsRoot)
// are the application package's.
//
//   - A modify ACL that does not parse (YARN syntax) grants nothing, and
//     the reason says so; the owner and the admins still may.
//   - Anything else that prevents a decision (unknown partition, invalid
//     user name, a resolver failure) is an error: the webhook denies.
type deleteAuthorizer struct{ e decider }

var _ admission.DeleteAuthorizer = deleteAuthorizer{}

func (a deleteAuthorizer) AuthorizeDelete(ctx context.Context, r admission.DeleteRequest) (bool, string, error) {
	app := application.Application{Owner: r.Owner, Unowned: r.Owner == "", Queue: r.Queue, UnknownQueueAsRoot: true}
	var notes string
	if r.ModifyACL != nil {
		parsed, _, err := acl.Parse(*r.ModifyACL, acl.YARN)
		if err != nil {
			parsed = acl.ACL{} // allows nobody
			notes = fmt.Sprintf("; its modify ACL %q grants nothing: %v", *r.ModifyACL, err)
		}
		app.ModifyACL = &parsed
	}
	d, in, err := a.e.DecideApplication(ctx, engine.AppRequest{Partition: r.Partition, User: r.User, Groups: r.Groups, App: app, Action: application.Kill})
	admission.NoteLookup(ctx, in.Lookup.String())
	if err != nil {
		return false, "", err
	}
	return d.Allowed, d.Reason() + notes, nil
}
