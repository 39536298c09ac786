package settings

import (
	"strconv"
	"strings"
)

// NamespaceConditionName is the name of the matchCondition that carries
// the namespace settings into a webhook registration.
const NamespaceConditionName = "usher-namespaces"

// NamespaceCondition returns the CEL expression of a webhook
// matchCondition true exactly for the namespaces usher processes, so the
// API server leaves the others alone even while usher is away. CEL's
// matches() is RE2, unanchored like regexp.MatchString. usher checks the
// settings on every review too, so a stale condition only costs calls.
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
		// CEL's string escapes are a superset of strconv.Quote's.
		quoted[i] = strconv.Quote(p)
	}
	return "[" + strings.Join(quoted, ", ") + "].exists(p, request.namespace.matches(p))"
}
