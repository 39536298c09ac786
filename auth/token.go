package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/usherhq/usher/internal/defaults"
	"github.com/usherhq/usher/internal/ttlcache"
)

// TokenReviewer sends a TokenReview to the API server and returns its
// answer. *KubeReviewer implements it.
type TokenReviewer interface {
	CreateTokenReview(ctx context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error)
}

// TokenOptions configure a TokenAuthenticator; zero values take the defaults.
type TokenOptions struct {
	// TTL is how long an answer is remembered. Default 10s, as
	// kube-apiserver's delegated authentication.
	TTL        time.Duration
	Timeout    time.Duration // bounds one TokenReview; default 10s
	MaxEntries int           // bounds the cache; default 4096
	// Audiences are sent with every TokenReview; a token is accepted only
	// when the answer names one of them. Default none: the API server's.
	Audiences []string
	// ReviewRate and ReviewBurst bound the TokenReviews of tokens the cache
	// does not hold (beyond: ErrTooManyReviews). Default 50/s, bursts of 100.
	ReviewRate  float32
	ReviewBurst int
	// Count, when set, is called for each token the cache does not hold with
	// the outcome: authenticated, unauthenticated, error or ratelimited.
	Count func(result string)
}

// ErrTooManyReviews is the error of a token that was not reviewed because
// too many tokens were new at once (TokenOptions.ReviewRate).
var ErrTooManyReviews = errors.New("too many new credentials at once: try again later")

func (o TokenOptions) withDefaults() TokenOptions {
	defaults.Positive(&o.TTL, 10*time.Second)
	defaults.Positive(&o.Timeout, 10*time.Second)
	defaults.Positive(&o.MaxEntries, 4096)
	defaults.Positive(&o.ReviewRate, 50)
	defaults.Positive(&o.ReviewBurst, 100)
	if o.Count == nil {
		o.Count = func(string) {}
	}
	return o
}

// TokenAuthenticator authenticates "Authorization: Bearer TOKEN" with a
// TokenReview, caching the answers.
type TokenAuthenticator struct {
	reviewer TokenReviewer
	opts     TokenOptions
	cache    *ttlcache.Cache[tokenResult]
	bucket   flowcontrol.PassiveRateLimiter
}

type tokenResult struct {
	user User
	ok   bool
}

// NewTokenAuthenticator returns an authenticator that asks reviewer.
func NewTokenAuthenticator(reviewer TokenReviewer, opts TokenOptions) *TokenAuthenticator {
	opts = opts.withDefaults()
	return &TokenAuthenticator{reviewer: reviewer, opts: opts, cache: ttlcache.New[tokenResult](opts.MaxEntries, time.Now),
		bucket: flowcontrol.NewTokenBucketPassiveRateLimiter(opts.ReviewRate, opts.ReviewBurst)}
}

// BearerToken returns the token of an "Authorization: Bearer" header, or
// "" when there is none.
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// AuthenticateRequest implements Authenticator.
func (a *TokenAuthenticator) AuthenticateRequest(r *http.Request) (User, bool, error) {
	tok := BearerToken(r)
	if tok == "" {
		return User{}, false, nil
	}
	return a.AuthenticateToken(r.Context(), tok)
}

// AuthenticateToken checks one token.
func (a *TokenAuthenticator) AuthenticateToken(ctx context.Context, tok string) (User, bool, error) {
	// The cache is keyed by a hash: the tokens themselves are not kept.
	sum := sha256.Sum256([]byte(tok))
	res, err := a.cache.Fetch(ctx, string(sum[:]), a.opts.Timeout, func(tokenResult) time.Duration { return a.opts.TTL }, func(ctx context.Context) (tokenResult, error) {
		if !a.bucket.TryAccept() {
			a.opts.Count("ratelimited")
			return tokenResult{}, ErrTooManyReviews
		}
		tr, err := a.reviewer.CreateTokenReview(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: tok, Audiences: a.opts.Audiences},
		})
		if err != nil {
			a.opts.Count("error")
			return tokenResult{}, err
		}
		st := tr.Status
		if !st.Authenticated || st.User.Username == "" ||
			len(a.opts.Audiences) > 0 && !slices.ContainsFunc(st.Audiences, func(x string) bool { return slices.Contains(a.opts.Audiences, x) }) {
			a.opts.Count("unauthenticated")
			return tokenResult{}, nil
		}
		a.opts.Count("authenticated")
		u := User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
		if len(st.User.Extra) > 0 {
			u.Extra = make(map[string][]string, len(st.User.Extra))
			for k, v := range st.User.Extra {
				u.Extra[k] = v
			}
		}
		return tokenResult{user: u, ok: true}, nil
	})
	if err != nil {
		return User{}, false, err
	}
	return res.user, res.ok, nil
}
