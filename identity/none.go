package identity

import "context"

// None returns the default resolver: it knows nothing about the user beyond
// its name, and answers that the user's only group is a primary group named
// like the user (Source "none"), as YuniKorn's "no resolver" does. An empty
// user name is an error wrapping ErrUnknownUser, because a group named ""
// could match nothing sensible.
func None() Resolver { return noneResolver{} }

type noneResolver struct{}

var _ Resolver = noneResolver{}

// Resolve returns user with the single group user.
func (noneResolver) Resolve(_ context.Context, user string) (Info, error) {
	if user == "" {
		return Info{}, unknownUser(SourceNone, user)
	}
	return Info{User: user, Groups: []string{user}, Sources: []Source{SourceNone}}, nil
}

// String names the resolver in logs.
func (noneResolver) String() string { return string(SourceNone) }
