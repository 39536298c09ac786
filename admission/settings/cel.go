package settings

import (
	"strconv"
	"strings"
)

// NamespaceConditionName is the name of the matchCondition that carries
// the namespace settings into a webhook registration.
const NamespaceConditionName = "usher-namespaces"

// NamespaceCondition returns the CEL expression of a webhook
// matchCondition that is true exactly for the namespaces usher does not
// bypass: not matching bypassNamespaces and, when processNamespaces is not
// empty, matching one of them. Registered on usher's webhooks, it makes
// the API server itself leave those namespaces alone, so that a request
// there neither waits for usher nor fails while usher is away. CEL's
// matches() is RE2 with the semantics of regexp.MatchString, the same
// unanchored matching the settings use. Defaults apply (unset
// bypassNamespaces is ^kube-system$). usher checks the settings again on
// every review, so a registration without the condition, or with a stale
// one, still gets the same decisions; it only costs the calls.
func NamespaceCondition(c Config) string {
	d := c.Defaulted()
	var parts []string
	if len(d.BypassNamespaces) > 0 {
		parts = append(parts, "!"+celAnyMatch(d.BypassNamespaces))
	}
	if len(d.ProcessNamespaces) > 0 {
		parts = append(parts, celAnyMatch(d.ProcessNamespaces))
	}
	if len(parts) == 0 {
		return "true"
	}
	return strings.Join(parts, " && ")
}

// celAnyMatch is a CEL expression true when request.namespace matches one
// of ps.
func celAnyMatch(ps Patterns) string {
	quoted := make([]string, len(ps))
	for i, p := range ps {
		quoted[i] = celString(p)
	}
	return "[" + strings.Join(quoted, ", ") + "].exists(p, request.namespace.matches(p))"
}

// celString quotes s as a CEL string literal. CEL's escapes (\\, \", \n,
// \t, \xHH, \uHHHH, \UHHHHHHHH, \a \b \f \r \v) are a superset of those
// strconv.Quote writes.
func celString(s string) string { return strconv.Quote(s) }
