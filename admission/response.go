package admission

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	message  string
	patch    []byte
	warning  string
	identity string
	queue    string
	name     string // the object's name when the request has none (collection deletes; generateName + "*" on CREATE)
	// warned: a denial by the queue check or the kill rule that warn mode
	// admitted; warning carries its message.
	warned bool
	// lookup is how the submitter was identified (NoteLookup), for the
	// audit record.
	lookup string
}

// Modes of enforceQueueACLsMode and enforceDeleteACLsMode.
const (
	ModeDeny = "deny"
	ModeWarn = "warn"
)

// warnOf records on dc, an allow, that warn mode admitted the denial
// denied: its message becomes a warning (after any dc already had) and
// the audit record says warned.
func (dc *decision) warnOf(denied *decision) {
	dc.warned = true
	if dc.warning != "" {
		dc.warning += "; " + denied.message
	} else {
		dc.warning = denied.message
	}
	if denied.queue != "" {
		dc.queue = denied.queue
	}
}

// warnable says whether warn mode may admit the denial dc: a refusal
// (403) by the rule, never a failure to decide (usher fails closed).
func (dc *decision) warnable() bool { return !dc.allowed && dc.code == httpStatusForbidden }

// deleteMode applies enforceDeleteACLsMode to a kill rule decision.
func deleteMode(c *Compiled, dc decision) decision {
	if !c.deleteWarn || !dc.warnable() {
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

func deny(code int32, format string, args ...any) decision {
	return decision{code: code, message: fmt.Sprintf(format, args...)}
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
// constructors Allowed, Patched and Denied in one place).
func (dc *decision) toResponse(uid string) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: types.UID(uid), Allowed: dc.allowed}
	if !dc.allowed {
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: dc.reason(),
			Reason:  dc.statusReason(),
			Code:    dc.code,
		}
	}
	if len(dc.patch) > 0 {
		resp.Patch = append([]byte(nil), dc.patch...)
		pt := admissionv1.PatchTypeJSONPatch
		resp.PatchType = &pt
	}
	if dc.warning != "" {
		resp.Warnings = []string{dc.warning}
	}
	return resp
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
		dst = append(dst, `,"code":`...)
		dst = strconv.AppendInt(dst, int64(dc.code), 10)
		dst = append(dst, '}')
	}
	if len(dc.patch) > 0 {
		dst = append(dst, `,"patch":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, dc.patch)
		dst = append(dst, `","patchType":"JSONPatch"`...)
	}
	if dc.warning != "" {
		dst = append(dst, `,"warnings":[`...)
		dst = jsonscan.AppendString(dst, dc.warning)
		dst = append(dst, ']')
	}
	return append(dst, "}}\n"...)
}

// errString renders a value for an error message, shortened so that a huge
// hostile value does not flood logs.
func errString(s string) string {
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}
