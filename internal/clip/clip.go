// Package clip cuts strings and lists that a caller chose before they are
// written to logs and audit records, so that no request can make one
// record (or the memory behind it) arbitrarily large. What is cut is
// marked visibly: "…[cut 1234 bytes]" at the end of a string and a last
// element "…[cut 56 more]" in a list.
//
// Values within the bounds are returned as they are, without allocating.
package clip

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds used for audit records and logs.
const (
	// Name bounds one identifier: a kind, namespace, name, user, group,
	// queue, UID or operation. Kubernetes names are at most 253 bytes.
	Name = 256
	// Text bounds a sentence: a reason or an error text.
	Text = 1024
	// Count bounds the number of elements kept of a list (groups).
	Count = 64
)

// String returns s when it is at most max bytes long, else its first
// bytes (cut at a UTF-8 boundary) followed by "…[cut N bytes]".
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := cut(s, max)
	return s[:n] + mark(len(s)-n)
}

// Quote is strconv.Quote of String(s, max), with the mark outside the
// quotes: for a value in a message.
func Quote(s string, max int) string {
	if len(s) <= max {
		return strconv.Quote(s)
	}
	n := cut(s, max)
	return strconv.Quote(s[:n]) + mark(len(s)-n)
}

// cut is the length of s's longest prefix of at most max bytes that
// ends at a UTF-8 boundary.
func cut(s string, max int) int {
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return max
}

func mark(n int) string { return "…[cut " + strconv.Itoa(n) + " bytes]" }

// Strings returns ss when it has at most count elements of at most max
// bytes each; else a copy with each element cut by String and, past count
// elements, a last element "…[cut N more]".
func Strings(ss []string, max, count int) []string {
	if len(ss) <= count && !slices.ContainsFunc(ss, func(s string) bool { return len(s) > max }) {
		return ss
	}
	n := min(len(ss), count)
	out := make([]string, 0, n+1)
	for _, s := range ss[:n] {
		out = append(out, String(s, max))
	}
	if len(ss) > n {
		out = append(out, "…[cut "+strconv.Itoa(len(ss)-n)+" more]")
	}
	return out
}

// Detach copies each string *p and each element of list: a request's
// names are often substrings of its whole body, which whatever is kept past
// the request (a cache, a queued audit record) must not keep alive. The
// strings are set in place; the list's copy is returned (nil for a nil list).
func Detach(list []string, ps ...*string) []string {
	for _, p := range ps {
		*p = strings.Clone(*p)
	}
	out := slices.Clone(list)
	for i, s := range out {
		out[i] = strings.Clone(s)
	}
	return out
}
