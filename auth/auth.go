// Package auth decides who may call usher's decision API (/v1/access) and
// read its metrics (/metrics), the way Kubernetes API extensions do it.
//
// Rules this package enforces:
//   - A caller is authenticated by a bearer token (a TokenReview) or by a
//     client certificate verified against a configured CA, as
//     kube-apiserver reads it. Anything else is unauthenticated.
//   - A question is authorized by a SubjectAccessReview against the
//     cluster's RBAC, or by membership in a privileged group. The zero
//     Decision denies; a Union in which nobody has an opinion denies.
//   - Answers of the API server are cached (internal/ttlcache); errors
//     never are.
//   - An error means "could not decide": callers fail closed on it.
package auth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
)

// User is an authenticated caller.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra is what the API server attached to the user (token bindings,
	// scopes), passed on to SubjectAccessReviews unchanged.
	Extra map[string][]string
}

// Authenticator establishes who sent a request.
type Authenticator interface {
	// AuthenticateRequest returns the caller; ok is false for no credential
	// or one that does not verify. An error means it could not decide: the
	// request is unauthenticated.
	AuthenticateRequest(r *http.Request) (u User, ok bool, err error)
}

type union []Authenticator

// Union returns the first authenticator's answer that authenticates the
// request; else the errors (an outage is not a bad credential).
func Union(as ...Authenticator) Authenticator { return union(as) }

func (as union) AuthenticateRequest(r *http.Request) (User, bool, error) {
	var errs []error
	for _, a := range as {
		u, ok, err := a.AuthenticateRequest(r)
		if ok && err == nil {
			return u, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return User{}, false, errors.Join(errs...)
}

// Decision is the outcome of an authorization. The zero value denies.
type Decision int

const (
	Deny Decision = iota
	Allow
	NoOpinion // left to the next authorizer of a union
)

// Attributes describe what a caller asks to do: either a verb on a
// resource (Resource set) or a verb on a non-resource path (Path set).
type Attributes struct {
	User                     User
	Verb                     string
	APIGroup, Resource, Name string
	Path                     string // a non-resource URL such as /metrics
}

// String describes a as RBAC would: "create accessreviews.usher.io" or
// "get /metrics".
func (a Attributes) String() string {
	if a.Resource == "" {
		return a.Verb + " " + a.Path
	}
	s := a.Verb + " " + a.Resource
	if a.APIGroup != "" {
		s += "." + a.APIGroup
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	return s
}

// Authorizer decides whether a caller may do what Attributes describe.
type Authorizer interface {
	// Authorize returns the decision and a reason for it. An error means it
	// could not decide: the caller fails closed.
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

type unionAuthorizer []Authorizer

// UnionAuthorizer asks each authorizer in order; the first Allow or Deny
// decides, else Deny with the reasons and errors of all.
func UnionAuthorizer(as ...Authorizer) Authorizer { return unionAuthorizer(as) }

func (as unionAuthorizer) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range as {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if d != NoOpinion && err == nil {
			return d, reason, nil
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return Deny, strings.Join(reasons, "; "), errors.Join(errs...)
}

type privileged []string

// PrivilegedGroups allows everything to members of groups and has no
// opinion about anyone else, like kube-apiserver's system:masters.
func PrivilegedGroups(groups ...string) Authorizer { return privileged(slices.Clone(groups)) }

func (groups privileged) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	for _, g := range groups {
		if slices.Contains(a.User.Groups, g) {
			return Allow, "member of the privileged group " + g, nil
		}
	}
	return NoOpinion, "", nil
}
