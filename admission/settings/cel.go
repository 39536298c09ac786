package settings

import (
	"strconv"
	"strings"
)

// NamespaceConditionName names the matchCondition of the namespace settings.
const NamespaceConditionName = "usher-namespaces"

// NamespaceCondition returns the CEL matchCondition true exactly for the
// namespaces usher processes, so the API server leaves the others alone
// even while usher is away (RE2, unanchored like regexp.MatchString).
// usher checks every review too: a stale condition only costs calls.
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

// celAnyMatch is true when request.namespace matches one of ps.
func celAnyMatch(ps Patterns) string {
	quoted := make([]string, len(ps))
	for i, p := range ps {
		// CEL's string escapes are a superset of strconv.Quote's.
		quoted[i] = strconv.Quote(p)
	}
	return "[" + strings.Join(quoted, ", ") + "].exists(p, request.namespace.matches(p))"
}
