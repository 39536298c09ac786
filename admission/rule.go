package admission

// Rule names the rule that let a review through, from a closed set; the
// zero value, RuleDenied, is every denial.
type Rule uint8

// The rules; ruleText says what each means.
const (
	RuleDenied Rule = iota
	RuleKindNotHandled
	RuleOperationNotHandled
	RuleNamespaceBypassed // bypassNamespaces or processNamespaces
	RuleStamped
	RuleKeptBypassAuth
	RuleKeptController // systemUsers, with trustControllers
	RuleKeptExternalUser
	RuleKeptExternalGroup
	RuleKeptSame // naming the submitter with exactly the groups usher stamps
	RuleLegacyLabel
	RuleControllerReplicaSet // its pods are stamped
	RuleUnchanged
	RuleTrustedDeleter // a DELETE, eviction or guarded Binding; Trust says who
	RuleTerminating
	RuleKillRule // the DeleteAuthorizer allowed it; the reason is its own
	RuleEvictionByAdmin
	RuleBindingPlain
	RuleBindingByAdmin
	RuleWarnedDelete // enforceDeleteACLsMode warn: the denial's message is a warning
	RuleRestamped
	RulePropagated // a propagator's object carries, or gets, its parent's user.info
	RulePropagatorDelete
	RuleLocalQueue    // its writer may submit to the queue its ClusterQueue maps to
	RuleQueueAdmin    // delegatedAdministration: a Namespace's steering annotations
	RuleTrustedSetter // delegatedAdministration: system:masters or trustedSetters

	numRules
)

var ruleText = [numRules]string{
	RuleDenied:               "denied",
	RuleKindNotHandled:       "kind not handled",
	RuleOperationNotHandled:  "operation not handled",
	RuleNamespaceBypassed:    "namespace bypassed",
	RuleStamped:              "stamped the submitter's identity",
	RuleKeptBypassAuth:       "kept user.info: bypassAuth lets any submitter set it",
	RuleKeptController:       "kept user.info set by a trusted controller",
	RuleKeptExternalUser:     "kept user.info set by a trusted external user",
	RuleKeptExternalGroup:    "kept user.info set by a member of a trusted external group",
	RuleKeptSame:             "kept user.info naming the submitter itself",
	RuleLegacyLabel:          "bypassAuth and legacy username label: left unstamped",
	RuleControllerReplicaSet: "ReplicaSet created by a controller: left unstamped",
	RuleUnchanged:            "user.info unchanged",
	RuleTrustedDeleter:       "by a trusted deleter",
	RuleTerminating:          "the object is already being deleted",
	RuleKillRule:             "the kill rule allows it",
	RuleEvictionByAdmin:      "eviction by an admin of every queue",
	RuleBindingPlain:         "binding sets nothing usher guards",
	RuleBindingByAdmin:       "binding by an admin of every queue",
	RuleWarnedDelete:         "warn mode: the kill rule would deny it",
	RuleRestamped:            "replaced user.info naming the submitter with the identity usher decides",
	RulePropagated:           "user.info of the parent, copied by a propagator",
	RulePropagatorDelete:     "delete by a propagator of an object carrying its parent's user.info",
	RuleLocalQueue:           "LocalQueue whose ClusterQueue maps to a queue its writer may submit to",
	RuleQueueAdmin:           "steering annotations unchanged or set by an admin of the queues they name",
	RuleTrustedSetter:        "by system:masters or a trusted setter",
}

// String is the rule's reason as the audit record shows it.
func (r Rule) String() string {
	if r < numRules {
		return ruleText[r]
	}
	return "unknown rule"
}

// Trust says why a requester may delete anything without the kill rule; trustText says what each means.
type Trust uint8

const (
	TrustNone Trust = iota
	TrustController
	TrustExternalUser
	TrustExternalGroup
	TrustMasters

	numTrusts
)

var trustText = [numTrusts]string{
	TrustNone:          "an untrusted user",
	TrustController:    "a trusted controller",
	TrustExternalUser:  "a trusted external user",
	TrustExternalGroup: "a member of a trusted external group",
	TrustMasters:       "a member of " + mastersGroup,
}

// String names who is trusted, as reasons show it.
func (t Trust) String() string {
	if t < numTrusts {
		return trustText[t]
	}
	return "unknown trust"
}

// Verbs of the actions a trusted deleter's reason names.
type trustedVerb uint8

const (
	verbDelete trustedVerb = iota
	verbEviction
	verbBinding
	verbLocalQueue
	numVerbs
)
