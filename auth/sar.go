package auth

import (
	"context"
	"encoding/json"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/usherhq/usher/internal/defaults"
	"github.com/usherhq/usher/internal/ttlcache"
)

// SubjectAccessReviewer sends a SubjectAccessReview to the API server and
// returns its answer. *KubeReviewer implements it.
type SubjectAccessReviewer interface {
	CreateSubjectAccessReview(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error)
}

// SAROptions configure a SARAuthorizer; zero values take the defaults.
type SAROptions struct {
	// TTL is how long an answer is remembered. Default 10s, as
	// kube-apiserver's delegated authorization.
	TTL        time.Duration
	Timeout    time.Duration // bounds one SubjectAccessReview; default 10s
	MaxEntries int           // bounds the cache; default 4096
}

func (o SAROptions) withDefaults() SAROptions {
	defaults.Positive(&o.TTL, 10*time.Second)
	defaults.Positive(&o.Timeout, 10*time.Second)
	defaults.Positive(&o.MaxEntries, 4096)
	return o
}

// SARAuthorizer asks the API server's authorizers (RBAC) with a
// SubjectAccessReview, caching the answers.
type SARAuthorizer struct {
	reviewer SubjectAccessReviewer
	opts     SAROptions
	cache    *ttlcache.Cache[sarResult]
}

type sarResult struct {
	d      Decision
	reason string
}

// NewSARAuthorizer returns an authorizer that asks reviewer.
func NewSARAuthorizer(reviewer SubjectAccessReviewer, opts SAROptions) *SARAuthorizer {
	opts = opts.withDefaults()
	return &SARAuthorizer{reviewer: reviewer, opts: opts, cache: ttlcache.New[sarResult](opts.MaxEntries, time.Now)}
}

// Spec returns the SubjectAccessReview spec that asks about a.
func Spec(a Attributes) authorizationv1.SubjectAccessReviewSpec {
	spec := authorizationv1.SubjectAccessReviewSpec{User: a.User.Name, UID: a.User.UID, Groups: a.User.Groups}
	if len(a.User.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(a.User.Extra))
		for k, v := range a.User.Extra {
			spec.Extra[k] = v
		}
	}
	if a.Resource == "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	} else {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Group: a.APIGroup, Resource: a.Resource, Verb: a.Verb, Name: a.Name}
	}
	return spec
}

// Authorize implements Authorizer: Allow or Deny when the API server's
// answer says so, NoOpinion when it neither allows nor explicitly denies.
func (z *SARAuthorizer) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	spec := Spec(a)
	key, err := json.Marshal(spec)
	if err != nil {
		return NoOpinion, "", err
	}
	res, err := z.cache.Fetch(ctx, string(key), z.opts.Timeout, func(sarResult) time.Duration { return z.opts.TTL }, func(ctx context.Context) (sarResult, error) {
		out, err := z.reviewer.CreateSubjectAccessReview(ctx, &authorizationv1.SubjectAccessReview{Spec: spec})
		if err != nil {
			return sarResult{}, err
		}
		st := out.Status
		switch {
		case st.Allowed:
			return sarResult{Allow, st.Reason}, nil
		case st.Denied:
			return sarResult{Deny, st.Reason}, nil
		}
		return sarResult{NoOpinion, st.Reason}, nil
	})
	if err != nil {
		return NoOpinion, "", err
	}
	return res.d, res.reason, nil
}
