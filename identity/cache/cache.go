// Package cache keeps the answers of an identity.Resolver for a while, so
// that a directory server is asked about a user once per TTL instead of once
// per request. A *Cache is itself an identity.Resolver: it wraps one, and
// usher gives each partition its own.
//
// Rules this package enforces:
//   - A success is kept for PositiveTTL, a failure (including an unknown
//     user, a timeout and a panic) for the shorter NegativeTTL; the cached
//     failure is returned as it is, so callers fail closed.
//   - Concurrent lookups of a user that is not cached share one resolver
//     call (singleflight): N callers, one call.
//   - The resolver call runs on a context of its own, detached from the
//     callers' and limited by Timeout, so a caller that gives up does not
//     cancel the answer for the others; that caller gets its ctx.Err().
//   - A panicking resolver is an error (counted in Stats), never a crash.
//   - With StaleTTL set, an outage does not lock users out at once: when a
//     user's entry has expired and asking again fails, the last good answer
//     keeps serving for up to StaleTTL past its expiry while the resolver is
//     retried in the background, at most one call per user at a time. A
//     definitive "unknown user" is not an outage and ends this at once.
//   - At most MaxEntries users are kept; beyond that the clock algorithm
//     evicts (see Options.MaxEntries).
//   - Answers are shared: the cache stores its own copy of each answer and
//     never modifies it, and callers must not modify the Info they get.
//   - There is no global state: every Cache is independent.
package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/ttlcache"
)

// Defaults of Options.
const (
	DefaultPositiveTTL = 300 * time.Second
	DefaultNegativeTTL = 30 * time.Second
	DefaultMaxEntries  = 10000
	DefaultTimeout     = 10 * time.Second
	DefaultName        = "resolver"
)

// Options tune a Cache. The zero value of every field means its default.
type Options struct {
	// Name names the wrapped resolver in the errors the cache makes itself
	// (timeouts and panics), e.g. "ldap". Default DefaultName, "resolver".
	// Errors returned by the resolver are passed on unchanged.
	Name string

	// PositiveTTL is how long a success is kept. Default
	// DefaultPositiveTTL (300s); negative: successes are not kept.
	PositiveTTL time.Duration

	// NegativeTTL is how long a failure is kept, and how often a user
	// served stale answers is retried. Default DefaultNegativeTTL (30s);
	// negative: failures are not kept and retries are back to back.
	NegativeTTL time.Duration

	// StaleTTL is how long past its expiry the last good answer for a
	// user keeps serving when asking the resolver again fails. Default 0:
	// off, a failure is returned at once. Failures wrapping
	// identity.ErrUnknownUser are answers, not outages, and are never
	// covered by a stale answer.
	StaleTTL time.Duration

	// MaxEntries bounds the number of users kept. Default
	// DefaultMaxEntries (10,000); zero or negative: the default. A full
	// cache evicts one entry per new user with the clock (second chance)
	// algorithm: the hand removes the first entry that is past its expiry
	// (and stale period) or has not been looked up since the hand last
	// passed it.
	MaxEntries int

	// Timeout bounds one resolver call. Default DefaultTimeout (10s); zero
	// or negative: the default. A resolver that ignores its context is
	// abandoned at the timeout and its goroutine left to finish.
	Timeout time.Duration

	// ObserveCall, if set, is called after every resolver call with its
	// duration and error (nil on success), for example to feed a latency
	// histogram. It runs on the goroutine of the call and must be fast,
	// safe for concurrent use, and must not panic.
	ObserveCall func(d time.Duration, err error)
}

// withDefaults returns o with every unset field set to its default. It is
// the only place defaults are applied.
func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.PositiveTTL == 0 {
		o.PositiveTTL = DefaultPositiveTTL
	}
	if o.NegativeTTL == 0 {
		o.NegativeTTL = DefaultNegativeTTL
	}
	if o.StaleTTL < 0 {
		o.StaleTTL = 0
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Stats are the counters of a Cache since it was made. Every lookup is
// counted in exactly one of Hits, NegativeHits, StaleHits and Misses.
type Stats struct {
	// Hits are lookups answered with a fresh cached success.
	Hits uint64
	// NegativeHits are lookups answered with a cached failure.
	NegativeHits uint64
	// StaleHits are lookups answered, without waiting, with the last good
	// answer while the resolver is failing (see Options.StaleTTL).
	StaleHits uint64
	// Misses are lookups that waited for a resolver call, their own or one
	// shared with other callers.
	Misses uint64
	// Cancelled are misses whose caller's context ended before the answer.
	Cancelled uint64

	// Calls are resolver calls, including background refreshes.
	Calls uint64
	// Failures are resolver calls that failed: errors, timeouts, panics.
	Failures uint64
	// Timeouts are resolver calls that did not answer within Timeout.
	Timeouts uint64
	// Panics are resolver calls that panicked.
	Panics uint64
	// Fallbacks are failed resolver calls answered with the last good
	// answer instead of the error (see Options.StaleTTL).
	Fallbacks uint64
	// CallTime is the total time spent in resolver calls.
	CallTime time.Duration

	// Evictions are entries removed to stay within MaxEntries.
	Evictions uint64
}

// Cache is an identity.Resolver that caches the answers of another one. It
// is safe for concurrent use. Make one with New.
type Cache struct {
	r    identity.Resolver
	opts Options
	now  func() time.Time
	tab  *ttlcache.Cache[*entry] // user name -> entry

	// mu orders stores against Invalidate: gen changes on Invalidate, so
	// that a resolver call started before does not store its answer after.
	mu  sync.Mutex
	gen atomic.Uint64

	hits, negHits, staleHits, misses, cancelled         atomic.Uint64
	calls, failures, timeouts, panics, fallbacks, evict atomic.Uint64
	callTime                                            atomic.Int64

	// refreshed, when set (by tests), is called when a background refresh
	// has finished and stored its answer.
	refreshed func(user string)
}

var _ identity.Resolver = (*Cache)(nil)

// entry is the cached answer for one user. Apart from the atomics, an
// entry is never modified once stored: a new answer is a new entry.
type entry struct {
	info    identity.Info // a success; the cache's own copy
	err     error         // a failure
	expires time.Time     // fresh before expires
	keep    time.Time     // may be served stale before keep (>= expires)
	// stale is set once asking again after expiry failed: the entry then
	// serves info until keep, and the resolver is retried from retryAt.
	stale   bool
	retryAt time.Time

	// att is what a caller attached to this answer (Attach), for one key.
	att atomic.Pointer[attachment]

	refreshing atomic.Bool // a background refresh has been started
}

// New returns a cache in front of r with opts (see Options for defaults).
func New(r identity.Resolver, opts Options) *Cache {
	return newCache(r, opts, time.Now)
}

// newCache is New with a clock, so tests step time instead of sleeping.
func newCache(r identity.Resolver, opts Options, now func() time.Time) *Cache {
	opts = opts.withDefaults()
	return &Cache{r: r, opts: opts, now: now, tab: ttlcache.New[*entry](opts.MaxEntries, now)}
}

// Resolve returns the groups of user: from the cache when it holds a fresh
// answer, otherwise from the resolver (one call shared by all concurrent
// callers for user). When ctx ends before the answer, Resolve returns
// ctx.Err() and the call goes on for the others. The Info returned is
// shared and must not be modified.
func (c *Cache) Resolve(ctx context.Context, user string) (identity.Info, error) {
	now := c.now()
	if e, ok := c.tab.Get(user, now); ok && c.serve(e, user, now) {
		if e.err != nil {
			return identity.Info{}, e.err
		}
		return e.info, nil
	}
	return c.miss(ctx, user)
}

// serve reports whether e, user's entry, answers from the cache: fresh,
// or the last good answer served stale (starting a refresh when a retry
// is due). When it does, it counts the hit.
func (c *Cache) serve(e *entry, user string, now time.Time) bool {
	switch {
	case now.Before(e.expires):
		if e.err != nil {
			c.negHits.Add(1)
		} else {
			c.hits.Add(1)
		}
	case e.stale && now.Before(e.keep):
		c.staleHits.Add(1)
		if !now.Before(e.retryAt) && e.refreshing.CompareAndSwap(false, true) {
			go c.refresh(user)
		}
	default:
		return false
	}
	return true
}

// attachment is a value kept with one cached answer under a key.
type attachment struct {
	key uint64
	v   any
}

// Attached returns user's cached success and the value attached to it
// under key (Attach), counting a hit, when Resolve would answer it from
// the cache (fresh, or the last good answer served stale, see
// Options.StaleTTL); ok is false, in nil and nothing is counted,
// otherwise or when nothing is attached under key: the caller then asks
// Resolve. It does not allocate. in points at the cache's own copy of the
// answer, which is never modified and must not be modified (returning it
// by pointer spares the hit path a copy of the Info).
//
// A caller keeps with an answer what it works out from it (usher's engine
// keeps the user's acl.Subject, keyed by its configuration's generation,
// numbered), so that work is done once per answer and key.
func (c *Cache) Attached(user string, key uint64) (in *identity.Info, v any, ok bool) {
	now := c.now()
	e, found := c.tab.Get(user, now)
	if !found || e.err != nil {
		return nil, nil, false
	}
	a := e.att.Load()
	if a == nil || a.key != key || !c.serve(e, user, now) {
		return nil, nil, false
	}
	return &e.info, a.v, true
}

// Attach keeps v with user's cached answer under key, replacing what was
// attached, if the cache still holds the answer in (the one Resolve
// returned: the same groups, not merely equal ones). Otherwise it does
// nothing: a newer answer is never paired with what was worked out from
// an older one.
func (c *Cache) Attach(user string, in identity.Info, key uint64, v any) {
	e, ok := c.tab.Get(user, c.now())
	if !ok || e.err != nil || !sameAnswer(e.info, in) {
		return
	}
	e.att.Store(&attachment{key: key, v: v})
}

func sameAnswer(a, b identity.Info) bool {
	return a.User == b.User && len(a.Groups) == len(b.Groups) && unsafe.SliceData(a.Groups) == unsafe.SliceData(b.Groups) &&
		len(a.Sources) == len(b.Sources) && unsafe.SliceData(a.Sources) == unsafe.SliceData(b.Sources)
}

// miss waits for the shared resolver call for user, or for ctx to end.
func (c *Cache) miss(ctx context.Context, user string) (identity.Info, error) {
	c.misses.Add(1)
	a, err := c.tab.Do(ctx, user, func(ctx context.Context) (*entry, error) { return c.fill(ctx, user), nil })
	if err != nil {
		c.cancelled.Add(1)
		return identity.Info{}, err
	}
	return a.info, a.err
}

// refresh retries the resolver for a user served stale answers.
func (c *Cache) refresh(user string) {
	_, _ = c.tab.Do(context.Background(), user, func(ctx context.Context) (*entry, error) { return c.fill(ctx, user), nil })
	if c.refreshed != nil {
		c.refreshed(user)
	}
}

// fill asks the resolver about user unless a fresh answer arrived
// meanwhile, stores the outcome and returns what the callers get (its
// info or err). It runs once per call of tab.Do.
func (c *Cache) fill(ctx context.Context, user string) *entry {
	gen := c.gen.Load()
	now := c.now()
	if e, ok := c.tab.Get(user, now); ok && now.Before(e.expires) {
		// A call that ended just before this one began stored it.
		return e
	}

	// What is stored outlives the caller, whose name may be a substring
	// of a far larger buffer (a request's body): a copy.
	user = strings.Clone(user)
	info, err := c.call(ctx, user)
	now = c.now()
	if err == nil {
		info = identity.Info{
			User:    user,
			Groups:  slices.Clip(slices.Clone(info.Groups)),
			Sources: slices.Clip(slices.Clone(info.Sources)),
		}
	}
	a := &entry{info: info, err: err}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen { // invalidated meanwhile: answer, but do not store.
		return a
	}
	cur, _ := c.tab.Get(user, now)
	switch {
	case err == nil:
		if c.opts.PositiveTTL < 0 {
			c.tab.Delete(user)
			break
		}
		a.expires = now.Add(c.opts.PositiveTTL)
		a.keep = a.expires.Add(c.opts.StaleTTL)
		c.put(user, a)
	case cur != nil && cur.err == nil && now.Before(cur.keep) && !errors.Is(err, identity.ErrUnknownUser):
		// An outage: serve the last good answer and retry later.
		c.fallbacks.Add(1)
		a = &entry{info: cur.info, expires: cur.expires, keep: cur.keep, stale: true, retryAt: now.Add(max(c.opts.NegativeTTL, 0))}
		c.put(user, a)
	case c.opts.NegativeTTL < 0:
		c.tab.Delete(user)
	default:
		a.expires = now.Add(c.opts.NegativeTTL)
		a.keep = a.expires
		c.put(user, a)
	}
	return a
}

func (c *Cache) put(user string, e *entry) {
	if c.tab.Put(user, e, e.keep) {
		c.evict.Add(1)
	}
}

// call runs one resolver call for user on ctx limited by Timeout,
// recovering a panic into an error.
func (c *Cache) call(ctx context.Context, user string) (identity.Info, error) {
	c.calls.Add(1)
	start := time.Now() // the real clock: the cache's may be fake
	info, err := ttlcache.Call(ctx, c.opts.Timeout, func(ctx context.Context) (identity.Info, error) { return c.r.Resolve(ctx, user) })
	switch {
	case errors.Is(err, ttlcache.ErrPanic):
		c.panics.Add(1)
		err = fmt.Errorf("%s: groups of %q: resolver %w", c.opts.Name, user, err)
	case errors.Is(err, ttlcache.ErrTimeout):
		c.timeouts.Add(1)
		err = fmt.Errorf("%s: groups of %q: %w", c.opts.Name, user, err)
	}
	d := time.Since(start)
	c.callTime.Add(int64(d))
	if err != nil {
		c.failures.Add(1)
	}
	if c.opts.ObserveCall != nil {
		c.opts.ObserveCall(d, err)
	}
	return info, err
}

// Invalidate forgets what the cache knows about user: the next lookup asks
// the resolver, and a call already under way will not store its answer.
func (c *Cache) Invalidate(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tab.Delete(user)
	c.gen.Add(1)
}

// Len returns the number of users held, including expired entries not yet
// evicted or replaced.
func (c *Cache) Len() int { return c.tab.Len() }

// Stats returns the cache's counters. Each is read atomically; the set is
// not a snapshot taken at one instant.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits:         c.hits.Load(),
		NegativeHits: c.negHits.Load(),
		StaleHits:    c.staleHits.Load(),
		Misses:       c.misses.Load(),
		Cancelled:    c.cancelled.Load(),
		Calls:        c.calls.Load(),
		Failures:     c.failures.Load(),
		Timeouts:     c.timeouts.Load(),
		Panics:       c.panics.Load(),
		Fallbacks:    c.fallbacks.Load(),
		CallTime:     time.Duration(c.callTime.Load()),
		Evictions:    c.evict.Load(),
	}
}
