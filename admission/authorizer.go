package admission

import (
	"context"

	"github.com/usherhq/usher/identity"
)

// SubmitRequest asks whether a submitter may submit to a queue, in one
// value (as apiserver's authorizer.Attributes) so no two strings can be swapped.
type SubmitRequest struct {
	Partition string
	Queue     string // a queue path ("root.a.b"), or "" for the partition's default queue
	// User and Groups are the submitter (stamped, an accepted user.info,
	// or the legacy label's user); nil Groups may be resolved. Groups must
	// not be modified.
	User    string
	Groups  []string
	Decided bool // Groups are the review's IdentityResolver answer: no directory is asked
	// Place: the partition's placement rules choose the queue of a YuniKorn
	// marker, whose raw value Queue is ("" for none); the authorizer
	// answers the placed queue (SubmitDecision.Queue); docs/placement.md.
	Place     bool
	Namespace string // the namespace tag the placement rules see (with Place)
	// ParentQueue reads the namespace.parentqueue tag (with Place), if
	// the rules read it; nil: the tag is absent.
	ParentQueue ParentQueueLookup
	// Admin asks for admin instead, on Queue's nearest configured ancestor.
	Admin bool
}

// SubmitDecision is a QueueAuthorizer's answer; the zero value denies.
type SubmitDecision struct {
	Allowed bool
	Reason  string // shown on a denial; with Asked it says why placement chose Queue
	Queue   string // the queue placement chose ("" when no placement decided)
	// Asked is the queue the marker names when placement chose another: the response warns naming both.
	Asked string
}

// QueueAuthorizer decides whether a submitter may submit to a queue. An
// error means no decision: the webhook denies (fails closed).
type QueueAuthorizer interface {
	AuthorizeSubmit(ctx context.Context, req SubmitRequest) (SubmitDecision, error)
}

// DeleteRequest asks whether a user may delete (kill) a workload, by YARN's kill rule (docs/delete.md).
type DeleteRequest struct {
	Partition string
	// Queue is the workload's queue marker's path, "" for the default
	// queue; it may name a queue that does not exist.
	Queue string
	// Owner is the user its user.info (or, with bypassAuth, legacy label) records, "" for none.
	Owner     string
	ModifyACL *string // its modify ACL annotation in YARN syntax; nil when absent, "" allows nobody
	// User and Groups are the requester; Groups must not be modified.
	User   string
	Groups []string
}

// DeleteAuthorizer decides YARN's kill rule when enforceDeleteACLs is on.
// An error means no decision: the webhook denies; reason is shown on a denial.
type DeleteAuthorizer interface {
	AuthorizeDelete(ctx context.Context, req DeleteRequest) (allowed bool, reason string, err error)
}

// IdentityResolver decides, once per review, the identity the stamp, the
// queue check and the audit record use when the groups mode is resolve or
// merge (docs/identity.md). Its error text is shown to the requester, so
// it must not carry the directory's internals.
type IdentityResolver interface {
	Identify(ctx context.Context, partition, user string, groups []string) (identity.Info, error)
}

// Authorizers answer a review from one configuration. A nil Queue or
// Delete fails its check closed; without Identity the given groups are used.
type Authorizers struct {
	Queue    QueueAuthorizer
	Delete   DeleteAuthorizer
	Identity IdentityResolver
}

// ParentQueueLookup reads the yunikorn.apache.org/parentqueue annotation
// of Namespace name, "" when it has none.
type ParentQueueLookup func(ctx context.Context, name string) (string, error)

// WithParentQueueLookup sets how YuniKorn's namespace.parentqueue tag is
// read for the placement rules. Default: none, and the tag is absent.
func WithParentQueueLookup(l ParentQueueLookup) Option {
	return func(h *Handler) { h.reads.parentQueue = l }
}
