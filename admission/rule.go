package admission

// Rule names the rule that let a review through, from a closed set, in
// the words of the audit record's reason; RuleDenied is every denial.
type Rule string

// The rules.
const (
	RuleDenied               Rule = "denied"
	RuleKindNotHandled       Rule = "kind not handled"
	RuleOperationNotHandled  Rule = "operation not handled"
	RuleNamespaceBypassed    Rule = "namespace bypassed" // bypassNamespaces or processNamespaces
	RuleStamped              Rule = "stamped the submitter's identity"
	RuleKeptBypassAuth       Rule = "kept user.info: bypassAuth lets any submitter set it"
	RuleKeptController       Rule = "kept user.info set by a trusted controller" // systemUsers, with trustControllers
	RuleKeptExternalUser     Rule = "kept user.info set by a trusted external user"
	RuleKeptExternalGroup    Rule = "kept user.info set by a member of a trusted external group"
	RuleKeptSame             Rule = "kept user.info naming the submitter itself" // with exactly the groups usher stamps
	RuleLegacyLabel          Rule = "bypassAuth and legacy username label: left unstamped"
	RuleControllerReplicaSet Rule = "ReplicaSet created by a controller: left unstamped" // its pods are stamped
	RuleUnchanged            Rule = "user.info unchanged"
	RuleTrustedDeleter       Rule = "by a trusted deleter" // a DELETE, eviction or guarded Binding; Trust says who
	RuleTerminating          Rule = "the object is already being deleted"
	RuleKillRule             Rule = "the kill rule allows it" // the reason is the DeleteAuthorizer's
	RuleEvictionByAdmin      Rule = "eviction by an admin of every queue"
	RuleBindingPlain         Rule = "binding sets nothing usher guards"
	RuleBindingByAdmin       Rule = "binding by an admin of every queue"
	RuleWarnedDelete         Rule = "warn mode: the kill rule would deny it" // the denial's message is a warning
	RuleRestamped            Rule = "replaced user.info naming the submitter with the identity usher decides"
	RulePropagated           Rule = "user.info of the parent, copied by a propagator"
	RulePropagatorDelete     Rule = "delete by a propagator of an object carrying its parent's user.info"
	RuleLocalQueue           Rule = "LocalQueue whose ClusterQueue maps to a queue its writer may submit to"
	RuleQueueAdmin           Rule = "steering annotations unchanged or set by an admin of the queues they name" // delegatedAdministration
	RuleTrustedSetter        Rule = "by system:masters or a trusted setter"                                     // delegatedAdministration
)

// Trust says, as reasons show it, why a requester may delete anything
// without the kill rule; TrustNone ("") is no trust.
type Trust string

const (
	TrustNone          Trust = ""
	TrustController    Trust = "a trusted controller"
	TrustExternalUser  Trust = "a trusted external user"
	TrustExternalGroup Trust = "a member of a trusted external group"
	TrustMasters       Trust = "a member of " + mastersGroup
)
