package identity

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	MaxFileSize   = 16 << 20 // the largest users-to-groups file: ~300,000 users, a dozen groups each
	maxFileErrors = 10       // problems ParseFile reports before giving up
)

// ParseFile reads a users-to-groups file from r; name is the file name used
// in messages. The format is one line per user:
//
//	# comment
//	alice: dev, ops
//	system:serviceaccount:spark:driver: spark
//	bob:
//
// A user name ends at the first colon followed by a space, a tab or the end
// of the line, so Kubernetes names need no quoting. A user listed with no
// groups is known and has none; one not listed is an error wrapping
// ErrUnknownUser.
//
// Every problem (up to ten) is an error at FILE:LINE:COL, joined: a file
// with any error yields no resolver. No message quotes the file's content.
func ParseFile(r io.Reader, name string) (Resolver, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := fileParser{name: name, t: &table{source: SourceFile, name: name, users: map[string]Info{}, lines: map[string]int{}}}
	text := string(data)
	if strings.HasPrefix(text, "\ufeff") {
		// A byte order mark, as some editors write: blank it out, keeping
		// the columns of line 1 true.
		text = "   " + text[len("\ufeff"):]
	}
	for n := 1; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		p.line(n, strings.TrimSuffix(line, "\r"))
		if len(p.errs) > maxFileErrors {
			p.errs[maxFileErrors] = fmt.Errorf("%s:%d: too many errors", name, n)
			p.errs = p.errs[:maxFileErrors+1]
			break
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return p.t, nil
}

// FileEntry is one line of a users-to-groups file.
type FileEntry struct {
	User   string
	Groups []string
	Line   int
}

// FileEntries returns the users of a resolver ParseFile returned, in file
// order; nil for any other resolver.
func FileEntries(r Resolver) []FileEntry {
	t, ok := r.(*table)
	if !ok || t.lines == nil {
		return nil
	}
	out := make([]FileEntry, 0, len(t.users))
	for user, in := range t.users {
		out = append(out, FileEntry{User: user, Groups: in.Groups, Line: t.lines[user]})
	}
	slices.SortFunc(out, func(a, b FileEntry) int { return a.Line - b.Line })
	return out
}

type fileParser struct {
	name string
	t    *table
	errs []error
}

func (p *fileParser) errorf(line, col int, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d:%d: %s", p.name, line, col, fmt.Sprintf(format, args...)))
}

// line parses line number n (without its line end).
func (p *fileParser) line(n int, line string) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	if strings.Trim(line, " \t") == "" {
		return
	}
	for i, r := range line {
		// An invalid byte decodes as RuneError; a written U+FFFD does not count.
		if r == utf8.RuneError && !strings.HasPrefix(line[i:], string(utf8.RuneError)) {
			p.errorf(n, i+1, "invalid UTF-8")
			return
		}
	}
	sep := userEnd(line)
	if sep < 0 {
		start := len(line) - len(strings.TrimLeft(line, " \t"))
		p.errorf(n, start+1, "missing colon after the user name: want \"user: group1, group2\" (the user ends at the first colon followed by a space or the end of the line)")
		return
	}
	user, col := trimField(line[:sep], 0)
	if user == "" {
		p.errorf(n, sep+1, "empty user name before the colon")
		return
	}
	if !p.checkName(n, col, "user", user) {
		return
	}
	if first, dup := p.t.lines[user]; dup {
		p.errorf(n, col+1, "duplicate user (first listed at line %d)", first)
		return
	}
	p.t.lines[user] = n

	var groups []string
	rest, off := line[sep+1:], sep+1
	if strings.Trim(rest, " \t") != "" {
		for field := range strings.SplitSeq(rest, ",") {
			g, gcol := trimField(field, off)
			off += len(field) + 1
			switch {
			case g == "":
				p.errorf(n, gcol+1, "empty group name")
			case !p.checkName(n, gcol, "group", g):
			case slices.Contains(groups, g):
				p.errorf(n, gcol+1, "duplicate group (listed before on this line)")
			default:
				groups = append(groups, g)
			}
		}
	}
	p.t.users[user] = newInfo(user, groups, SourceFile)
}

// userEnd returns the index of the first colon followed by a space, a tab
// or the end of line, or -1.
func userEnd(line string) int {
	for i := 0; i < len(line); i++ {
		if line[i] == ':' && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t') {
			return i
		}
	}
	return -1
}

// trimField removes the spaces and tabs around field, which starts at byte
// offset off of its line, and returns what is left with its offset.
func trimField(field string, off int) (string, int) {
	trimmed := strings.TrimLeft(field, " \t")
	if trimmed == "" {
		return "", off
	}
	return strings.TrimRight(trimmed, " \t"), off + len(field) - len(trimmed)
}

// checkName reports a name at byte offset off that contains whitespace or
// a control character, and says whether it is fine.
func (p *fileParser) checkName(n, off int, kind, name string) bool {
	for i, r := range name {
		switch {
		case unicode.IsSpace(r):
			p.errorf(n, off+i+1, "%s name contains whitespace %U", kind, r)
			return false
		case unicode.IsControl(r) || r == '\ufeff':
			p.errorf(n, off+i+1, "%s name contains control character %U", kind, r)
			return false
		}
	}
	return true
}
