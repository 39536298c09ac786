package impact

import (
	"fmt"
	"io"

	"github.com/usherhq/usher/identity"
)

// Subject is a user with its groups, as a decision would see them.
type Subject struct {
	User   string
	Groups []string
}

// MaxSubjects is the most subjects ParseSubjects reads.
const MaxSubjects = 100000

// ParseSubjects reads users with their groups, "alice: dev, ops" one a
// line, with the users-to-groups file parser (identity.ParseFile); name
// is the file name in error messages.
func ParseSubjects(name string, r io.Reader) ([]Subject, error) {
	t, err := identity.ParseFile(r, name)
	if err != nil {
		return nil, err
	}
	entries := identity.FileEntries(t)
	if len(entries) > MaxSubjects {
		return nil, fmt.Errorf("%s: more than %d subjects", name, MaxSubjects)
	}
	out := make([]Subject, len(entries))
	for i, e := range entries {
		out[i] = Subject{User: e.User, Groups: e.Groups}
	}
	return out, nil
}
