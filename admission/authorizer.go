package admission

import (
	"context"

	"github.com/usherhq/usher/identity"
)

// SubmitRequest asks whether a submitter may submit to a queue: one value
// describes the request, as apiserver's authorizer.Attributes does, so an
// authorizer never takes a row of strings it could swap.
type SubmitRequest struct {
	// Partition is the partition the webhook serves (admissionController
	// partition; default "default").
	Partition string
	// Queue is a queue path ("root.a.b"), or "" for the partition's
	// default queue, which the authorizer resolves.
	Queue string
	// User is the submitter: the stamped user, the user of an accepted
	// user.info annotation, or the legacy label's user.
	User string
	// Groups are the submitter's groups as the user.info annotation (or
	// the API server) states them; nil means none were supplied and the
	// authorizer may resolve them. The authorizer must not modify them.
	Groups []string
	// Decided says Groups are the identity the review decided with (its
	// IdentityResolver's answer, also stamped): the authorizer uses them
	// as they are, even none, and asks no directory.
	Decided bool
	// Place is set for YuniKorn's markers (the sources whose scheduler is
	// yunikorn): YuniKorn does not run a pod in the queue its marker
	// names but where the partition's placement rules put it. Queue is
	// then the marker's value as YuniKorn's shim passes it, unqualified
	// and unmapped (the provided rule's input; "" when the pods carry no
	// YuniKorn marker), and the authorizer must decide on the queue the
	// partition's placement rules give (the implicit provided rule when
	// it has none), and answer that queue (SubmitDecision.Queue); a
	// rejected placement is a denial whose reason is the placement's. A
	// pod without a marker (Queue "") in a partition without
	// placementrules is checked against the partition's default queue:
	// YuniKorn's own admission controller labels such pods with its
	// default queue (filtering.defaultQueue), and usher's default queue
	// stands for it.
	Place bool
	// Namespace is the request's namespace, the namespace tag YuniKorn's
	// shim gives the placement rules (with Place). The shim also passes
	// namespace.parentqueue from the Namespace object's
	// yunikorn.apache.org/parentqueue annotation, which the webhook does
	// not read: rules on that tag miss.
	Namespace string
}

// SubmitDecision is a QueueAuthorizer's answer: whether the submitter may
// submit, why, and where the work will run. The zero value denies.
type SubmitDecision struct {
	Allowed bool
	// Reason explains the decision: a denial's is shown to the submitter;
	// with Asked, it says why placement chose Queue.
	Reason string
	// Queue is the queue the work will run in when placement chose it
	// (SubmitRequest.Place); "" when the decision is about the request's
	// queue, or placement rejected the work.
	Queue string
	// Asked is the queue the request's marker names, read as a path under
	// root, when placement chose another (Queue): the admission response
	// then warns, naming both, and the audit record carries both. "" when
	// the work runs where its marker asks, or it has none.
	Asked string
}

// QueueAuthorizer decides whether a submitter may submit to a queue.
//
// An error means no decision could be made: the webhook then denies
// (fails closed) and reports the error; the decision beside it is ignored.
type QueueAuthorizer interface {
	AuthorizeSubmit(ctx context.Context, req SubmitRequest) (SubmitDecision, error)
}

// DeleteRequest asks whether a user may delete (kill) a workload, by
// YARN's kill rule.
type DeleteRequest struct {
	// Partition is the partition the webhook serves.
	Partition string
	// Queue is the queue path the workload is in ("root.a.b"), or "" for
	// the partition's default queue. It comes from a queue marker on the
	// workload and may name a queue the configuration does not have
	// (application.Application.UnknownQueueAsRoot is the rule for that).
	Queue string
	// Owner is the user recorded in the workload's user.info annotation
	// (or, with bypassAuth, its legacy username label), or "" when none
	// is recorded: then nobody is the owner
	// (application.Application.Unowned).
	Owner string
	// ModifyACL is the workload's modify ACL in YARN syntax as its
	// annotation states it; nil when the workload has none (the
	// partition's default applies). An annotation set to "" allows nobody.
	ModifyACL *string
	// User and Groups are the requester as the API server authenticated
	// it; the authorizer must not modify Groups.
	User   string
	Groups []string
}

// DeleteAuthorizer decides whether a user may delete (kill) a workload,
// by YARN's kill rule, when enforceDeleteACLs is on: the owner, members of
// its modify ACL, admins of its queue (or an ancestor), cluster admins and
// application admins may.
//
// An error means no decision could be made: the webhook then denies
// (fails closed) and reports it. reason explains the decision and is shown
// to the requester on a denial.
type DeleteAuthorizer interface {
	AuthorizeDelete(ctx context.Context, req DeleteRequest) (allowed bool, reason string, err error)
}

// IdentityResolver decides the identity a review stamps and checks, when
// the partition's groups mode is resolve or merge: it is asked once per
// review, and the stamp, the queue check and the audit record all use its
// answer.
//
// Identify returns the identity of user in partition from groups (the
// API server's, or a stamp's without its directory groups) combined with
// the directory's as the partition's groups mode says, each group with
// where it came from (identity.SourceGiven for groups). An error means
// the groups could not be established; its text is shown to the
// requester, so it must not carry the directory's internals.
type IdentityResolver interface {
	Identify(ctx context.Context, partition, user string, groups []string) (identity.Info, error)
}

// Authorizers are what a review asks besides its settings, each answering
// from the same configuration as the others. A nil member is allowed:
// the check it serves then fails closed, and without Identity the API
// server's groups are used as given.
type Authorizers struct {
	// Queue is asked when enforceQueueACLs is on.
	Queue QueueAuthorizer
	// Delete is asked when enforceDeleteACLs is on.
	Delete DeleteAuthorizer
	// Identity decides the groups to stamp and check; set it only when
	// the partition's groups mode is resolve or merge.
	Identity IdentityResolver
}
