package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/ttlcache"
)

// newCache is New with a clock, so tests step time instead of sleeping.
func newCache(r identity.Resolver, opts Options, now func() time.Time) *Cache {
	c := New(r, opts)
	c.now, c.tab = now, ttlcache.New[*entry](c.opts.MaxEntries, now)
	return c
}

// clock is a fake clock the tests step by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// resolver is a hand-written fake: it answers with fn and counts calls.
type resolver struct {
	calls atomic.Int64
	fn    func(ctx context.Context, user string) (identity.Info, error)
}

func (r *resolver) Resolve(ctx context.Context, user string) (identity.Info, error) {
	r.calls.Add(1)
	return r.fn(ctx, user)
}

// groupsOf is the answer of the fake directory: user's groups are derived
// from the name, so any answer can be checked.
func groupsOf(user string) identity.Info {
	return identity.Info{User: user, Groups: []string{"g-" + user, "all"}, Sources: []identity.Source{"fake", "fake"}}
}

func directory() *resolver {
	return &resolver{fn: func(_ context.Context, user string) (identity.Info, error) { return groupsOf(user), nil }}
}

var errDown = errors.New("directory down")

// mustResolve resolves user and checks the answer is groupsOf(user).
func mustResolve(t *testing.T, c *Cache, user string) {
	t.Helper()
	in, err := c.Resolve(context.Background(), user)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", user, err)
	}
	if want := groupsOf(user); in.User != user || !slices.Equal(in.Groups, want.Groups) {
		t.Fatalf("Resolve(%q) = %v, want %v", user, in, want)
	}
}

func checkCalls(t *testing.T, r *resolver, want int64) {
	t.Helper()
	if got := r.calls.Load(); got != want {
		t.Fatalf("resolver called %d times, want %d", got, want)
	}
}

// TestConcurrentMissesShareOneCall is the cache's reason to exist: 100
// callers that miss at once for one user make exactly one resolver call.
func TestConcurrentMissesShareOneCall(t *testing.T) {
	const n = 100
	var arrived atomic.Int64
	all := make(chan struct{})
	r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
		<-all // hold the call until every caller has come in
		return groupsOf(user), nil
	}}
	c := New(r, Options{})

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if arrived.Add(1) == n {
				close(all)
			}
			in, err := c.Resolve(context.Background(), "alice")
			if err == nil && !slices.Equal(in.Groups, groupsOf("alice").Groups) {
				err = fmt.Errorf("got %v", in)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkCalls(t, r, 1)
	s := c.Stats()
	if s.Calls != 1 || s.Hits+s.Misses != n {
		t.Errorf("stats %+v: want 1 call and %d lookups", s, n)
	}
}

func TestExpiry(t *testing.T) {
	clk := newClock()
	r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
		if user == "bob" {
			return identity.Info{}, fmt.Errorf("fake: %w %q", identity.ErrUnknownUser, user)
		}
		return groupsOf(user), nil
	}}
	c := newCache(r, Options{PositiveTTL: 5 * time.Minute, NegativeTTL: 30 * time.Second}, clk.now)
	bob := func() error {
		_, err := c.Resolve(context.Background(), "bob")
		if !errors.Is(err, identity.ErrUnknownUser) {
			t.Fatalf("bob: err = %v, want ErrUnknownUser", err)
		}
		return err
	}

	mustResolve(t, c, "alice")
	first := bob()
	checkCalls(t, r, 2)

	clk.advance(30*time.Second - 1)
	mustResolve(t, c, "alice")
	if err := bob(); err != first {
		t.Errorf("cached failure = %v, want the same error %v", err, first)
	}
	checkCalls(t, r, 2)

	clk.advance(1) // bob's failure expires; alice's success does not
	mustResolve(t, c, "alice")
	bob()
	checkCalls(t, r, 3)

	clk.advance(5*time.Minute - 30*time.Second - 1)
	mustResolve(t, c, "alice")
	checkCalls(t, r, 3)

	clk.advance(1) // alice's success expires
	mustResolve(t, c, "alice")
	checkCalls(t, r, 4)

	s := c.Stats()
	if s.CallTime <= 0 {
		t.Errorf("CallTime = %v after 4 calls", s.CallTime)
	}
	s.CallTime = 0
	want := Stats{Hits: 3, NegativeHits: 1, Misses: 4, Calls: 4, Failures: 2}
	if s != want {
		t.Errorf("stats = %+v, want %+v", s, want)
	}
}

func TestTTLsDisabled(t *testing.T) {
	fail := false
	r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
		if fail {
			return identity.Info{}, errDown
		}
		return groupsOf(user), nil
	}}
	c := newCache(r, Options{PositiveTTL: -1, NegativeTTL: -1}, newClock().now)
	mustResolve(t, c, "alice")
	mustResolve(t, c, "alice")
	fail = true
	c.Resolve(context.Background(), "alice")
	c.Resolve(context.Background(), "alice")
	checkCalls(t, r, 4)
	if c.Len() != 0 {
		t.Errorf("Len = %d, want 0", c.Len())
	}
}

func TestDefaults(t *testing.T) {
	got := New(nil, Options{}).opts
	want := Options{Name: "resolver", PositiveTTL: 300 * time.Second, NegativeTTL: 30 * time.Second,
		MaxEntries: 10000, Timeout: 10 * time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	set := Options{Name: "ldap", PositiveTTL: time.Minute, NegativeTTL: -1, StaleTTL: time.Hour, MaxEntries: 5, Timeout: time.Second}
	if got := New(nil, set).opts; fmt.Sprint(got) != fmt.Sprint(set) {
		t.Errorf("set options changed: %+v, want %+v", got, set)
	}
	odd := New(nil, Options{StaleTTL: -1, MaxEntries: -1, Timeout: -1}).opts
	if odd.StaleTTL != 0 || odd.MaxEntries != 10000 || odd.Timeout != 10*time.Second {
		t.Errorf("negative options = %+v", odd)
	}
}

func TestEviction(t *testing.T) {
	t.Run("least recently used", func(t *testing.T) {
		r := directory()
		c := newCache(r, Options{MaxEntries: 3}, newClock().now)
		for _, u := range []string{"a", "b", "c"} {
			mustResolve(t, c, u)
		}
		mustResolve(t, c, "a") // a is looked up again: it survives
		mustResolve(t, c, "d") // full: b, the least recently used, goes
		checkCalls(t, r, 4)
		if c.Len() != 3 || c.Stats().Evictions != 1 {
			t.Fatalf("Len = %d, stats %+v; want 3 entries, 1 eviction", c.Len(), c.Stats())
		}
		for _, u := range []string{"a", "c", "d"} {
			mustResolve(t, c, u)
		}
		checkCalls(t, r, 4)
		mustResolve(t, c, "b")
		checkCalls(t, r, 5)
	})

	t.Run("expired first", func(t *testing.T) {
		clk := newClock()
		r := directory()
		c := newCache(r, Options{MaxEntries: 3, PositiveTTL: 10 * time.Second}, clk.now)
		mustResolve(t, c, "a")
		mustResolve(t, c, "a") // referenced, but about to expire
		clk.advance(6 * time.Second)
		mustResolve(t, c, "b")
		mustResolve(t, c, "c")
		clk.advance(5 * time.Second) // a expired, b and c not
		mustResolve(t, c, "d")
		checkCalls(t, r, 4)
		for _, u := range []string{"b", "c", "d"} {
			mustResolve(t, c, u)
		}
		checkCalls(t, r, 4)
	})

	t.Run("bound holds", func(t *testing.T) {
		for _, max := range []int{1, 7, 100, 1000} {
			t.Run(fmt.Sprint(max), func(t *testing.T) {
				r := directory()
				c := newCache(r, Options{MaxEntries: max}, newClock().now)
				const users = 1500
				for i := range users {
					mustResolve(t, c, fmt.Sprint("user", i))
					if i%7 == 0 {
						mustResolve(t, c, fmt.Sprint("user", i/2))
					}
				}
				n, s := c.Len(), c.Stats()
				if n != max {
					t.Errorf("Len = %d, want %d", n, max)
				}
				if s.Evictions != s.Calls-uint64(n) {
					t.Errorf("%d evictions, %d calls, %d entries", s.Evictions, s.Calls, n)
				}
			})
		}
	})
}

// TestStale walks through an outage with StaleTTL set: the last good answer
// serves, one background retry per NegativeTTL, until the directory comes
// back or StaleTTL runs out.
func TestStale(t *testing.T) {
	clk := newClock()
	var down atomic.Bool
	var version atomic.Int64
	r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
		if down.Load() {
			return identity.Info{}, errDown
		}
		in := groupsOf(user)
		in.Groups = append(in.Groups, fmt.Sprint("v", version.Load()))
		return in, nil
	}}
	c := newCache(r, Options{PositiveTTL: 5 * time.Minute, NegativeTTL: 30 * time.Second, StaleTTL: 10 * time.Minute}, clk.now)
	refreshed := make(chan string, 1)
	c.refreshed = func(user string) { refreshed <- user }

	want := func(version string) {
		t.Helper()
		in, err := c.Resolve(context.Background(), "alice")
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if got := in.Groups[len(in.Groups)-1]; got != version {
			t.Fatalf("answer %v, want version %s", in, version)
		}
	}

	want("v0")
	down.Store(true)
	version.Store(1)
	clk.advance(6 * time.Minute) // expired; asking again fails: the last good answer
	want("v0")
	checkCalls(t, r, 2)
	if s := c.Stats(); s.Failures != 1 {
		t.Fatalf("stats %+v: want 1 failure", s)
	}

	clk.advance(29 * time.Second) // not time to retry yet
	want("v0")
	checkCalls(t, r, 2)

	clk.advance(time.Second) // retry due: one background refresh, which fails
	want("v0")
	want("v0")
	<-refreshed
	checkCalls(t, r, 3)
	want("v0") // retried only after another NegativeTTL
	checkCalls(t, r, 3)

	down.Store(false) // the directory is back
	clk.advance(30 * time.Second)
	want("v0") // this answer is stale; its refresh fetches v1
	<-refreshed
	want("v1")
	checkCalls(t, r, 4)
	if s := c.Stats(); s.StaleHits != 5 {
		t.Errorf("stats %+v: want 5 stale hits", s)
	}

	// A second outage outlasting StaleTTL ends in the error.
	down.Store(true)
	clk.advance(5 * time.Minute)
	want("v1")
	clk.advance(10*time.Minute - 1)
	want("v1")
	<-refreshed
	clk.advance(1)
	if _, err := c.Resolve(context.Background(), "alice"); !errors.Is(err, errDown) {
		t.Fatalf("after StaleTTL: err = %v, want %v", err, errDown)
	}
	if _, err := c.Resolve(context.Background(), "alice"); !errors.Is(err, errDown) {
		t.Fatalf("negative hit: err = %v, want %v", err, errDown)
	}

	t.Run("unknown user is not an outage", func(t *testing.T) {
		clk := newClock()
		var gone atomic.Bool
		r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
			if gone.Load() {
				return identity.Info{}, fmt.Errorf("fake: %w %q", identity.ErrUnknownUser, user)
			}
			return groupsOf(user), nil
		}}
		c := newCache(r, Options{StaleTTL: time.Hour}, clk.now)
		mustResolve(t, c, "alice")
		gone.Store(true)
		clk.advance(300 * time.Second)
		if _, err := c.Resolve(context.Background(), "alice"); !errors.Is(err, identity.ErrUnknownUser) {
			t.Fatalf("err = %v, want ErrUnknownUser", err)
		}
	})
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name string
		fn   func(ctx context.Context, block <-chan struct{}) error
	}{
		{"resolver honours its context", func(ctx context.Context, _ <-chan struct{}) error {
			<-ctx.Done()
			return fmt.Errorf("fake: %w", ctx.Err())
		}},
		{"resolver ignores its context", func(_ context.Context, block <-chan struct{}) error {
			<-block
			return errDown
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := make(chan struct{})
			t.Cleanup(func() { close(block) })
			r := &resolver{fn: func(ctx context.Context, _ string) (identity.Info, error) {
				return identity.Info{}, tt.fn(ctx, block)
			}}
			c := newCache(r, Options{Name: "ldap", Timeout: time.Millisecond}, newClock().now)
			_, err := c.Resolve(context.Background(), "alice")
			if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), `ldap: groups of "alice": no answer within 1ms: `) {
				t.Fatalf("err = %v", err)
			}
			if _, again := c.Resolve(context.Background(), "alice"); again != err {
				t.Errorf("second lookup: %v, want the cached %v", again, err)
			}
			// At most one call: under load the timeout may pass before the
			// call's goroutine starts it.
			if n := r.calls.Load(); n > 1 {
				t.Errorf("resolver called %d times, want at most 1", n)
			}
			if s := c.Stats(); s.Failures != 1 || s.NegativeHits != 1 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestCallerCancellation(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var callErr atomic.Value
	r := &resolver{fn: func(ctx context.Context, user string) (identity.Info, error) {
		close(started)
		<-release
		callErr.Store(fmt.Sprint(ctx.Err()))
		return groupsOf(user), nil
	}}
	c := newCache(r, Options{}, newClock().now)

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error)
	go func() {
		_, err := c.Resolve(ctx, "alice")
		first <- err
	}()
	<-started
	second := make(chan error)
	go func() {
		in, err := c.Resolve(context.Background(), "alice")
		if err == nil && in.User != "alice" {
			err = fmt.Errorf("got %v", in)
		}
		second <- err
	}()
	cancel()
	if err := <-first; err != context.Canceled {
		t.Fatalf("cancelled caller: err = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-second; err != nil {
		t.Fatalf("other caller: %v", err)
	}
	if got := callErr.Load(); got != "<nil>" {
		t.Errorf("the resolver's context ended: %v", got)
	}
	checkCalls(t, r, 1)
	mustResolve(t, c, "alice") // the answer was stored for everyone
	checkCalls(t, r, 1)

	t.Run("already cancelled", func(t *testing.T) {
		r := directory()
		c := New(r, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Resolve(ctx, "alice"); err != context.Canceled {
			t.Fatalf("err = %v", err)
		}
		checkCalls(t, r, 0)
	})
}

func TestPanic(t *testing.T) {
	r := &resolver{fn: func(context.Context, string) (identity.Info, error) { panic("boom") }}
	c := newCache(r, Options{Name: "ldap"}, newClock().now)
	for range 3 {
		_, err := c.Resolve(context.Background(), "alice")
		if err == nil || err.Error() != `ldap: groups of "alice": resolver panicked: boom` {
			t.Fatalf("err = %v", err)
		}
	}
	checkCalls(t, r, 1) // the failure is cached like any other
	if s := c.Stats(); s.Failures != 1 {
		t.Errorf("stats %+v: want 1 failure", s)
	}
}

// TestAnswersAreCopies checks the cache keeps its own copy of an answer, so
// a resolver that reuses its slices cannot change what the cache serves,
// and a caller appending to an answer cannot either.
func TestAnswersAreCopies(t *testing.T) {
	shared := []string{"dev", "ops", "spare"}[:2]
	r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
		return identity.Info{User: "someone else", Groups: shared}, nil
	}}
	c := New(r, Options{})
	in, _ := c.Resolve(context.Background(), "alice")
	if cap(in.Groups) != len(in.Groups) || cap(in.Sources) != len(in.Sources) {
		t.Errorf("answer has room to append in place: cap %d, len %d", cap(in.Groups), len(in.Groups))
	}
	shared[0] = "root"
	again, _ := c.Resolve(context.Background(), "alice")
	if again.User != "alice" || !slices.Equal(again.Groups, []string{"dev", "ops"}) {
		t.Fatalf("cached answer = %v, want alice [dev ops]", again)
	}
}

// TestConcurrentMixedUsers runs lookups, failures, expiry and eviction at
// once; run it with -race.
func TestConcurrentMixedUsers(t *testing.T) {
	clk := newClock()
	r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
		if strings.HasSuffix(user, "7") {
			return identity.Info{}, errDown
		}
		return groupsOf(user), nil
	}}
	c := newCache(r, Options{MaxEntries: 40, PositiveTTL: time.Second, NegativeTTL: time.Millisecond, StaleTTL: time.Second}, clk.now)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				user := fmt.Sprint("user", (i*(g+1))%97)
				if i%50 == 0 {
					clk.advance(100 * time.Millisecond)
				}
				in, err := c.Resolve(context.Background(), user)
				if strings.HasSuffix(user, "7") {
					if !errors.Is(err, errDown) {
						t.Errorf("%s: err = %v, want %v", user, err, errDown)
						return
					}
					continue
				}
				if err != nil || in.User != user || !slices.Equal(in.Groups, groupsOf(user).Groups) {
					t.Errorf("%s: %v, %v", user, in, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.Len() > 40 {
		t.Errorf("Len = %d > MaxEntries", c.Len())
	}
	s := c.Stats()
	if s.Hits+s.NegativeHits+s.StaleHits+s.Misses != 8*1000 {
		t.Errorf("stats %+v do not add up to %d lookups", s, 8*1000)
	}
}

// TestAttachedAnswersAsResolve walks an outage with StaleTTL set and
// checks at each step that Attached answers only what Resolve answers
// (fresh, or served stale) and counts it as Resolve would.
func TestAttachedAnswersAsResolve(t *testing.T) {
	clk := newClock()
	var down atomic.Bool
	var version atomic.Int64
	r := &resolver{fn: func(_ context.Context, user string) (identity.Info, error) {
		if down.Load() {
			return identity.Info{}, errDown
		}
		in := groupsOf(user)
		in.Groups = append(in.Groups, fmt.Sprint("v", version.Load()))
		return in, nil
	}}
	c := newCache(r, Options{PositiveTTL: 5 * time.Minute, NegativeTTL: 30 * time.Second, StaleTTL: 10 * time.Minute}, clk.now)
	refreshed := make(chan string, 1)
	c.refreshed = func(user string) { refreshed <- user }
	step := func(wantAttached bool, wantVersion string) {
		t.Helper()
		in, err := c.Resolve(context.Background(), "alice")
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		c.Attach("alice", in, 7, in.Groups[len(in.Groups)-1])
		before := c.Stats()
		got, v, ok := c.Attached("alice", 7)
		after := c.Stats()
		if ok != wantAttached {
			t.Fatalf("Attached ok = %v, want %v", ok, wantAttached)
		}
		if !ok {
			return
		}
		if v != wantVersion || got.Groups[len(got.Groups)-1] != wantVersion {
			t.Fatalf("Attached = %v, %v; want version %s", got, v, wantVersion)
		}
		if after.Hits+after.StaleHits != before.Hits+before.StaleHits+1 || after.Misses != before.Misses {
			t.Fatalf("Attached counted %+v -> %+v, want one hit", before, after)
		}
	}
	step(true, "v0")
	down.Store(true)
	version.Store(1)
	clk.advance(6 * time.Minute) // expired, the directory down: served stale
	step(true, "v0")
	clk.advance(30 * time.Second) // a retry is due: Attached starts it too
	if _, _, ok := c.Attached("alice", 7); !ok {
		t.Fatal("stale answer not attached")
	}
	<-refreshed // it failed: a new stale entry, without the value
	if _, _, ok := c.Attached("alice", 7); ok {
		t.Fatal("the value survived the entry it was attached to")
	}
	step(true, "v0")
	down.Store(false)
	clk.advance(30 * time.Second)
	if _, v, ok := c.Attached("alice", 7); !ok || v != "v0" {
		t.Fatalf("Attached = %v, %v", v, ok)
	}
	<-refreshed // the refresh Attached started stored v1: the v0 value is gone
	if _, _, ok := c.Attached("alice", 7); ok {
		t.Fatal("the value of the stale answer outlived the new answer")
	}
	step(true, "v1")
	down.Store(true)
	clk.advance(16 * time.Minute) // past StaleTTL: nothing is served
	if _, _, ok := c.Attached("alice", 7); ok {
		t.Fatal("attached past StaleTTL")
	}
}
