package settings

import (
	"cmp"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// The anchoring rules of the pattern settings. Patterns are used as Go
// regular expressions with regexp.MatchString, as YuniKorn uses them: a
// pattern that is not anchored matches every name that merely contains a
// match. The lint reads the parsed expression, not its text, so that
// "^trusted$|admins" (whose second alternative is not anchored) is caught:
// every way the pattern can match (each alternative, after the parser has
// factored and simplified it) must be anchored at the start with ^ or \A
// and at the end with $ or \z, except where the key accepts a prefix:
//
//   - systemUsers, externalUsers and externalGroups: a prefix that ends
//     with ':' is accepted ("^system:serviceaccount:kube-system:" trusts
//     every service account of one namespace, which is what it says); any
//     other open end is reported.
//   - processNamespaces: a prefix that ends with '-' is accepted
//     (YuniKorn documents "^spark-,^mpi-"); processing more namespaces
//     than meant stamps more workloads, it trusts nobody.
//   - bypassNamespaces: the whole name, both ends: a bypassed namespace is
//     not stamped or checked at all, and a prefix would also bypass every
//     namespace that whoever may create namespaces names to match it.
//
// A wildcard right after ^ or right before $ (".*", ".+") leaves that end
// open as much as a missing anchor does, and (?m) makes ^ and $ match at
// line breaks inside a name, so neither counts as an anchor.
type patternKey struct {
	noun string // user, group, namespace
	verb string // trusts, matches
	// prefixEnd lists the runes a deliberately open prefix may end with;
	// empty: both ends are required.
	prefixEnd string
}

// maxSequences bounds the expansion of a pattern into the sequences it can
// match; a pattern with more alternatives than this is reported as too
// complex to check.
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
	// last is the literal text the sequence ends with before its end
	// anchor or trailing wildcard ("" when it ends otherwise), first the
	// literal it starts with after its start anchor; literal is set when
	// the whole sequence (anchors aside) is that one literal.
	first, last string
	literal     bool
}

// patternProblem is what is wrong with one pattern, or one top-level
// alternative of it.
type patternProblem struct {
	alt      string // the alternative's text ("" when the whole pattern)
	verdict  seqVerdict
	startBad bool
	endBad   bool
	// prefix: the end is open at a separator the key does not accept.
	prefix bool
}

// analyse parses p and returns the verdict of every sequence it can match,
// or ok=false when p does not parse or has too many sequences.
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

// sequences expands re into the concatenations of atoms it can match:
// alternations are distributed, captures and optional parts unfolded, so
// that each sequence is one way to match. Repetitions stay atoms.
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

// zeroWidth reports atoms that match no text and do not anchor.
func zeroWidth(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return false
}

// wildcard reports an unbounded repetition of any character: .* .+ .{2,}
func wildcard(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus:
	case syntax.OpRepeat:
		if re.Max != -1 {
			return false
		}
	default:
		return false
	}
	sub := re.Sub[0]
	return sub.Op == syntax.OpAnyChar || sub.Op == syntax.OpAnyCharNotNL
}

// verdict classifies one sequence; matches is false for a sequence that
// can match nothing (it then constrains nothing).
func verdict(seq []*syntax.Regexp) (v seqVerdict, matches bool) {
	// Any \A in a concatenation pins the whole match to the start of the
	// name (what precedes it must match empty text there), and any \z to
	// its end; an atom that can match nothing makes the sequence void.
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
	// The atoms between the anchors (or the whole sequence), without
	// zero-width ones.
	lo, hi := 0, len(seq)
	if begin >= 0 {
		lo = begin + 1
	}
	if end >= 0 {
		hi = end
	}
	var body []*syntax.Regexp
	for _, a := range seq[lo:max(lo, hi)] {
		switch a.Op {
		case syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine:
			continue
		}
		if !zeroWidth(a) {
			body = append(body, a)
		}
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

// check reports what is wrong with the sequences of one pattern or
// alternative under key k.
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
		if (startBad || endBad) && !bad {
			pr = patternProblem{verdict: v, startBad: startBad, endBad: endBad, prefix: prefix}
			bad = true
		}
	}
	return pr, bad
}

// splitAlternatives splits p at its top-level | (outside groups, classes
// and escapes). It returns nil when p sets flags at its top level
// ("(?i)a|b"), which a split would drop from the later alternatives.
func splitAlternatives(p string) []string {
	var out []string
	depth, class, start := 0, false, 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case class:
			if c == ']' {
				class = false
			}
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

// lintPattern returns the warning for pattern p of key k, with a fix when
// one rewrite keeps what the pattern says and anchors it ("" when none
// is right), or ok=false when p is fine.
func (k patternKey) lintPattern(p string) (msg, fix string, warn bool) {
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
	fixable := alts != nil
	if len(alts) > 1 {
		// Find the first bad alternative to name it, and fix each.
		pr.alt = ""
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
			if pr.alt == "" {
				pr = apr
				pr.alt = a
			}
			f, ok := k.fixAlternative(a, apr)
			if !ok {
				fixable = false
			}
			alts[i] = f
		}
		if pr.alt == "" {
			// Each alternative alone is fine but the whole is not (a
			// split the parser sees differently): no rewrite.
			fixable = false
		}
	} else if fixable {
		f, ok := k.fixAlternative(p, pr)
		fixable = ok
		alts = []string{f}
	}
	if fixable {
		fix = strings.Join(alts, "|")
		if !k.fixIsRight(p, fix) {
			fix = ""
		}
	}
	return k.describe(p, pr, fix), fix, true
}

// fixAlternative anchors one alternative: ^ before it, $ after it. It
// refuses when the alternative's open end is deliberate-looking (a prefix,
// a wildcard, (?m)), where no rewrite keeps what it means.
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

// fixIsRight checks a rewrite: it compiles, passes the lint, and still
// matches every literal name the original spelt out.
func (k patternKey) fixIsRight(orig, fix string) bool {
	re, err := regexp.Compile(fix)
	if err != nil {
		return false
	}
	vs, ok := analyse(fix)
	if !ok {
		return false
	}
	if _, bad := k.check(vs); bad {
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

// matchesEverything reports a pattern that matches any name: one that
// matches the empty name and names of every kind of character.
func matchesEverything(re *regexp.Regexp) bool {
	for _, probe := range []string{"", "a", "Z9", "system:serviceaccount:ns:sa", "x\ny", "\x00-._@/ "} {
		if !re.MatchString(probe) {
			return false
		}
	}
	return true
}

// Warning is a configuration problem that does not stop usher from
// running but probably does not do what was meant.
type Warning struct {
	// Setting names the setting by its YAML path
	// (admissionController.accessControl.externalUsers), also its
	// ConfigMap key; Variable is the ADMISSION_CONTROLLER_* variable that
	// gave its value, if one did (Resolve).
	Setting, Variable string
	// Message says what is wrong and how to fix it.
	Message string
	// Pattern is the pattern the warning is about, "" for a warning about
	// the whole setting; Index is its position in the setting's list.
	Pattern string
	Index   int
	// Fix is the pattern to write instead of Pattern, when one rewrite
	// keeps what the pattern says and anchors it; "" otherwise (the
	// message then says what to do).
	Fix string
}

// String renders the warning as "setting: message", naming the variable
// when one gave the setting.
func (w Warning) String() string { return cmp.Or(w.Variable, w.Setting) + ": " + w.Message }

// Warnings lints c (after defaults): patterns that are not anchored and so
// match more names than they appear to (see patternKey for the rule of
// each setting), patterns that match every name, and settings that weaken
// identity checks. Settings are named by their YAML path. Invalid settings
// are errors from Compile, not warnings.
func (c Config) Warnings() []Warning {
	c = c.Defaulted()
	var ws []Warning
	add := func(setting, format string, args ...any) {
		ws = append(ws, Warning{Setting: setting, Message: fmt.Sprintf(format, args...)})
	}
	for _, k := range keys {
		if k.lint != nil {
			ws = append(ws, k.lint.lint(k.setting, *k.field(&c).(*Patterns))...)
		}
	}
	if c.AccessControl.BypassAuth {
		add("admissionController.accessControl.bypassAuth", bypassAuthWarning)
	}
	if !*c.AccessControl.TrustControllers {
		add("admissionController.accessControl.trustControllers", trustControllersWarning)
	}
	if c.EnforceDeleteACLs && !deletesByControllersTrusted(c) {
		add("admissionController.enforceDeleteACLs",
			"is true but neither %q nor %q is a trusted controller (trustControllers and systemUsers): "+
				"garbage collection, Job and ReplicaSet cleanup and namespace deletion will be denied",
			garbageCollectorUser, controllerManagerUser)
	}
	return ws
}

const (
	bypassAuthWarning       = "is true: any submitter may set yunikorn.apache.org/user.info to any identity; use only in a trusted cluster"
	trustControllersWarning = "is false: pods and ReplicaSets that controllers create from stamped workloads will be denied"
)

// lint checks each pattern of a setting named setting.
func (k patternKey) lint(setting string, ps Patterns) []Warning {
	var ws []Warning
	for i, p := range ps {
		if strings.Count(p, "{") != strings.Count(p, "}") {
			// The anchors of a piece of a split pattern mean nothing.
			ws = append(ws, Warning{Setting: setting, Pattern: p, Index: i, Message: fmt.Sprintf(
				"pattern %q has unbalanced braces: was a repetition such as {1,3} split at its comma? "+
					"Write patterns containing commas in the YAML list form", p)})
			continue
		}
		if msg, fix, bad := k.lintPattern(p); bad {
			ws = append(ws, Warning{Setting: setting, Pattern: p, Index: i, Message: msg, Fix: fix})
		}
	}
	return ws
}

// The identities the cluster's garbage collector deletes with: its own
// service account, or the shared controller-manager user.
const (
	garbageCollectorUser  = "system:serviceaccount:kube-system:generic-garbage-collector"
	controllerManagerUser = "system:kube-controller-manager"
)

// deletesByControllersTrusted reports whether c (defaulted) trusts the
// garbage collector, under either identity, to delete.
func deletesByControllersTrusted(c Config) bool {
	if !*c.AccessControl.TrustControllers {
		return false
	}
	res, err := compilePatterns("", c.AccessControl.SystemUsers)
	if err != nil {
		return true // Compile reports it
	}
	m := Matcher(res)
	return m.Match(garbageCollectorUser) || m.Match(controllerManagerUser)
}
