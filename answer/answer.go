// Package answer renders an engine answer for the one who asked: as the
// one wire shape (decision.Output: what the decision commands print with
// -o json and what POST /v1/access answers) and as the text usher check,
// explain, place and app print, which a failing policy test shows as its
// trail (text.go).
package answer

import (
	"fmt"

	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/policy"
)

// Decided is command's answer to a queue decision; steps, with trail,
// are its ACL trail.
func Decided(command string, res engine.Result, steps []policy.Step, trail bool) *decision.Output {
	out := &decision.Output{Command: command, Allowed: res.Allowed, Reason: res.Reason(), Partition: res.Partition,
		Queue: res.Queue, Action: res.Action.String(), Identity: decision.IdentityOf(res.Identity), DecidedBy: decidedBy(res.Decision)}
	if trail {
		out.Trail = &decision.Trail{ACLs: decision.ACLSteps(steps)}
	}
	return out
}

// Placed is the answer of a placement (check and explain with --place,
// place); trail adds the placement rules tried and the ACL trail of the
// queue whose ACLs decided.
func Placed(command string, res *engine.PlaceResult, trail bool) *decision.Output {
	out := &decision.Output{Command: command, Allowed: res.Placed, Reason: PlaceReason(res), Partition: res.Partition,
		Queue: res.Queue, Action: policy.Submit.String(), Identity: decision.IdentityOf(res.Identity),
		Placement: &decision.Placement{Placed: res.Placed, Queue: res.Queue, Create: res.Create, Asked: res.Asked, Rule: res.RuleName(),
			Reason: res.Reason()}}
	if res.Placed {
		out.DecidedBy = decidedBy(res.Decision)
	}
	if trail {
		out.Trail = &decision.Trail{Placement: decision.PlacementSteps(res.Rules, res.Result), ACLs: decision.ACLSteps(res.Steps)}
	}
	return out
}

// PlaceReason is the reason of a placement's answer: where it was placed
// and by which rule, and why not in the queue named when elsewhere.
func PlaceReason(res *engine.PlaceResult) string {
	switch {
	case res.Asked != "":
		return fmt.Sprintf("placed in %s, by %s, not in %q, the queue named: %s", res.Queue, res.RuleName(), res.Asked, res.Why())
	case res.Placed:
		return fmt.Sprintf("%s, by %s", res.Reason(), res.RuleName())
	}
	return res.Why()
}

// AppDecided is the answer of an application decision; checks keeps
// every check made for each requirement.
func AppDecided(d application.Decision, in identity.Info, checks bool) *decision.Output {
	return &decision.Output{Command: "app", Allowed: d.Allowed, Reason: d.Reason(), Partition: d.Partition, Queue: d.Queue,
		Action: d.Action.String(), Identity: decision.IdentityOf(in), Application: d.Application, Owner: d.Owner,
		TargetQueue: d.Target, Requirements: decision.Requirements(d, checks)}
}

// Queues is the answer listing every queue of a partition with a user's rights.
func Queues(res engine.AccessResult) *decision.Output {
	return &decision.Output{Command: "access", Allowed: true, Partition: res.Partition, Identity: decision.IdentityOf(res.Identity),
		Reason: fmt.Sprintf("the rights of %s on every queue of partition %s", res.Identity.User, res.Partition),
		Queues: decision.QueueRightsOf(res.Queues)}
}

func decidedBy(d policy.Decision) *decision.DecidedBy {
	if !d.Allowed {
		return nil
	}
	return &decision.DecidedBy{Queue: d.By.Queue, ACL: string(d.By.ACL), Kind: d.By.Match.Kind.String(), Entry: d.By.Match.Name}
}
