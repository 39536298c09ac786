package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
)

// deleteAuthorizer implements admission.DeleteAuthorizer over the engine:
// a Kubernetes DELETE of a workload is YARN's kill (application.Kill),
// decided with the partition's queue policy and application ACL defaults
// for the requester's identity (the given groups, combined with the
// resolver's as the partition's groups mode says).
//
//   - A workload without a recorded owner is decided with an owner nobody
//     is, so that only its modify ACL and the admins may kill it.
//   - A modify ACL that does not parse (YARN syntax) grants nothing, and
//     the reason says so; the owner and the admins still may.
//   - A queue the configuration does not have is decided as root, whose
//     admins are admins of every queue, and the reason says so; the owner
//     may still delete what it owns.
//   - Anything else that prevents a decision (unknown partition, invalid
//     user name, a resolver failure) is an error: the webhook denies.
type deleteAuthorizer struct{ e decider }

var _ admission.DeleteAuthorizer = deleteAuthorizer{}

// unrecordedOwner is the owner of workloads without user.info in
// decisions. It is a valid name, so the decision can be made, and never
// the requester's own: ownerless(user) differs from user.
const unrecordedOwner = "(unrecorded)"

func ownerless(user string) string {
	if user == unrecordedOwner {
		return unrecordedOwner + "-"
	}
	return unrecordedOwner
}

func (a deleteAuthorizer) AuthorizeDelete(ctx context.Context, partition, queue, owner, modifyACL, user string, groups []string) (bool, string, error) {
	app := application.Application{Owner: owner, Queue: queue}
	if owner == "" {
		app.Owner = ownerless(user)
	}
	var notes string
	if modifyACL != "" {
		parsed, _, err := acl.Parse(modifyACL, acl.YARN)
		if err != nil {
			parsed = acl.ACL{} // allows nobody
			notes += fmt.Sprintf("; its modify ACL %q grants nothing: %v", modifyACL, err)
		}
		app.ModifyACL = &parsed
	}
	req := engine.AppRequest{Partition: partition, User: user, Groups: groups, App: app, Action: application.Kill}
	d, _, err := a.e.DecideApplication(ctx, req)
	if errors.Is(err, policy.ErrUnknownQueue) && queue != "root" {
		notes += fmt.Sprintf("; queue %q is not in partition %q, so only admins of root count as its queue admins", queue, partition)
		req.App.Queue = "root"
		d, _, err = a.e.DecideApplication(ctx, req)
	}
	if err != nil {
		return false, "", err
	}
	return d.Allowed, d.Reason() + notes, nil
}
