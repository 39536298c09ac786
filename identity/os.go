package identity

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"slices"
)

// OS returns a resolver that asks the operating system (os/user, through
// NSS when built with cgo) for a user's groups: the primary group first,
// then the others as the system lists them. A group id with no name keeps
// its number. Any failure is an error, never a shorter list of groups.
//
// A lookup can block (an NSS module may ask a directory server) and does
// not heed ctx: the group cache in front of every resolver abandons it at
// its timeout.
func OS() Resolver {
	return &osResolver{
		lookupUser:  user.Lookup,
		groupIDs:    (*user.User).GroupIds,
		lookupGroup: user.LookupGroupId,
	}
}

// osResolver holds the os/user functions it calls, so that a test can
// supply a group id without a name.
type osResolver struct {
	lookupUser  func(name string) (*user.User, error)
	groupIDs    func(u *user.User) ([]string, error)
	lookupGroup func(gid string) (*user.Group, error)
}

func (r *osResolver) Resolve(_ context.Context, name string) (Info, error) {
	if name == "" {
		return Info{}, unknownUser(SourceOS, name)
	}
	u, err := r.lookupUser(name)
	if err != nil {
		if _, ok := errors.AsType[user.UnknownUserError](err); ok {
			return Info{}, unknownUser(SourceOS, name)
		}
		return Info{}, fmt.Errorf("os: looking up user %q: %w", name, err)
	}
	gids, err := r.groupIDs(u)
	if err != nil {
		return Info{}, fmt.Errorf("os: listing the groups of %q: %w", name, err)
	}
	// The primary group once; newInfo drops any other name listed twice.
	ids := append([]string{u.Gid}, slices.DeleteFunc(gids, func(g string) bool { return g == u.Gid })...)
	groups := make([]string, 0, len(ids))
	for _, gid := range ids {
		g, err := r.lookupGroup(gid)
		_, unknown := errors.AsType[user.UnknownGroupIdError](err)
		switch {
		case err == nil:
			groups = append(groups, g.Name)
		case unknown:
			groups = append(groups, gid)
		default:
			return Info{}, fmt.Errorf("os: looking up group %s of %q: %w", gid, name, err)
		}
	}
	return newInfo(name, groups, SourceOS), nil
}
