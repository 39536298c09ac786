package identity

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/usherhq/usher/internal/safefile"
)

// MaxFileSize is the largest users-to-groups file File reads: about
// 300,000 users with a dozen groups each.
const MaxFileSize = 16 << 20

// File reads the users-to-groups file at path and returns a resolver that
// answers from it (Source "file"); see ParseFile for the format. The file
// must be a regular file of at most MaxFileSize bytes, and is read once:
// to pick up changes, call File again and swap resolvers.
func File(path string) (Resolver, error) {
	data, _, err := safefile.Read(path, MaxFileSize, 0)
	if err != nil {
		return nil, fmt.Errorf("users-to-groups file: %w", err)
	}
	return ParseFile(bytes.NewReader(data), path)
}

// maxFileErrors is how many problems ParseFile reports before giving up.
const maxFileErrors = 10

// ParseFile reads a users-to-groups file from r; name is the file name used
// in messages. It is meant for small sites without a directory server.
//
// The format is one line per user:
//
//	# comment
//	alice: dev, ops
//	system:serviceaccount:spark:driver: spark
//	bob:
//
// A user name ends at the first colon followed by a space, a tab or the end
// of the line, so names containing colons (Kubernetes users and groups)
// need no quoting. The groups follow, separated by commas; spaces and tabs
// around names are ignored. A user listed with no groups is known and has
// none; a user not listed is an error wrapping ErrUnknownUser. A "#" starts
// a comment that runs to the end of the line; blank lines are ignored;
// CRLF line ends and a leading byte order mark are accepted.
//
// Errors: a missing colon, an empty user or group name, a name containing
// whitespace or a control character, invalid UTF-8, a user listed twice,
// or a group listed twice for one user. Each is a *FileError rendered
// "FILE:LINE:COL: message" (1-based line, 1-based byte column), which
// names the problem and never quotes the file's content; all of them
// (up to ten) are returned together, joined by newlines (errors.Join).
// Nothing is dropped silently: a file with any error yields no resolver.
func ParseFile(r io.Reader, name string) (Resolver, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := fileParser{name: name, t: &table{source: SourceFile, name: name, users: map[string]Info{}}, lineOf: map[string]int{}}
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

// FileError is one problem found by ParseFile, at a 1-based line and
// 1-based byte column of the named file.
type FileError struct {
	File string // the file name given to ParseFile
	Line int    // 1-based line number
	Col  int    // 1-based byte column
	Msg  string // what is wrong, without quoting the file
}

// Error renders the problem as FILE:LINE:COL: message.
func (e *FileError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

type fileParser struct {
	name   string
	t      *table
	lineOf map[string]int // line where each user was listed
	errs   []error
}

func (p *fileParser) errorf(line, col int, format string, args ...any) {
	p.errs = append(p.errs, &FileError{File: p.name, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

// line parses line number n (without its line end).
func (p *fileParser) line(n int, line string) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	if strings.Trim(line, " \t") == "" {
		return
	}
	if !utf8.ValidString(line) {
		for i := 0; i < len(line); {
			r, size := utf8.DecodeRuneInString(line[i:])
			if r == utf8.RuneError && size == 1 {
				p.errorf(n, i+1, "invalid UTF-8")
				return
			}
			i += size
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
	if first, dup := p.lineOf[user]; dup {
		p.errorf(n, col+1, "duplicate user (first listed at line %d)", first)
		return
	}
	p.lineOf[user] = n

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
// offset off of its line, and returns what is left with its offset (for an
// empty result, the offset of field).
func trimField(field string, off int) (string, int) {
	trimmed := strings.TrimLeft(field, " \t")
	if trimmed == "" {
		return "", off
	}
	return strings.TrimRight(trimmed, " \t"), off + len(field) - len(trimmed)
}

// checkName reports a name (of kind "user" or "group") at byte offset off
// that contains whitespace or a control character, and says whether it is
// fine.
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
