// Package auth decides who may call usher's decision API (/v1/access) and
// read its metrics (/metrics), the way Kubernetes API extensions do it.
//
// Rules this package enforces:
//   - A caller is authenticated by a bearer token, checked with a
//     TokenReview by the cluster's API server, or by a client certificate
//     verified against a configured CA (the user is the certificate's
//     common name, its groups the organizations, as kube-apiserver reads
//     them). A request with no credential, or a credential that does not
//     verify, is unauthenticated; nothing else about it is looked at.
//   - A question is authorized by an Authorizer: a SubjectAccessReview
//     against the cluster's RBAC, or membership in a privileged group. The
//     zero Decision denies; NoOpinion lets a Union fall through to the next
//     authorizer, and a Union in which nobody has an opinion denies.
//   - Answers of the API server are cached (separate TTLs for success and
//     failure, a bounded number of entries); concurrent misses for one key
//     share one call, made on a context detached from the caller's and
//     bounded by a timeout. Errors are never cached.
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
	// Name is the user name, for example alice or
	// system:serviceaccount:spark:driver.
	Name string
	// UID is the API server's unique id of the user, when it gave one.
	UID string
	// Groups are the groups the caller authenticated with.
	Groups []string
	// Extra is the additional information the API server attached to the
	// user (service-account token bindings, scopes); it is passed on to
	// SubjectAccessReviews unchanged.
	Extra map[string][]string
}

// InGroup reports whether u is a member of group.
func (u User) InGroup(group string) bool { return slices.Contains(u.Groups, group) }

// Authenticator establishes who sent a request.
type Authenticator interface {
	// AuthenticateRequest returns the caller. ok is false when the request
	// carries no credential the authenticator understands, or one that
	// does not verify. A non-nil error means the authenticator could not
	// decide (the API server did not answer): the caller must treat the
	// request as unauthenticated and may report the outage.
	AuthenticateRequest(r *http.Request) (u User, ok bool, err error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (User, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (User, bool, error) { return f(r) }

// Union tries each authenticator in order and returns the first that
// authenticates the request. When none does, it returns the first error
// any of them reported (so an outage is not mistaken for a bad
// credential), or ok false.
func Union(as ...Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (User, bool, error) {
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
	})
}

// Decision is the outcome of an authorization. The zero value denies.
type Decision int

const (
	// Deny refuses the request.
	Deny Decision = iota
	// Allow permits the request.
	Allow
	// NoOpinion leaves the decision to the next authorizer of a chain.
	NoOpinion
)

// String returns deny, allow or no opinion.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case NoOpinion:
		return "no opinion"
	}
	return "deny"
}

// Attributes describe what a caller asks to do: either a verb on a
// resource (Resource set) or a verb on a non-resource path (Path set).
type Attributes struct {
	User User
	// Verb is the Kubernetes verb: create, get, ...
	Verb string
	// APIGroup, Resource and Name name a resource, for example usher.io,
	// accessreviews.
	APIGroup, Resource, Name string
	// Path is a non-resource URL such as /metrics.
	Path string
}

// IsResource reports whether a names a resource rather than a path.
func (a Attributes) IsResource() bool { return a.Resource != "" }

// String describes a as RBAC would: "create accessreviews.usher.io" or
// "get /metrics".
func (a Attributes) String() string {
	if !a.IsResource() {
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
	// Authorize returns the decision and a reason for it. A non-nil error
	// means the authorizer could not decide; the decision beside it is
	// Deny or NoOpinion and the caller must fail closed.
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// UnionAuthorizer asks each authorizer in order; the first Allow or Deny
// decides. When every one has no opinion the result is Deny, with the
// reasons of all and the first error any of them returned.
func UnionAuthorizer(as ...Authorizer) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, a Attributes) (Decision, string, error) {
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
	})
}

// PrivilegedGroups allows everything to members of groups and has no
// opinion about anyone else, like kube-apiserver's system:masters.
func PrivilegedGroups(groups ...string) Authorizer {
	groups = slices.Clone(groups)
	return AuthorizerFunc(func(_ context.Context, a Attributes) (Decision, string, error) {
		for _, g := range groups {
			if a.User.InGroup(g) {
				return Allow, "member of the privileged group " + g, nil
			}
		}
		return NoOpinion, "", nil
	})
}

var (
	_ Authenticator = AuthenticatorFunc(nil)
	_ Authorizer    = AuthorizerFunc(nil)
)
