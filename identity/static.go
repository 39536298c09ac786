package identity

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

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
