package serving

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/httperr"
	"github.com/usherhq/usher/policy"
)

// authorizers returns the admission authorizers of g, with an
// IdentityResolver when the groups mode is resolve or merge.
func authorizers(g *engine.Generation, log *slog.Logger) admission.Authorizers {
	a := admission.Authorizers{Queue: authorizer{g, log}, Delete: authorizer{g, log}}
	if mode, err := g.GroupsMode(g.Config().Admission.Partition); err == nil && mode != identity.ModeGiven {
		a.Identity = authorizer{g, log}
	}
	return a
}

// authorizer implements the admission authorizers over one generation.
type authorizer struct {
	g   *engine.Generation
	log *slog.Logger
}

// AuthorizeSubmit decides a submission; a placement request as
// engine.Place does, on the queue the placement rules choose.
func (a authorizer) AuthorizeSubmit(ctx context.Context, r admission.SubmitRequest) (admission.SubmitDecision, error) {
	if r.Place {
		res, err := a.g.Place(ctx, engine.PlaceRequest{Partition: r.Partition, Queue: r.Queue, Namespace: r.Namespace, ParentQueue: r.ParentQueue, User: r.User, Groups: r.Groups,
			Decided: r.Decided})
		if err = a.groupsError(r.Partition, r.User, err); err != nil {
			return admission.SubmitDecision{}, err
		}
		admission.NoteLookup(ctx, res.Identity.Lookup.String())
		d := admission.SubmitDecision{Allowed: res.Placed, Reason: res.Why(), Queue: res.Queue, Asked: res.Asked}
		if !res.Placed && !res.Default {
			d.Reason = "YuniKorn's placement " + d.Reason
		}
		return d, nil
	}
	q, action := r.Queue, policy.Submit
	if r.Admin {
		action = policy.Admin
		for cp, err := a.g.Snapshot().Partition(r.Partition); err == nil && !cp.Has(q) && strings.Contains(q, "."); {
			q = q[:strings.LastIndexByte(q, '.')]
		}
	}
	res, err := a.g.Check(ctx, engine.Request{Partition: r.Partition, Queue: q, User: r.User, Groups: r.Groups, Decided: r.Decided, Action: action})
	if err = a.groupsError(r.Partition, r.User, err); err != nil {
		return admission.SubmitDecision{}, err
	}
	admission.NoteLookup(ctx, res.Identity.Lookup.String())
	return admission.SubmitDecision{Allowed: res.Allowed, Reason: res.Reason()}, nil
}

// AuthorizeDelete decides a DELETE as YARN's kill (application.Kill); a
// modify ACL that does not parse grants nothing, and the reason says so.
func (a authorizer) AuthorizeDelete(ctx context.Context, r admission.DeleteRequest) (bool, string, error) {
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
	d, in, err := a.g.DecideApplication(ctx, engine.AppRequest{Partition: r.Partition, User: r.User, Groups: r.Groups, App: app, Action: application.Kill})
	admission.NoteLookup(ctx, in.Lookup.String())
	if err != nil {
		return false, "", err
	}
	return d.Allowed, d.Reason() + notes, nil
}

// Identify decides the groups a review stamps and checks, as Check does.
func (a authorizer) Identify(ctx context.Context, partition, user string, groups []string) (identity.Info, error) {
	in, err := a.g.Identify(ctx, partition, user, groups)
	return in, a.groupsError(partition, user, err)
}

// groupsError returns err, a failed group lookup without its detail,
// which goes to the log.
func (a authorizer) groupsError(partition, user string, err error) error {
	var gerr *engine.GroupsError
	if errors.As(err, &gerr) {
		id := httperr.NewRequestID()
		a.log.Error("group lookup failed", "requestID", id, "user", user, "partition", partition, "err", err)
		return fmt.Errorf("group lookup failed; usher's log has the details under request id %s", id)
	}
	return err
}
