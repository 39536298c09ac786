package settings

import (
	"cmp"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// patternKey is the anchoring rule of a pattern setting, read from the
// parsed expression ("^trusted$|admins" is caught): every way to match must
// be anchored (^ or \A, $ or \z), except a prefix ending with ':' for users
// and groups or '-' for processNamespaces ("^spark-"); bypassNamespaces needs
// whole names (a prefix bypasses any namespace named to match it). A wildcard
// next to an anchor, or (?m), leaves that end open.
type patternKey struct {
	noun string // user, group, namespace
	verb string // trusts, matches
	// prefixEnd lists the runes a deliberately open prefix may end with; empty: both ends are required.
	prefixEnd string
}

// maxSequences bounds the sequences a pattern expands into; more is reported as too complex to check.
const maxSequences = 256

// anchorState says how one end of a sequence is bounded.
type anchorState uint8

const (
	endNone     anchorState = iota // no anchor
	endAnchored                    // ^ or \A (start), $ or \z (end)
	endOpen                        // an anchor, then a wildcard: ^.*x, x.*$
	endLine                        // (?m) ^ or $: matches at line breaks
)

// seqVerdict is the analysis of one way a pattern can match.
type seqVerdict struct {
	start, end anchorState
	// first and last are the literals inside the anchors ("" for none);
	// literal: the sequence is that one literal.
	first, last string
	literal     bool
}

// patternProblem is what is wrong with a pattern or an alternative.
type patternProblem struct {
	alt      string // "" for the whole pattern
	verdict  seqVerdict
	startBad bool
	endBad   bool
	prefix   bool // the end is open at a separator the key does not accept
}

// analyse returns the verdict of every sequence p can match; false when
// p does not parse or has too many.
func analyse(p string) ([]seqVerdict, bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, false
	}
	seqs, ok := sequences(re.Simplify(), maxSequences)
	if !ok {
		return nil, false
	}
	out := make([]seqVerdict, 0, len(seqs))
	for _, s := range seqs {
		if v, matches := verdict(s); matches {
			out = append(out, v)
		}
	}
	return out, true
}

// sequences expands re into the concatenations of atoms it can match,
// one per way to match; repetitions stay atoms.
func sequences(re *syntax.Regexp, limit int) ([][]*syntax.Regexp, bool) {
	switch re.Op {
	case syntax.OpCapture:
		return sequences(re.Sub[0], limit)
	case syntax.OpAlternate:
		var out [][]*syntax.Regexp
		for _, sub := range re.Sub {
			s, ok := sequences(sub, limit)
			if !ok || len(out)+len(s) > limit {
				return nil, false
			}
			out = append(out, s...)
		}
		return out, true
	case syntax.OpQuest:
		s, ok := sequences(re.Sub[0], limit-1)
		if !ok {
			return nil, false
		}
		return append(s, nil), true
	case syntax.OpConcat:
		out := [][]*syntax.Regexp{nil}
		for _, sub := range re.Sub {
			s, ok := sequences(sub, limit)
			if !ok || len(out)*len(s) > limit {
				return nil, false
			}
			next := make([][]*syntax.Regexp, 0, len(out)*len(s))
			for _, a := range out {
				for _, b := range s {
					next = append(next, append(append([]*syntax.Regexp(nil), a...), b...))
				}
			}
			out = next
		}
		return out, true
	case syntax.OpEmptyMatch:
		return [][]*syntax.Regexp{nil}, true
	}
	return [][]*syntax.Regexp{{re}}, true
}

// wildcard reports an unbounded repetition of any character: .* .+ .{2,}
func wildcard(re *syntax.Regexp) bool {
	unbounded := re.Op == syntax.OpStar || re.Op == syntax.OpPlus || re.Op == syntax.OpRepeat && re.Max == -1
	return unbounded && (re.Sub[0].Op == syntax.OpAnyChar || re.Sub[0].Op == syntax.OpAnyCharNotNL)
}

// verdict classifies one sequence; matches is false when it can match nothing.
func verdict(seq []*syntax.Regexp) (v seqVerdict, matches bool) {
	// Any \A in a concatenation pins the match to the start, any \z to the end.
	begin, end := -1, -1
	for i, a := range seq {
		switch a.Op {
		case syntax.OpNoMatch:
			return v, false
		case syntax.OpBeginText:
			if begin < 0 {
				begin = i
			}
			v.start = endAnchored
		case syntax.OpEndText:
			end = i
			v.end = endAnchored
		case syntax.OpBeginLine:
			if v.start == endNone {
				v.start = endLine
			}
		case syntax.OpEndLine:
			if v.end == endNone {
				v.end = endLine
			}
		}
	}
	lo, hi := begin+1, len(seq) // from after the first \A (0 without one)
	if end >= 0 {
		hi = end
	}
	var body []*syntax.Regexp
	for _, a := range seq[lo:max(lo, hi)] {
		switch a.Op {
		case syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine,
			syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			continue // anchors and atoms that match no text
		}
		body = append(body, a)
	}
	if len(body) > 0 && wildcard(body[0]) {
		if v.start == endAnchored {
			v.start = endOpen
		}
		body = body[1:]
	}
	if len(body) > 0 && wildcard(body[len(body)-1]) {
		if v.end == endAnchored || v.end == endNone {
			v.end = endOpen
		}
		body = body[:len(body)-1]
	}
	if len(body) > 0 && body[0].Op == syntax.OpLiteral && body[0].Flags&syntax.FoldCase == 0 {
		v.first = string(body[0].Rune)
	}
	if n := len(body); n > 0 && body[n-1].Op == syntax.OpLiteral && body[n-1].Flags&syntax.FoldCase == 0 {
		v.last = string(body[n-1].Rune)
		v.literal = n == 1
	}
	return v, true
}

// check reports the first bad sequence of a pattern or alternative.
func (k patternKey) check(vs []seqVerdict) (pr patternProblem, bad bool) {
	for _, v := range vs {
		startBad := v.start != endAnchored
		endBad := v.end != endAnchored
		prefix := false
		if endBad && v.end != endLine && v.last != "" {
			r := []rune(v.last)
			sep := strings.ContainsRune(":-./_@", r[len(r)-1])
			if sep && strings.ContainsRune(k.prefixEnd, r[len(r)-1]) {
				endBad = false // a deliberate prefix the key accepts
			} else if sep {
				prefix = true
			}
		}
		if startBad || endBad {
			return patternProblem{verdict: v, startBad: startBad, endBad: endBad, prefix: prefix}, true
		}
	}
	return patternProblem{}, false
}

// splitAlternatives splits p at its top-level |; nil when p sets flags
// at its top level ("(?i)a|b"), which a split would drop.
func splitAlternatives(p string) []string {
	var out []string
	depth, class, start := 0, false, 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case class:
			class = c != ']'
		case c == '[':
			class = true
			if strings.HasPrefix(p[i+1:], "]") || strings.HasPrefix(p[i+1:], "^]") {
				i += strings.IndexByte(p[i+1:], ']') + 1
			}
		case c == '(':
			if depth == 0 && strings.HasPrefix(p[i:], "(?") {
				j := i + 2
				for j < len(p) && (p[j] >= 'a' && p[j] <= 'z' || p[j] == '-') {
					j++
				}
				if j < len(p) && p[j] == ')' {
					return nil
				}
			}
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

// lintPattern returns the warning for p, with a fix when one rewrite
// anchors it and keeps what it says; warn is false when p is fine.
func (k patternKey) lintPattern(p string) (msg, fix string, warn bool) {
	if strings.Count(p, "{") != strings.Count(p, "}") {
		return fmt.Sprintf("pattern %q has unbalanced braces: was a repetition such as {1,3} split at its comma? "+
			"Write patterns containing commas in the YAML list form", p), "", true
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return "", "", false // Compile reports it
	}
	if matchesEverything(re) {
		return fmt.Sprintf("pattern %q matches every %s", p, k.noun), "", true
	}
	vs, ok := analyse(p)
	if !ok {
		return fmt.Sprintf("pattern %q has too many alternatives to check that each is anchored; anchor every alternative with ^ and $", p), "", true
	}
	pr, bad := k.check(vs)
	if !bad {
		return "", "", false
	}
	alts := splitAlternatives(p)
	fixable, found := alts != nil, false
	for i, a := range alts {
		avs, ok := analyse(a)
		if !ok {
			fixable = false
			continue
		}
		apr, abad := k.check(avs)
		if !abad {
			continue
		}
		if !found {
			pr, found = apr, true
			if len(alts) > 1 {
				pr.alt = a // name the first bad alternative
			}
		}
		f, ok := k.fixAlternative(a, apr)
		fixable = fixable && ok
		alts[i] = f
	}
	// Not found: the parser splits it differently; no rewrite.
	if f := strings.Join(alts, "|"); fixable && found && k.fixIsRight(p, f) {
		fix = f
	}
	return k.describe(p, pr, fix), fix, true
}

// fixAlternative anchors one alternative, unless its open end looks
// deliberate (a prefix, a wildcard, (?m)).
func (k patternKey) fixAlternative(a string, pr patternProblem) (string, bool) {
	v := pr.verdict
	if v.start == endOpen || v.start == endLine || v.end == endOpen || v.end == endLine || pr.prefix {
		return "", false
	}
	if pr.startBad {
		a = "^" + a
	}
	if pr.endBad {
		a += "$"
	}
	return a, true
}

// fixIsRight checks a rewrite compiles, passes the lint and matches every literal name of the original.
func (k patternKey) fixIsRight(orig, fix string) bool {
	re, err := regexp.Compile(fix)
	vs, ok := analyse(fix)
	if _, bad := k.check(vs); err != nil || !ok || bad {
		return false
	}
	ovs, _ := analyse(orig)
	for _, v := range ovs {
		if v.literal && !re.MatchString(v.last) {
			return false
		}
	}
	return true
}

// describe renders the warning for pattern p.
func (k patternKey) describe(p string, pr patternProblem, fix string) string {
	var b strings.Builder
	if pr.alt != "" {
		fmt.Fprintf(&b, "alternative %q of pattern %q", pr.alt, p)
	} else {
		fmt.Fprintf(&b, "pattern %q", p)
	}
	v := pr.verdict
	name := v.first
	if v.literal {
		name = v.last
	}
	switch {
	case v.start == endLine || v.end == endLine:
		b.WriteString(" uses (?m): ^ and $ then match at line breaks inside a name, not only at its ends; remove (?m) and anchor it with ^ and $ (or \\A and \\z)")
	case v.start == endOpen:
		fmt.Fprintf(&b, " starts with a wildcard after ^: it %s every %s that merely ends with a match; remove the wildcard", k.verb, k.noun)
	case v.end == endOpen && !pr.startBad:
		fmt.Fprintf(&b, " ends with a wildcard: it %s every %s that merely starts with a match; remove the wildcard and end it with $", k.verb, k.noun)
	case pr.prefix && !pr.startBad:
		fmt.Fprintf(&b, " is a prefix: it %s every %s starting with %q (%q, say)", k.verb, k.noun, v.last, v.last+"x")
		if k.prefixEnd == "" {
			fmt.Fprintf(&b, "; this setting needs whole names: list each %s as \"^name$\"", k.noun)
		} else {
			fmt.Fprintf(&b, "; a prefix here must end with %q, a whole name with $", k.prefixEnd)
		}
	case pr.startBad && pr.endBad && v.literal && k.noun == "user" && !strings.Contains(name, ":"):
		fmt.Fprintf(&b, " is not anchored: it also %s %q (the service account %s of every namespace)",
			k.verb, "system:serviceaccount:any-namespace:"+name, name)
		if fix != "" {
			fmt.Fprintf(&b, "; write %q for the user of that name, or %q for one service account",
				fix, "^system:serviceaccount:<namespace>:"+name+"$")
			return b.String()
		}
	case pr.startBad && pr.endBad && v.literal:
		fmt.Fprintf(&b, " is not anchored: it also %s %q", k.verb, "not"+name)
	case pr.startBad && pr.endBad:
		fmt.Fprintf(&b, " is not anchored: it also %s %ss that merely contain a match", k.verb, k.noun)
	case pr.startBad && v.literal:
		fmt.Fprintf(&b, " is not anchored at the start: it also %s %q", k.verb, "not"+name)
	case pr.startBad:
		fmt.Fprintf(&b, " is not anchored at the start: it also %s %ss that merely contain a match", k.verb, k.noun)
	case v.literal:
		fmt.Fprintf(&b, " is not anchored at the end: it also %s %q", k.verb, name+"x")
	default:
		fmt.Fprintf(&b, " is not anchored at the end: it also %s %ss that merely start with a match", k.verb, k.noun)
	}
	if fix != "" {
		fmt.Fprintf(&b, "; write %q", fix)
		if k.noun == "namespace" && k.prefixEnd != "" && pr.endBad && !pr.prefix && v.end == endNone {
			fmt.Fprintf(&b, " (or end it with %q for a prefix)", k.prefixEnd)
		}
	}
	return b.String()
}

// matchesEverything reports a pattern matching names of every kind.
func matchesEverything(re *regexp.Regexp) bool {
	for _, probe := range []string{"", "a", "Z9", "system:serviceaccount:ns:sa", "x\ny", "\x00-._@/ "} {
		if !re.MatchString(probe) {
			return false
		}
	}
	return true
}

// Warning is a setting that is legal but probably not what was meant.
type Warning struct {
	// Setting is the YAML path; Variable the variable that gave the value, if one did (Resolve).
	Setting, Variable string
	Message           string
	// Pattern is the pattern at Index of the setting's list ("" for the
	// whole setting); Fix its anchored rewrite, when one is right.
	Pattern string
	Index   int
	Fix     string
}

// String renders "setting: message", naming the variable if one set it.
func (w Warning) String() string { return cmp.Or(w.Variable, w.Setting) + ": " + w.Message }

// Warnings lints c (after defaults): patterns not anchored or matching
// every name, and settings that weaken identity checks.
func (c Config) Warnings() []Warning {
	c = c.Defaulted()
	var ws []Warning
	add := func(setting, format string, args ...any) {
		ws = append(ws, Warning{Setting: setting, Message: fmt.Sprintf(format, args...)})
	}
	for _, k := range keys {
		if k.lint == nil {
			continue
		}
		for i, p := range *k.field(&c).(*Patterns) {
			if msg, fix, bad := k.lint.lintPattern(p); bad {
				ws = append(ws, Warning{Setting: k.setting, Pattern: p, Index: i, Message: msg, Fix: fix})
			}
		}
	}
	// externalUsers patterns that match an operator, which propagators would trust with less.
	for i, p := range c.AccessControl.ExternalUsers {
		re, err := regexp.Compile(p)
		if err != nil || !strings.HasPrefix(p, "^") {
			continue // Compile, or the anchoring lint, reports it
		}
		if j := slices.IndexFunc(knownOperators[:], re.MatchString); j >= 0 {
			ws = append(ws, Warning{Setting: "admissionController.accessControl.externalUsers", Pattern: p, Index: i, Message: fmt.Sprintf(
				"pattern %q matches the operator %s: externalUsers lets it write any identity at all; under propagators it may only "+
					"copy the identity of the object each pod is made for (docs/operators.md)", p, knownOperators[j])})
		}
	}
	if c.AccessControl.BypassAuth {
		add("admissionController.accessControl.bypassAuth",
			"is true: any submitter may set yunikorn.apache.org/user.info to any identity; use only in a trusted cluster")
	}
	if !*c.AccessControl.TrustControllers {
		add("admissionController.accessControl.trustControllers",
			"is false: pods and ReplicaSets that controllers create from stamped workloads will be denied")
	}
	m, err := compilePatterns("", c.AccessControl.SystemUsers) // an error: Compile reports it
	gcTrusted := *c.AccessControl.TrustControllers && (err != nil || m.Match(garbageCollectorUser) || m.Match(controllerManagerUser))
	if c.EnforceDeleteACLs && !gcTrusted {
		add("admissionController.enforceDeleteACLs",
			"is true but neither %q nor %q is a trusted controller (trustControllers and systemUsers): "+
				"garbage collection, Job and ReplicaSet cleanup and namespace deletion will be denied",
			garbageCollectorUser, controllerManagerUser)
	}
	return ws
}

// knownOperators are the service accounts operators create pods with in
// their projects' default installs (examples/operators).
var knownOperators = [...]string{
	"system:serviceaccount:spark-operator:spark-operator-controller", "system:serviceaccount:default:spark-operator",
	"system:serviceaccount:default:kuberay-operator", "system:serviceaccount:kubeflow:training-operator",
	"system:serviceaccount:argo:argo", "system:serviceaccount:yunikorn:yunikorn-admin",
}

// The identities the garbage collector deletes with.
const (
	garbageCollectorUser  = "system:serviceaccount:kube-system:generic-garbage-collector"
	controllerManagerUser = "system:kube-controller-manager"
)
