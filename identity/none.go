package identity

import "context"

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
