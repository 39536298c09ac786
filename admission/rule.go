package admission

// Rule names the rule that let a review through, from a closed set, so
// that code and tests compare decisions by rule rather than by message
// text. The zero value, RuleDenied, is every denial: a denial's reason
// is its message.
type Rule uint8

const (
	// RuleDenied: the review was denied (or not decoded).
	RuleDenied Rule = iota
	// RuleKindNotHandled: the object's kind is none the webhook handles.
	RuleKindNotHandled
	// RuleOperationNotHandled: the operation is none the webhook decides
	// (DELETE, evictions and guarded bindings without enforceDeleteACLs).
	RuleOperationNotHandled
	// RuleNamespaceBypassed: bypassNamespaces or processNamespaces.
	RuleNamespaceBypassed
	// RuleStamped: CREATE; the submitter's identity was stamped.
	RuleStamped
	// RuleKeptBypassAuth: CREATE; a user.info annotation kept because
	// bypassAuth lets any submitter set it.
	RuleKeptBypassAuth
	// RuleKeptController: kept, set by a trusted controller (systemUsers,
	// trustControllers).
	RuleKeptController
	// RuleKeptExternalUser: kept, set by a user matching externalUsers.
	RuleKeptExternalUser
	// RuleKeptExternalGroup: kept, set by a member of a group matching
	// externalGroups.
	RuleKeptExternalGroup
	// RuleKeptSame: kept, naming the submitter with exactly the groups
	// usher stamps.
	RuleKeptSame
	// RuleLegacyLabel: bypassAuth and the legacy username label without
	// an annotation; left unstamped.
	RuleLegacyLabel
	// RuleControllerReplicaSet: a ReplicaSet a controller creates is
	// never patched; its pods are stamped.
	RuleControllerReplicaSet
	// RuleUnchanged: UPDATE that leaves user.info as it was.
	RuleUnchanged
	// RuleTrustedDeleter: a DELETE, eviction or guarded Binding by a
	// trusted deleter; the decision's Trust says which.
	RuleTrustedDeleter
	// RuleTerminating: DELETE of an object already being deleted.
	RuleTerminating
	// RuleKillRule: the DeleteAuthorizer allowed a DELETE (or a guarded
	// UPDATE); the reason is its own.
	RuleKillRule
	// RuleEvictionByAdmin: an eviction by someone who may kill every
	// application.
	RuleEvictionByAdmin
	// RuleBindingPlain: a Binding that sets nothing usher guards.
	RuleBindingPlain
	// RuleBindingByAdmin: a Binding setting what decides deletion, by
	// someone who may kill every application.
	RuleBindingByAdmin
	// RuleWarnedDelete: the kill rule denied a DELETE, eviction or Binding
	// and enforceDeleteACLsMode is warn: admitted with the denial's message
	// as a warning.
	RuleWarnedDelete
	// RuleRestamped: CREATE; a user.info naming the submitter differed
	// from the identity usher decides and was replaced by it.
	RuleRestamped

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
}

// String is the rule's reason as the audit record shows it.
func (r Rule) String() string {
	if r < numRules {
		return ruleText[r]
	}
	return "unknown rule"
}

// Trust says why a requester is trusted to delete any object without the
// kill rule (enforceDeleteACLs). The zero value is no trust.
type Trust uint8

const (
	// TrustNone: not a trusted deleter.
	TrustNone Trust = iota
	// TrustController: a controller matching systemUsers (when
	// trustControllers).
	TrustController
	// TrustExternalUser: a user matching externalUsers.
	TrustExternalUser
	// TrustExternalGroup: a member of a group matching externalGroups.
	TrustExternalGroup
	// TrustMasters: a member of system:masters.
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
	numVerbs
)

// trustedReasons holds every trusted deleter's reason, built once so that
// recording one allocates nothing: "delete by a trusted controller".
var trustedReasons = func() (t [numVerbs][numTrusts]string) {
	for v, verb := range [numVerbs]string{"delete", "eviction", "binding"} {
		for tr := range numTrusts {
			t[v][tr] = verb + " by " + tr.String()
		}
	}
	return t
}()
