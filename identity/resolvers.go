package identity

import (
	"fmt"
	"slices"
)

// Sources of the resolvers in this package.
const (
	SourceNone Source = "none"
	SourceOS   Source = "os"
	SourceFile Source = "file"
	SourceTest Source = "test"
)

// unknownUser returns the error a resolver named src gives for a user it
// knows does not exist.
func unknownUser(src Source, user string) error {
	return fmt.Errorf("%s: %w %q", src, ErrUnknownUser, user)
}

// newInfo builds the Info of user with groups (which it keeps), dropping
// duplicates and marking every group with src. The slices are clipped so
// that an append reallocates instead of writing into a shared answer.
func newInfo(user string, groups []string, src Source) Info {
	in := Info{User: user, Groups: make([]string, 0, len(groups)), Sources: make([]Source, 0, len(groups))}
	in.add(groups, func(int) Source { return src })
	in.Groups, in.Sources = slices.Clip(in.Groups), slices.Clip(in.Sources)
	return in
}
