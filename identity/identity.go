// Package identity holds who a request is made by: a user with groups, and
// the Resolver interface that finds the groups of a user.
//
// Rules this package enforces:
//   - Groups supplied with a request are used as given (ModeGiven, the
//     default); only when none are supplied is the resolver asked.
//   - ModeResolve asks the resolver only; ModeMerge uses both, given groups
//     first, without duplicates.
//   - Every group carries where it came from, so a decision can say why a
//     user is in it.
//   - A resolver error is never turned into "no groups": callers fail closed.
package identity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Source names where a group came from: SourceGiven, or the resolver that
// found it ("none", "os", "file", "ldap", "test").
type Source string

// SourceGiven marks groups supplied with the request.
const SourceGiven Source = "given"

// Via is the Source of a group found through nested groups, with the
// groups that led to it ("ldap via emea-team > data-eng-emea").
func Via(base Source, chain ...string) Source {
	if len(chain) == 0 {
		return base
	}
	return base + " via " + Source(strings.Join(chain, " > "))
}

// Info is a user and its groups. Resolvers and caches share an Info:
// nobody modifies one after it is returned.
type Info struct {
	User    string   // case sensitive
	Groups  []string // in a stable order, without duplicates
	Sources []Source // when not empty, where each group came from
	Lookup  Lookup   // how the resolver was consulted, when not just asked for User
}

// SourceOf returns where group i came from, or "" when unknown.
func (in Info) SourceOf(i int) Source {
	if i < len(in.Sources) {
		return in.Sources[i]
	}
	return ""
}

// String renders the identity for logs: alice [dev(given) ops(ldap)].
func (in Info) String() string {
	groups := slices.Clone(in.Groups)
	for i := range groups {
		if src := in.SourceOf(i); src != "" {
			groups[i] += "(" + string(src) + ")"
		}
	}
	return in.User + " [" + strings.Join(groups, " ") + "]"
}

// ErrUnknownUser is returned (wrapped) by resolvers that know the user does
// not exist; the groups are then unknown, as for any failure.
var ErrUnknownUser = errors.New("unknown user")

// Resolver finds the groups of a user, each with the resolver's Source. On
// an error the Info is ignored and nothing is granted on group membership.
// Implementations are safe for concurrent use and honour ctx.
type Resolver interface {
	Resolve(ctx context.Context, user string) (Info, error)
}

// Mode says how the groups supplied with a request and the resolver's combine.
type Mode int

// The modes, as the package comment says; ModeGiven is YuniKorn's behaviour.
const (
	ModeGiven Mode = iota
	ModeResolve
	ModeMerge
)

var modeNames = [...]string{ModeGiven: "given", ModeResolve: "resolve", ModeMerge: "merge"}

func (m Mode) String() string {
	if int(m) >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "given", "resolve" or "merge"; "" is ModeGiven.
func ParseMode(s string) (Mode, error) {
	if m := slices.Index(modeNames[:], cmp.Or(s, modeNames[ModeGiven])); m >= 0 {
		return Mode(m), nil
	}
	return 0, fmt.Errorf("unknown groups mode %q: want given, resolve or merge", s)
}

// Given builds an Info from groups supplied with a request, marking each as
// SourceGiven and dropping duplicates (the first occurrence stays).
func Given(user string, groups []string) Info {
	if len(groups) == 0 {
		return Info{User: user}
	}
	return newInfo(user, groups, SourceGiven)
}

// add appends to in the groups it does not hold yet, group i marked src(i).
func (in *Info) add(groups []string, src func(i int) Source) {
	seen := make(map[string]bool, len(in.Groups)+len(groups))
	for _, g := range in.Groups {
		seen[g] = true
	}
	for i, g := range groups {
		if !seen[g] {
			seen[g] = true
			in.Groups = append(in.Groups, g)
			in.Sources = append(in.Sources, src(i))
		}
	}
}
