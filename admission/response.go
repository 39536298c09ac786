package admission

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/internal/jsonscan"
)

// This file holds the responses: a decision, its constructors (allow,
// deny and the trusted and detailed variants) and its two renderings, the
// k8s.io/api AdmissionResponse of the Go API (toResponse) and the JSON the
// HTTP edge writes without reflection (appendReview). Both take every
// field from the same accessors (reason, statusReason), and
// TestAppendReviewMatchesToResponse decodes appendReview's output for
// every rule, trust, status code, patch and warning and compares it with
// toResponse's.

// decision is the outcome of a review before it becomes an
// AdmissionResponse.
type decision struct {
	allowed bool
	rule    Rule  // what let it through; RuleDenied for a denial
	trust   Trust // RuleTrustedDeleter: who
	verb    trustedVerb
	code    int32
	// message is a denial's message; for RuleKillRule, RuleEvictionByAdmin
	// and RuleBindingByAdmin the authorizer's reason ("" for none).
	message string
	// cause, check and field are a denial's structured details (see
	// Denial): why, from a closed set; which check ("submit", "kill");
	// the object's field that decided ("" when none did).
	cause    Cause
	check    string
	field    string
	patch    []byte
	warning  string
	identity string
	queue    string
	// queueAsked is the queue the marker asked for when placement chose
	// another (queue).
	queueAsked string
	name       string // the object's name when the request has none (collection deletes; generateName + "*" on CREATE)
	// group and kind are the object's API group and kind, for the
	// response's status details (set by Handler.review).
	group, kind string
	// warned: a denial by the queue check or the kill rule that warn mode
	// admitted; warning carries its message.
	warned bool
	// lookup is how the submitter was identified (NoteLookup), for the
	// audit record.
	lookup string
	// decided is the identity the IdentityResolver decided (nil without
	// one); degraded: it did not answer and the stamp holds the API
	// server's groups only.
	decided  *identity.Info
	degraded bool
}

// warnOf records on dc, an allow, that warn mode admitted the denial
// denied: its message becomes a warning (after any dc already had) and
// the audit record says warned.
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
		dc.warning += "; " + msg
	} else {
		dc.warning = msg
	}
}

// warnable says whether warn mode may admit the denial dc: a refusal
// (403) by the rule, never a failure to decide (usher fails closed).
func (dc *decision) warnable() bool { return !dc.allowed && dc.code == httpStatusForbidden }

// deleteMode applies enforceDeleteACLsMode to a kill rule decision.
func deleteMode(c *compiled, dc decision) decision {
	if !c.DeleteWarn || !dc.warnable() {
		return dc
	}
	out := allow(RuleWarnedDelete)
	out.identity, out.name = dc.identity, dc.name
	out.warnOf(&dc)
	return out
}

// allow lets a review through by rule.
func allow(rule Rule) decision { return decision{allowed: true, rule: rule, code: 200} }

// allowTrusted lets a delete, eviction or binding through for a trusted
// deleter.
func allowTrusted(verb trustedVerb, t Trust) decision {
	return decision{allowed: true, rule: RuleTrustedDeleter, trust: t, verb: verb, code: 200}
}

// allowBecause lets a review through by a rule whose reason is an
// authorizer's.
func allowBecause(rule Rule, reason string) decision {
	return decision{allowed: true, rule: rule, code: 200, message: reason}
}

// deny refuses a review for cause, with status code and a message for
// people.
func deny(cause Cause, code int32, format string, args ...any) decision {
	return decision{code: code, cause: cause, message: fmt.Sprintf(format, args...)}
}

// reason is the decision's reason in one phrase: a denial's message, or
// why it was allowed.
func (dc *decision) reason() string {
	switch {
	case !dc.allowed:
		return dc.message
	case dc.rule == RuleTrustedDeleter && dc.verb < numVerbs && dc.trust < numTrusts:
		return trustedReasons[dc.verb][dc.trust]
	case dc.rule == RuleKillRule && dc.message != "":
		return dc.message
	case (dc.rule == RuleEvictionByAdmin || dc.rule == RuleBindingByAdmin) && dc.message != "":
		return dc.rule.String() + ": " + dc.message
	}
	return dc.rule.String()
}

func (dc *decision) statusReason() metav1.StatusReason {
	switch dc.code {
	case httpStatusBadRequest:
		return metav1.StatusReasonBadRequest
	case httpStatusTooLarge:
		return metav1.StatusReasonRequestEntityTooLarge
	case httpStatusUnsupported:
		return metav1.StatusReasonUnsupportedMediaType
	case httpStatusInternal:
		return metav1.StatusReasonInternalError
	default:
		return metav1.StatusReasonForbidden
	}
}

// toResponse builds the AdmissionResponse for the decision (the
// constructors Allowed, Patched and Denied in one place). A denial's
// status carries the structured details (details), and a denial or a
// warned denial the audit annotations (auditAnnotations).
func (dc *decision) toResponse(uid string) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: types.UID(uid), Allowed: dc.allowed}
	if !dc.allowed {
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: dc.reason(),
			Reason:  dc.statusReason(),
			Details: dc.details(),
			Code:    dc.code,
		}
	}
	if len(dc.patch) > 0 {
		resp.Patch = append([]byte(nil), dc.patch...)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
	if dc.cause != "" {
		resp.AuditAnnotations = map[string]string{AuditKeyDecision: dc.decisionWord(), AuditKeyReason: string(dc.cause)}
		if dc.queue != "" {
			resp.AuditAnnotations[AuditKeyQueue] = dc.queue
		}
	}
	if dc.warning != "" {
		resp.Warnings = []string{dc.warning}
	}
	return resp
}

// Keys of the audit annotations of a denial (and of a warned denial) in
// the AdmissionResponse. The API server prefixes each with the webhook's
// name ("validate.usher.io/reason") and writes them to its audit log
// (annotations of the audit event), for denied requests too.
const (
	AuditKeyDecision = "decision" // "denied" or "warned"
	AuditKeyReason   = "reason"   // the Cause
	AuditKeyQueue    = "queue"    // the queue, when usher knows it
)

func (dc *decision) decisionWord() string {
	if dc.allowed {
		return "warned"
	}
	return "denied"
}

// details is a denial's metav1.StatusDetails: the object (name, group,
// kind; no name for an object created with generateName, which has none
// yet) and one cause whose type is the Cause, whose field is the field
// that decided and whose message is the queue. nil when the denial has no
// cause.
func (dc *decision) details() *metav1.StatusDetails {
	if dc.cause == "" {
		return nil
	}
	d := &metav1.StatusDetails{Name: detailName(dc.name), Group: dc.group, Kind: dc.kind,
		Causes: []metav1.StatusCause{{Type: metav1.CauseType(dc.cause), Message: dc.queue, Field: dc.field}}}
	return d
}

// detailName is the name of the status details: "" for the generateName
// form ("spark-*"), which no object is called.
func detailName(name string) string {
	if strings.HasSuffix(name, "*") {
		return ""
	}
	return name
}

// appendReview appends the JSON of an AdmissionReview whose response
// carries the decision: what encoding/json writes for
// AdmissionReview{Response: dc.toResponse(uid)}, without the reflection
// cost.
func appendReview(dst []byte, uid types.UID, dc *decision) []byte {
	dst = append(dst, `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":`...)
	dst = jsonscan.AppendString(dst, string(uid))
	if dc.allowed {
		dst = append(dst, `,"allowed":true`...)
	} else {
		dst = append(dst, `,"allowed":false,"status":{"metadata":{},"status":"Failure","message":`...)
		dst = jsonscan.AppendString(dst, dc.reason())
		dst = append(dst, `,"reason":`...)
		dst = jsonscan.AppendString(dst, string(dc.statusReason()))
		if dc.cause != "" {
			dst = append(dst, `,"details":{`...)
			sep := byte(0)
			member := func(key, v string) {
				if v == "" {
					return
				}
				if sep != 0 {
					dst = append(dst, sep)
				}
				sep = ','
				dst = append(dst, '"')
				dst = append(dst, key...)
				dst = append(dst, `":`...)
				dst = jsonscan.AppendString(dst, v)
			}
			member("name", detailName(dc.name))
			member("group", dc.group)
			member("kind", dc.kind)
			if sep != 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `"causes":[{`...)
			sep = 0
			member("reason", string(dc.cause))
			member("message", dc.queue)
			member("field", dc.field)
			dst = append(dst, "}]}"...)
		}
		dst = append(dst, `,"code":`...)
		dst = strconv.AppendInt(dst, int64(dc.code), 10)
		dst = append(dst, '}')
	}
	if len(dc.patch) > 0 {
		dst = append(dst, `,"patch":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, dc.patch)
		dst = append(dst, `","patchType":"JSONPatch"`...)
	}
	if dc.cause != "" {
		dst = append(dst, `,"auditAnnotations":{"`+AuditKeyDecision+`":`...)
		dst = jsonscan.AppendString(dst, dc.decisionWord())
		if dc.queue != "" {
			dst = append(dst, `,"`+AuditKeyQueue+`":`...)
			dst = jsonscan.AppendString(dst, dc.queue)
		}
		dst = append(dst, `,"`+AuditKeyReason+`":`...)
		dst = jsonscan.AppendString(dst, string(dc.cause))
		dst = append(dst, '}')
	}
	if dc.warning != "" {
		dst = append(dst, `,"warnings":[`...)
		dst = jsonscan.AppendString(dst, dc.warning)
		dst = append(dst, ']')
	}
	return append(dst, "}}\n"...)
}

// Bounds of what a decision carries (decision.bound): a message or
// warning, and a name, queue or identity. The mutating webhook sees an
// object before the API server validates it, so any of them may quote a
// value of megabytes; the response, the audit record, its Denial and the
// denial Event (whose annotation the API server refuses over 256 KiB)
// carry at most these.
const (
	maxDecisionMessage = 2 << 10
	maxDecisionField   = 512
)

// bound cuts what dc carries to the bounds above (clip.String says what it
// cut). A name of the generateName form keeps its "*".
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

// errString renders a value for an error message, shortened so that a huge
// hostile value does not flood logs.
func errString(s string) string { return clip.Quote(s, 200) }

// Cause says why usher denied a review, from a closed set: the reason of
// the Event usher records, the type of the cause in the denial's status
// details, the "reason" audit annotation and Denial.Reason. A client may
// switch on it; the message is for people and may change.
type Cause string

// The causes of a denial. docs/audit.md describes each.
const (
	// CauseQueueSubmitDenied: enforceQueueACLs is on and no ACL lets the
	// submitter submit to a queue the object's pods would run in (or
	// YuniKorn's placement rules place it nowhere).
	CauseQueueSubmitDenied Cause = "QueueSubmitDenied"
	// CauseUnknownQueue: a queue marker names no valid queue.
	CauseUnknownQueue Cause = "UnknownQueue"
	// CauseUserInfoForged: the user.info annotation is set by a submitter
	// who may not supply one.
	CauseUserInfoForged Cause = "UserInfoForged"
	// CauseUserInfoInvalid: the user.info annotation is not valid, or a
	// requester's names more groups than WithMaxGroups allows.
	CauseUserInfoInvalid Cause = "UserInfoInvalid"
	// CauseUserInfoMissing: the validating webhook sees an object the
	// mutating webhook did not stamp.
	CauseUserInfoMissing Cause = "UserInfoMissing"
	// CauseUserInfoChanged: an UPDATE or a Binding would add, change or
	// remove the user.info annotation.
	CauseUserInfoChanged Cause = "UserInfoChanged"
	// CauseKillDenied: enforceDeleteACLs is on and the requester may not
	// kill the workload (a DELETE, or an UPDATE of what decides who may).
	CauseKillDenied Cause = "KillDenied"
	// CauseEvictionDenied: an eviction by someone who may not delete
	// every pod.
	CauseEvictionDenied Cause = "EvictionDenied"
	// CauseBindingDenied: a Binding that sets what decides who may
	// delete the pod, by someone who may not delete every pod.
	CauseBindingDenied Cause = "BindingDenied"
	// CauseInvalidObject: the object cannot be read (malformed, no pod
	// template) or the request names no user.
	CauseInvalidObject Cause = "InvalidObject"
	// CauseInvalidRequest: the body is not a usable AdmissionReview, or its
	// request.userInfo names more groups than WithMaxGroups allows.
	CauseInvalidRequest Cause = "InvalidRequest"
	// CauseDecisionFailed: usher could not decide (an authorizer failed
	// or is missing, an internal error, the caller went away) and fails
	// closed.
	CauseDecisionFailed Cause = "DecisionFailed"
)

// Causes lists every Cause, in the order above.
func Causes() []Cause {
	return []Cause{CauseQueueSubmitDenied, CauseUnknownQueue, CauseUserInfoForged, CauseUserInfoInvalid,
		CauseUserInfoMissing, CauseUserInfoChanged, CauseKillDenied, CauseEvictionDenied, CauseBindingDenied,
		CauseInvalidObject, CauseInvalidRequest, CauseDecisionFailed}
}

// Checks of Denial.Check: which rule the ACLs were asked under.
const (
	CheckSubmit = "submit" // the queue check: submit or admin ACLs of the queue and its ancestors
	CheckKill   = "kill"   // the kill rule: owner, modify ACL, queue admins, cluster and application admins
)
