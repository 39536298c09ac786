package admission

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/clip"
)

// decision is the one outcome of a review, rendered by writeReview and
// Handler.record; a check returns the zero decision (code 0) when it does not deny.
type decision struct {
	allowed bool
	rule    Rule
	trust   Trust
	code    int32
	message string // a denial's, or the authorizer's reason of an allow
	// The rest are as in Denial and Record; group and kind are set by complete.
	cause                             Cause
	check, field                      string
	patch                             []byte
	warning                           string
	identity, queue, queueAsked, name string
	group, kind                       string
	warned                            bool
	lookup                            string
	decided                           *identity.Info
	degraded                          bool
	propagation, unstampedParent      string
	written                           [2]string // the patch's user.info and DirectoryGroupsAnnotation, for templates
}

// warnOf records on dc, an allow, that warn mode admitted denied.
func (dc *decision) warnOf(denied *decision) {
	dc.warned = true
	dc.addWarning(denied.message)
	if denied.queue != "" {
		dc.queue, dc.queueAsked = denied.queue, ""
	}
	dc.cause, dc.check, dc.field = denied.cause, denied.check, denied.field
}

// addWarning adds msg to dc's admission warning, after any it has.
func (dc *decision) addWarning(msg string) {
	if dc.warning != "" {
		msg = dc.warning + "; " + msg
	}
	dc.warning = msg
}

// warnable says warn mode may admit dc: a refusal (403), never a failure to decide.
func (dc *decision) warnable() bool { return !dc.allowed && dc.code == httpStatusForbidden }

// warnMode applies a warn mode (enforceDeleteACLsMode, enforceQueueACLsMode,
// delegatedAdministration) to dc: when warn, a refusal becomes an allow by
// rule carrying the refusal as its warning.
func warnMode(warn bool, rule Rule, dc decision) decision {
	if !warn || !dc.warnable() {
		return dc
	}
	out := allow(rule)
	out.identity, out.name = dc.identity, dc.name
	out.warnOf(&dc)
	return out
}

// allow lets a review through by rule.
func allow(rule Rule) decision { return decision{allowed: true, rule: rule, code: 200} }

// allowTrusted lets an action ("delete", "eviction", …) through for a trusted deleter.
func allowTrusted(action string, t Trust) decision {
	return decision{allowed: true, rule: RuleTrustedDeleter, trust: t, code: 200, message: action + " by " + string(t)}
}

// allowBecause lets a review through by rule, for an authorizer's reason.
func allowBecause(rule Rule, reason string) decision {
	return decision{allowed: true, rule: rule, code: 200, message: reason}
}

// deny refuses a review for cause, with status code and a message.
func deny(cause Cause, code int32, format string, args ...any) decision {
	return decision{rule: RuleDenied, code: code, cause: cause, message: fmt.Sprintf(format, args...)}
}

// reason says in one phrase why dc denies or allows.
func (dc *decision) reason() string {
	switch {
	case !dc.allowed:
		return dc.message
	case (dc.rule == RuleTrustedDeleter || dc.rule == RuleKillRule) && dc.message != "":
		return dc.message
	case (dc.rule == RuleEvictionByAdmin || dc.rule == RuleBindingByAdmin) && dc.message != "":
		return string(dc.rule) + ": " + dc.message
	}
	return string(dc.rule)
}

// statusReasons are the reasons of the status codes a denial carries, but 403.
var statusReasons = map[int32]metav1.StatusReason{
	httpStatusBadRequest:  metav1.StatusReasonBadRequest,
	httpStatusTooLarge:    metav1.StatusReasonRequestEntityTooLarge,
	httpStatusUnsupported: metav1.StatusReasonUnsupportedMediaType,
	httpStatusInternal:    metav1.StatusReasonInternalError,
}

// writeReview answers the review uid with dc: its AdmissionReview, and a newline.
func writeReview(w http.ResponseWriter, uid types.UID, dc *decision) {
	b, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: reviewAPIVersion, Kind: reviewKind},
		Response: dc.toResponse(uid),
	})
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

// toResponse builds the AdmissionResponse for dc: a denial's status
// carries the structured details, a denial or a warned denial the audit annotations.
func (dc *decision) toResponse(uid types.UID) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: uid, Allowed: dc.allowed}
	if !dc.allowed {
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Message: dc.reason(), Reason: cmp.Or(statusReasons[dc.code], metav1.StatusReasonForbidden), Code: dc.code}
		if dc.cause != "" {
			name := dc.name
			if strings.HasSuffix(name, "*") {
				name = "" // a generateName ("spark-*") names no object
			}
			resp.Result.Details = &metav1.StatusDetails{Name: name, Group: dc.group, Kind: dc.kind,
				Causes: []metav1.StatusCause{{Type: metav1.CauseType(dc.cause), Message: dc.queue, Field: dc.field}}}
		}
	}
	if len(dc.patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = dc.patch, &pt
	}
	if dc.cause != "" {
		// The API server logs them prefixed with the webhook's name.
		resp.AuditAnnotations = map[string]string{"decision": "denied", "reason": string(dc.cause)}
		if dc.allowed {
			resp.AuditAnnotations["decision"] = "warned"
		}
		if dc.queue != "" {
			resp.AuditAnnotations["queue"] = dc.queue
		}
	}
	if dc.warning != "" {
		resp.Warnings = []string{dc.warning}
	}
	return resp
}

// Bounds of a decision's message or warning and of a name, queue or
// identity: /mutate sees objects the API server has not validated.
const (
	maxDecisionMessage = 2 << 10
	maxDecisionField   = 512
)

// bound cuts what dc carries to the bounds above, keeping a generateName "*".
func (dc *decision) bound() {
	dc.message = clip.String(dc.message, maxDecisionMessage)
	dc.warning = clip.String(dc.warning, maxDecisionMessage)
	dc.queue = clip.String(dc.queue, maxDecisionField)
	dc.queueAsked = clip.String(dc.queueAsked, maxDecisionField)
	dc.identity = clip.String(dc.identity, maxDecisionField)
	if n, ok := strings.CutSuffix(dc.name, "*"); ok {
		dc.name = clip.String(n, maxDecisionField) + "*"
	} else {
		dc.name = clip.String(dc.name, maxDecisionField)
	}
}

// errString quotes a value for an error message, clipped.
func errString(s string) string { return clip.Quote(s, 200) }

// Cause says why usher denied a review, from a closed set a client may
// switch on (docs/audit.md), unlike the message.
type Cause string

// The causes of a denial. docs/audit.md describes each.
const (
	CauseQueueSubmitDenied Cause = "QueueSubmitDenied" // no ACL lets the submitter submit to a queue, or placement rejects it
	CauseUnknownQueue      Cause = "UnknownQueue"      // a queue marker names no valid queue
	CauseUserInfoForged    Cause = "UserInfoForged"    // user.info set by a submitter who may not supply one
	CauseUserInfoInvalid   Cause = "UserInfoInvalid"   // user.info invalid, or naming too many groups
	CauseUserInfoMissing   Cause = "UserInfoMissing"   // /validate sees an object /mutate did not stamp
	CauseUserInfoChanged   Cause = "UserInfoChanged"   // an UPDATE or a Binding would change user.info
	CauseKillDenied        Cause = "KillDenied"        // the kill rule refuses a DELETE or an UPDATE of what decides it
	CauseEvictionDenied    Cause = "EvictionDenied"    // an eviction by someone who may not delete every pod
	CauseBindingDenied     Cause = "BindingDenied"     // a Binding changing who may delete, by someone who may not
	CauseInvalidObject     Cause = "InvalidObject"     // the object cannot be read, or the request names no user
	CauseInvalidRequest    Cause = "InvalidRequest"    // not a usable AdmissionReview, or too many groups
	CauseDecisionFailed    Cause = "DecisionFailed"    // usher could not decide and fails closed
	CausePropagationDenied Cause = "PropagationDenied" // a propagator's object names no parent it may copy from, or carries another identity
	CauseQueueAdminDenied  Cause = "QueueAdminDenied"  // delegatedAdministration: a Namespace's steering annotation names a queue the writer may not administer
)

// Causes lists every Cause, in the order above.
func Causes() []Cause {
	return []Cause{CauseQueueSubmitDenied, CauseUnknownQueue, CauseUserInfoForged, CauseUserInfoInvalid,
		CauseUserInfoMissing, CauseUserInfoChanged, CauseKillDenied, CauseEvictionDenied, CauseBindingDenied,
		CauseInvalidObject, CauseInvalidRequest, CauseDecisionFailed, CausePropagationDenied, CauseQueueAdminDenied}
}

// Checks of Denial.Check: which rule the ACLs were asked under.
const (
	CheckSubmit = "submit" // the queue check: submit or admin ACLs of the queue and its ancestors
	CheckKill   = "kill"   // the kill rule: owner, modify ACL, queue admins, cluster and application admins
)
