package settings

import (
	"cmp"
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
	const anyMatch = ".exists(p, request.namespace.matches(p))"
	var parts []string
	if len(d.BypassNamespaces) > 0 {
		parts = append(parts, "!"+celList(d.BypassNamespaces)+anyMatch)
	}
	if len(d.ProcessNamespaces) > 0 {
		parts = append(parts, celList(d.ProcessNamespaces)+anyMatch)
	}
	return cmp.Or(strings.Join(parts, " && "), "true")
}

// DelegationCondition (usher-untrusted-setters) is false for system:masters
// and c's trustedSetters, whose writes the API server admits without
// calling usher, so that an usher that cannot answer never locks them out.
func DelegationCondition(c Config) string {
	groups := append([]string{"system:masters"}, c.TrustedSetters.Groups...)
	expr := "!((has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in " + celList(groups) + "))"
	if len(c.TrustedSetters.Users) > 0 {
		expr += " || request.userInfo.username in " + celList(c.TrustedSetters.Users)
	}
	return expr + ")"
}

// celList is ss as a CEL list of strings.
func celList(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = strconv.Quote(s) // CEL's string escapes are a superset of strconv.Quote's
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
