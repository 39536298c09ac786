package identity

import (
	"fmt"
	"slices"
)

// Sources of the resolvers in this package; each resolver marks every group
// it returns with its own Source.
const (
	// SourceNone marks the primary group the None resolver derives from the
	// user name.
	SourceNone Source = "none"
	// SourceOS marks groups found by the OS resolver.
	SourceOS Source = "os"
	// SourceFile marks groups read from a users-to-groups file.
	SourceFile Source = "file"
	// SourceTest marks groups from the Static (test) resolver.
	SourceTest Source = "test"
)

// unknownUser returns the error a resolver named src gives for a user it
// knows does not exist.
func unknownUser(src Source, user string) error {
	return fmt.Errorf("%s: %w %q", src, ErrUnknownUser, user)
}

// newInfo builds the Info of user with groups (which it keeps), dropping
// duplicate groups (the first stays) and marking every group with src. The
// slices are clipped so that a careless append by a caller reallocates
// instead of writing into memory shared with other answers.
func newInfo(user string, groups []string, src Source) Info {
	in := Info{User: user, Groups: make([]string, 0, len(groups))}
	for _, g := range groups {
		if !slices.Contains(in.Groups, g) {
			in.Groups = append(in.Groups, g)
		}
	}
	in.Groups = slices.Clip(in.Groups)
	in.Sources = make([]Source, len(in.Groups))
	for i := range in.Sources {
		in.Sources[i] = src
	}
	return in
}
