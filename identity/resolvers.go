package identity

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Sources of the resolvers in this package.
const (
	SourceNone Source = "none"
	SourceOS   Source = "os"
	SourceFile Source = "file"
	SourceTest Source = "test"
)

// unknownUser is the error a resolver named src gives for a user it knows does not exist.
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

// None returns the default resolver, as YuniKorn's "no resolver": the user's
// only group is named like the user. An empty name is an unknown user.
func None() Resolver { return noneResolver{} }

type noneResolver struct{}

func (noneResolver) Resolve(_ context.Context, user string) (Info, error) {
	if user == "" {
		return Info{}, unknownUser(SourceNone, user)
	}
	return Info{User: user, Groups: []string{user}, Sources: []Source{SourceNone}}, nil
}

// Static returns the test resolver: a copy of a table from user names to
// their groups. A user missing from it is an error wrapping ErrUnknownUser.
func Static(users map[string][]string) Resolver {
	t := &table{source: SourceTest, users: make(map[string]Info, len(users))}
	for _, user := range slices.Sorted(maps.Keys(users)) {
		t.users[user] = newInfo(user, users[user], SourceTest)
	}
	return t
}

// table is a resolver answering from a fixed map (Static, ParseFile).
type table struct {
	source Source
	name   string // where the table came from, for messages; may be empty
	users  map[string]Info
	lines  map[string]int // the line of each user, for a file (FileEntries)
}

func (t *table) Resolve(_ context.Context, user string) (Info, error) {
	in, ok := t.users[user]
	if !ok {
		if t.name != "" {
			return Info{}, fmt.Errorf("%w (not in %s)", unknownUser(t.source, user), t.name)
		}
		return Info{}, unknownUser(t.source, user)
	}
	return in, nil
}

// Members returns the users the table lists in group, sorted (usher who-can).
func (t *table) Members(group string) []string {
	var out []string
	for user, in := range t.users {
		if slices.Contains(in.Groups, group) {
			out = append(out, user)
		}
	}
	slices.Sort(out)
	return out
}
