package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/usherhq/usher/internal/ttlcache"
)

// newTokenAuthenticator and newSARAuthorizer are the constructors with a
// clock, so tests step time instead of sleeping.
func newTokenAuthenticator(reviewer TokenReviewer, opts TokenOptions, now func() time.Time) *TokenAuthenticator {
	a := NewTokenAuthenticator(reviewer, opts)
	a.cache = ttlcache.New[tokenResult](a.opts.MaxEntries, now)
	return a
}

func newSARAuthorizer(reviewer SubjectAccessReviewer, opts SAROptions, now func() time.Time) *SARAuthorizer {
	z := NewSARAuthorizer(reviewer, opts)
	z.cache = ttlcache.New[sarResult](z.opts.MaxEntries, now)
	return z
}

// clock is a fake clock the tests step.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type tokenFunc func(context.Context, *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error)

func (f tokenFunc) CreateTokenReview(ctx context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	return f(ctx, tr)
}

type sarFunc func(context.Context, *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error)

func (f sarFunc) CreateSubjectAccessReview(ctx context.Context, s *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	return f(ctx, s)
}

func TestTokenCacheTTLs(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	var calls atomic.Int64
	var outage atomic.Bool
	rev := tokenFunc(func(_ context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
		calls.Add(1)
		if outage.Load() {
			return nil, errors.New("connection refused")
		}
		out := tr.DeepCopy()
		if tr.Spec.Token == "good" {
			out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}}}
		}
		return out, nil
	})
	a := newTokenAuthenticator(rev, TokenOptions{TTL: 5 * time.Second}, clk.now)
	ctx := context.Background()
	check := func(tok string, wantOK bool, wantCalls int64) {
		t.Helper()
		u, ok, err := a.AuthenticateToken(ctx, tok)
		if err != nil || ok != wantOK || (ok && u.Name != "alice") {
			t.Fatalf("%s: %+v %v %v", tok, u, ok, err)
		}
		if calls.Load() != wantCalls {
			t.Fatalf("%s: %d reviews, want %d", tok, calls.Load(), wantCalls)
		}
	}
	check("good", true, 1)
	check("good", true, 1) // cached
	check("bad", false, 2)
	check("bad", false, 2) // cached failure
	clk.step(4 * time.Second)
	check("good", true, 2) // TTL not yet passed
	clk.step(2 * time.Second)
	check("bad", false, 3) // TTL passed
	check("good", true, 4)

	t.Run("errors are not cached and fail closed", func(t *testing.T) {
		outage.Store(true)
		n := calls.Load()
		for range 2 {
			if _, ok, err := a.AuthenticateToken(ctx, "other"); ok || err == nil {
				t.Fatalf("outage: ok=%v err=%v", ok, err)
			}
		}
		if calls.Load() != n+2 {
			t.Fatalf("an error was cached: %d calls", calls.Load()-n)
		}
		outage.Store(false)
	})
}

func TestCacheSharesConcurrentMisses(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	rev := tokenFunc(func(_ context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
		calls.Add(1)
		<-release
		out := tr.DeepCopy()
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
		return out, nil
	})
	a := NewTokenAuthenticator(rev, TokenOptions{})
	var wg sync.WaitGroup
	var oks atomic.Int64
	for range 50 {
		wg.Go(func() {
			if _, ok, err := a.AuthenticateToken(context.Background(), "tok"); ok && err == nil {
				oks.Add(1)
			}
		})
	}
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 || oks.Load() != 50 {
		t.Fatalf("%d reviews for 50 concurrent misses (want 1), %d authenticated", calls.Load(), oks.Load())
	}
}

func TestCacheCancellationAndPanic(t *testing.T) {
	t.Run("a caller giving up does not cancel the shared call", func(t *testing.T) {
		release := make(chan struct{})
		var sawCancel atomic.Bool
		rev := tokenFunc(func(ctx context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
			<-release
			sawCancel.Store(ctx.Err() != nil)
			out := tr.DeepCopy()
			out.Status.Authenticated, out.Status.User.Username = true, "alice"
			return out, nil
		})
		a := NewTokenAuthenticator(rev, TokenOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { _, _, err := a.AuthenticateToken(ctx, "tok"); done <- err }()
		second := make(chan bool)
		go func() { _, ok, _ := a.AuthenticateToken(context.Background(), "tok"); second <- ok }()
		time.Sleep(20 * time.Millisecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: %v", err)
		}
		close(release)
		if !<-second || sawCancel.Load() {
			t.Fatal("the shared review was cancelled with the first caller")
		}
	})
	t.Run("a panic is an error", func(t *testing.T) {
		rev := tokenFunc(func(context.Context, *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
			panic("boom")
		})
		a := NewTokenAuthenticator(rev, TokenOptions{})
		if _, ok, err := a.AuthenticateToken(context.Background(), "tok"); ok || err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	})
	t.Run("a slow API server times out", func(t *testing.T) {
		rev := tokenFunc(func(ctx context.Context, _ *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		a := NewTokenAuthenticator(rev, TokenOptions{Timeout: 20 * time.Millisecond})
		if _, ok, err := a.AuthenticateToken(context.Background(), "tok"); ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	})
}

func TestCacheIsBounded(t *testing.T) {
	var calls atomic.Int64
	rev := tokenFunc(func(_ context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
		calls.Add(1)
		return tr.DeepCopy(), nil
	})
	a := NewTokenAuthenticator(rev, TokenOptions{MaxEntries: 100, ReviewBurst: 1000})
	for i := range 1000 {
		a.AuthenticateToken(context.Background(), strings.Repeat("x", i+1))
	}
	if n := a.cache.Len(); n > 100 {
		t.Fatalf("%d entries after 1000 invented tokens, bound 100", n)
	}
}

func TestSARAuthorizer(t *testing.T) {
	clk := &clock{t: time.Unix(1e9, 0)}
	var got []authorizationv1.SubjectAccessReviewSpec
	allow := map[string]bool{"bob": true}
	rev := sarFunc(func(_ context.Context, s *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
		got = append(got, s.Spec)
		out := s.DeepCopy()
		out.Status.Allowed = allow[s.Spec.User]
		out.Status.Denied = s.Spec.User == "mallory"
		return out, nil
	})
	z := newSARAuthorizer(rev, SAROptions{TTL: time.Second}, clk.now)
	ctx := context.Background()
	res := Attributes{User: User{Name: "bob", UID: "u1", Groups: []string{"ops"}, Extra: map[string][]string{"k": {"v"}}},
		Verb: "create", APIGroup: "usher.io", Resource: "accessreviews"}
	if d, _, err := z.Authorize(ctx, res); d != Allow || err != nil {
		t.Fatalf("bob: %v %v", d, err)
	}
	sp := got[0]
	if sp.User != "bob" || sp.UID != "u1" || sp.Groups[0] != "ops" || sp.Extra["k"][0] != "v" || sp.ResourceAttributes == nil ||
		*sp.ResourceAttributes != (authorizationv1.ResourceAttributes{Verb: "create", Group: "usher.io", Resource: "accessreviews"}) || sp.NonResourceAttributes != nil {
		t.Fatalf("spec %+v", sp)
	}
	z.Authorize(ctx, res)
	if len(got) != 1 {
		t.Fatal("an allowed answer was not cached")
	}
	metrics := Attributes{User: User{Name: "alice"}, Verb: "get", Path: "/metrics"}
	if d, _, _ := z.Authorize(ctx, metrics); d != NoOpinion {
		t.Fatalf("alice: %v, want no opinion", d)
	}
	if na := got[1].NonResourceAttributes; na == nil || *na != (authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}) || got[1].ResourceAttributes != nil {
		t.Fatalf("spec %+v", got[1])
	}
	clk.step(2 * time.Second)
	z.Authorize(ctx, metrics)
	if len(got) != 3 {
		t.Fatalf("deny TTL: %d reviews, want 3", len(got))
	}
	if d, _, _ := z.Authorize(ctx, Attributes{User: User{Name: "mallory"}, Verb: "get", Path: "/metrics"}); d != Deny {
		t.Fatalf("mallory: %v", d)
	}
	// A union denies when nobody has an opinion, and the privileged group
	// allows without asking.
	u := UnionAuthorizer(PrivilegedGroups("system:masters"), z)
	if d, _, _ := u.Authorize(ctx, metrics); d != Deny {
		t.Fatalf("union for alice: %v", d)
	}
	n := len(got)
	if d, _, _ := u.Authorize(ctx, Attributes{User: User{Name: "root", Groups: []string{"system:masters"}}, Verb: "get", Path: "/metrics"}); d != Allow || len(got) != n {
		t.Fatalf("privileged: %v, %d reviews", d, len(got)-n)
	}
}
