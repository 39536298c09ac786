package impact

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/usherhq/usher/acl"
)

// Subject is a user with its groups, as a decision would see them.
type Subject struct {
	User   string
	Groups []string
}

// MaxSubjects is the most subjects ParseSubjects reads.
const MaxSubjects = 100000

// ParseSubjects reads users with their groups, one a line: the user, then
// optionally whitespace and a comma separated list of groups:
//
//	alice dev,ops
//	system:serviceaccount:spark:driver
//
// Blank lines and lines starting with # are skipped. Every name must be a
// valid ACL name; a user listed twice is an error. name is used in error
// messages (name:LINE: message).
func ParseSubjects(name string, r io.Reader) ([]Subject, error) {
	var out []Subject
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) > 2 {
			return nil, fmt.Errorf("%s:%d: want \"USER [GROUP,GROUP…]\", got %d fields", name, line, len(fields))
		}
		s := Subject{User: fields[0]}
		if err := acl.ValidName(s.User); err != nil {
			return nil, fmt.Errorf("%s:%d: user: %v", name, line, err)
		}
		if prev, dup := seen[s.User]; dup {
			return nil, fmt.Errorf("%s:%d: user %q listed twice (first on line %d)", name, line, s.User, prev)
		}
		seen[s.User] = line
		if len(fields) == 2 {
			for _, g := range strings.Split(fields[1], ",") {
				if err := acl.ValidName(g); err != nil {
					return nil, fmt.Errorf("%s:%d: group %q: %v", name, line, g, err)
				}
				s.Groups = append(s.Groups, g)
			}
		}
		if len(out) == MaxSubjects {
			return nil, fmt.Errorf("%s:%d: more than %d subjects", name, line, MaxSubjects)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return out, nil
}
