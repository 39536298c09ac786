// Package acl parses, prints and checks access control lists of users and
// groups, as YuniKorn, YARN and Spark write them.
//
// An ACL is written
//
//	ACL ::= "*" | userlist [ " " grouplist ]
//
// with comma separated lists. Rules this package enforces:
//   - "*" allows everyone; "" and " " allow nobody; a leading space means the
//     ACL has groups only. There are no deny entries.
//   - A check tries the wildcard, then the user, then the groups; the first
//     match allows.
//   - Names are case sensitive and may be any Kubernetes identity. A name
//     that cannot be valid (whitespace, control characters, "*") is an
//     error carrying its position; entries that are legal but useless
//     (duplicates, empty entries, "*" mixed with names) are warnings.
//   - Dialects differ only in malformed input: YuniKorn rejects more than one
//     separating space, YARN ignores what follows the second space (with a
//     warning), Spark takes users and groups as two separate lists.
//
// An ACL is immutable once parsed and safe for concurrent use. Checks take a
// Subject, a user whose groups were hashed once, so that a check does not
// allocate however many groups the user has.
package acl

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Dialect selects how malformed ACL text is treated.
type Dialect int

const (
	YuniKorn Dialect = iota // the default: more than one space is an error
	YARN                    // what follows the second space is ignored, with a warning
	Spark                   // users and groups in two lists: ParseSpark
)

var dialectNames = [...]string{YuniKorn: "yunikorn", YARN: "yarn", Spark: "spark"}

func (d Dialect) String() string {
	if d >= 0 && int(d) < len(dialectNames) {
		return dialectNames[d]
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// Wildcard is the ACL, and the list, that allows everyone.
const Wildcard = "*"

// MaxNameLen is the longest user or group name accepted, in bytes.
const MaxNameLen = 1024

// ACL is a parsed access control list. The zero value allows nobody, like
// an ACL that is not set.
type ACL struct {
	all    bool
	users  []string // deduplicated, in order of first occurrence
	groups []string
	set    *lazySet // nil for the zero ACL
}

// lazySet is an ACL's compiled Set, built on its first check: most ACLs of
// a large configuration are never checked.
type lazySet struct {
	once sync.Once
	s    *Set
}

var noSet Set

// compiled returns the ACL's Set, building it on the first call.
func (a *ACL) compiled() *Set {
	if a.set == nil {
		return &noSet
	}
	a.set.once.Do(func() {
		s := compile(a)
		a.set.s = &s
	})
	return a.set.s
}

// All reports whether the ACL is the wildcard.
func (a *ACL) All() bool { return a.all }

// Users and Groups return the entries in order; do not modify them.
func (a *ACL) Users() []string  { return a.users }
func (a *ACL) Groups() []string { return a.groups }

// Empty reports whether the ACL allows nobody.
func (a *ACL) Empty() bool { return !a.all && len(a.users) == 0 && len(a.groups) == 0 }

// String returns the canonical form ("*", "u1,u2 g1,g2", " g1", " "), which
// Parse reads back to an equal ACL.
func (a ACL) String() string {
	switch {
	case a.all:
		return Wildcard
	case len(a.groups) == 0 && len(a.users) == 0:
		return " "
	case len(a.groups) == 0:
		return strings.Join(a.users, ",")
	default:
		return strings.Join(a.users, ",") + " " + strings.Join(a.groups, ",")
	}
}

// Allows reports whether the ACL allows s. It does not allocate.
func (a *ACL) Allows(s *Subject) bool { return a.compiled().Allows(s) }

// Match reports which entry allows s, in check order (wildcard, user, the
// first group of the ACL); Kind is None when nothing matched.
func (a *ACL) Match(s *Subject) Match { return a.compiled().Match(s) }

// New builds an ACL from lists already split; the first invalid name is a
// *SyntaxError whose Offset is the entry's index. A list that is exactly
// ["*"] makes the wildcard.
func New(users, groups []string) (ACL, error) {
	var b builder
	for _, l := range []struct {
		name  string
		items []string
		into  *[]string
	}{{"users", users, &b.users}, {"groups", groups, &b.groups}} {
		if len(l.items) == 1 && l.items[0] == Wildcard {
			b.all = true
			continue
		}
		for i, n := range l.items {
			if err := ValidName(n); err != nil {
				return ACL{}, &SyntaxError{List: l.name, Offset: i, Msg: err.Error()}
			}
		}
		if len(l.items) > 0 {
			*l.into, _ = dedupe(slices.Clone(l.items))
		}
	}
	return b.build(), nil
}

// Parse reads an ACL written in dialect d (YuniKorn or YARN; for Spark use
// ParseSpark). An error is a *SyntaxError with the byte offset of the
// mistake. Warnings describe entries that are legal but have no effect.
func Parse(text string, d Dialect) (ACL, []Warning, error) {
	switch d {
	case YuniKorn, YARN:
	case Spark:
		return ACL{}, nil, fmt.Errorf("acl: the spark dialect has separate user and group lists; use ParseSpark")
	default:
		return ACL{}, nil, fmt.Errorf("acl: unknown dialect %v", d)
	}
	p := parser{text: text}
	if text == Wildcard || (d == YARN && strings.TrimSpace(text) == Wildcard) {
		p.b.all = true
		return p.b.build(), nil, nil
	}
	users, groups, groupsAt := text, "", -1
	if i := strings.IndexByte(text, ' '); i >= 0 {
		users, groups, groupsAt = text[:i], text[i+1:], i+1
		if j := strings.IndexByte(groups, ' '); j >= 0 {
			at := groupsAt + j
			if d == YuniKorn {
				return ACL{}, nil, &SyntaxError{Input: text, Offset: at,
					Msg: `more than one space: an ACL is "users groups" with exactly one space between the lists (a leading space means groups only)`}
			}
			p.warn(Ignored, at, fmt.Sprintf("everything after the second space is ignored, as YARN does: %q", text[at:]))
			groups = groups[:j]
		}
	}
	if err := p.list(users, 0, false, false); err != nil {
		return ACL{}, nil, err
	}
	if groupsAt >= 0 {
		if err := p.list(groups, groupsAt, true, false); err != nil {
			return ACL{}, nil, err
		}
	}
	return p.b.build(), p.warnings, nil
}

// MustParse is Parse in the YuniKorn dialect that panics on error.
func MustParse(text string) ACL {
	a, _, err := Parse(text, YuniKorn)
	if err != nil {
		panic(err)
	}
	return a
}

// ParseSpark reads Spark's two properties, a users list (spark.ui.view.acls
// and the like) and a groups list (their .groups twins). Entries are
// trimmed as Spark does; "*" in either list allows everyone.
func ParseSpark(users, groups string) (ACL, []Warning, error) {
	p := parser{text: users}
	for _, l := range []struct {
		name, text string
		groups     bool
	}{{"users", users, false}, {"groups", groups, true}} {
		p.text, p.listName = l.text, l.name
		if strings.TrimSpace(l.text) == Wildcard {
			p.b.all = true
			continue
		}
		if err := p.list(l.text, 0, l.groups, true); err != nil {
			return ACL{}, nil, err
		}
	}
	return p.b.build(), p.warnings, nil
}

// ValidName reports why s cannot be a user or group name, or nil. Names may
// hold any printable character except whitespace, "," and "*".
func ValidName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty name")
	case len(s) > MaxNameLen:
		return fmt.Errorf("name longer than %d bytes", MaxNameLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("name %q is not valid UTF-8", s)
	}
	for _, r := range s {
		switch {
		case r == ',':
			return fmt.Errorf("name %q contains a comma", s)
		case r == '*':
			return fmt.Errorf("name %q contains %q: a wildcard is only valid as a whole list", s, r)
		case unicode.IsSpace(r):
			return fmt.Errorf("name %q contains whitespace %U", s, r)
		case unicode.IsControl(r) || !unicode.IsPrint(r):
			return fmt.Errorf("name %q contains the control character %U", s, r)
		}
	}
	return nil
}

// SyntaxError is an ACL that cannot be parsed. Offset is the byte offset of
// the mistake in Input (or the entry index, for New).
type SyntaxError struct {
	Input  string
	List   string // "users" or "groups" where the dialect has separate lists
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.List != "" {
		return fmt.Sprintf("acl %s list: offset %d: %s", e.List, e.Offset, e.Msg)
	}
	return fmt.Sprintf("acl %q: offset %d: %s", e.Input, e.Offset, e.Msg)
}

// Warning is an entry that is legal but has no effect, or input that a
// dialect ignores.
type Warning struct {
	Kind   WarningKind
	List   string // set by ParseSpark
	Offset int    // byte offset in the text (or list) parsed
	Msg    string
}

// WarningKind says what a Warning is about.
type WarningKind int

const (
	Ignored     WarningKind = iota // YARN: the text after the second space
	Empty                          // an empty entry
	NotWildcard                    // "*" among names
	Duplicate                      // a name listed again
)

func (w Warning) String() string {
	if w.List != "" {
		return fmt.Sprintf("%s list: offset %d: %s", w.List, w.Offset, w.Msg)
	}
	return fmt.Sprintf("offset %d: %s", w.Offset, w.Msg)
}

type parser struct {
	text     string
	listName string
	b        builder
	warnings []Warning
}

func (p *parser) warn(kind WarningKind, at int, msg string) {
	p.warnings = append(p.warnings, Warning{Kind: kind, List: p.listName, Offset: at, Msg: msg})
}

// list parses a comma separated list that starts at offset base of the
// text; trim trims the entries, as Spark does.
func (p *parser) list(s string, base int, groups, trim bool) error {
	if s == "" || trim && strings.TrimSpace(s) == "" {
		return nil
	}
	if s == Wildcard {
		p.b.all = true
		return nil
	}
	kind, into := "user", &p.b.users
	if groups {
		kind, into = "group", &p.b.groups
	}
	n, warned := strings.Count(s, ",")+1, len(p.warnings)
	names, offsets := make([]string, 0, n), make([]int, 0, n)
	at := base
	for raw := range strings.SplitSeq(s, ",") {
		name, lead := raw, 0
		if trim {
			name = strings.TrimSpace(raw)
			lead = strings.Index(raw, name)
		}
		switch err := ValidName(name); {
		case name == "":
			p.warn(Empty, at+lead, fmt.Sprintf("empty %s entry", kind))
		case name == Wildcard:
			p.warn(NotWildcard, at+lead, fmt.Sprintf(`"*" mixed with %ss is not a wildcard and grants nothing; write "*" alone to allow everyone`, kind))
		case err != nil:
			return &SyntaxError{Input: p.text, List: p.listName, Offset: at + lead, Msg: err.Error()}
		default:
			names, offsets = append(names, name), append(offsets, at+lead)
		}
		at += len(raw) + 1
	}
	if len(names) == 0 {
		return nil
	}
	kept, dups := dedupe(names)
	for _, i := range dups {
		p.warn(Duplicate, offsets[i], fmt.Sprintf("duplicate %s %q", kind, names[i]))
	}
	if len(dups) > 0 {
		slices.SortStableFunc(p.warnings[warned:], func(a, b Warning) int { return a.Offset - b.Offset })
	}
	*into = kept
	return nil
}

// dedupe returns names without the ones listed again, and the indexes of
// those in names. A list without duplicates, found by sorted hashes
// without a map (an ACL can list 100,000 names), is returned as it is.
func dedupe(names []string) ([]string, []int) {
	keys := make([]uint64, len(names))
	for i, n := range names {
		keys[i] = maphash.String(seed, n)
	}
	slices.Sort(keys)
	if len(slices.Compact(keys)) == len(names) {
		return names, nil
	}
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	var dups []int
	for i, n := range names {
		if seen[n] {
			dups = append(dups, i)
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, dups
}

type builder struct {
	all    bool
	users  []string
	groups []string
}

func (b *builder) build() ACL {
	if b.all {
		// The wildcard makes the lists irrelevant; keep the value canonical.
		return ACL{all: true, set: new(lazySet)}
	}
	return ACL{users: b.users, groups: b.groups, set: new(lazySet)}
}
