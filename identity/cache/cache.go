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
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sync/singleflight"

	"github.com/usherhq/usher/identity"
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
//
// A hit reads a hash table without a lock (table) and increments one
// counter, so lookups from many cores share no lock; stores, evictions
// and invalidations take a mutex.
type Cache struct {
	r     identity.Resolver
	opts  Options
	now   func() time.Time
	group singleflight.Group

	tab *table // user name -> *entry; written only with mu held

	mu   sync.Mutex
	ring []*entry // the clock: every entry of tab, each at index entry.slot
	hand int

	// gen changes on Invalidate, so that a resolver call started before
	// does not store its answer after.
	gen atomic.Uint64

	// Counters of the hit path, striped over entries so that cores looking
	// up different users do not contend for one cache line.
	_       [128]byte
	stripes [stripes]stripe

	misses, cancelled                                   atomic.Uint64
	calls, failures, timeouts, panics, fallbacks, evict atomic.Uint64
	callTime                                            atomic.Int64

	// refreshed, when set (by tests), is called when a background refresh
	// has finished and stored its answer.
	refreshed func(user string)
}

var _ identity.Resolver = (*Cache)(nil)

// stripes is the number of sets of hit counters.
const (
	stripeBits = 5
	stripes    = 1 << stripeBits
)

// stripe is one set of hit counters, alone on its cache line (and its
// neighbour, which some processors fetch in pairs).
type stripe struct {
	hits, negHits, staleHits atomic.Uint64
	_                        [128 - 3*8]byte
}

// entry is the cached answer for one user. Apart from the atomics and slot,
// an entry is never modified once stored: a new answer is a new entry.
type entry struct {
	user    string
	hash    uint64        // of user, in Cache.tab
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

	ref        atomic.Bool // looked up since the clock hand last passed
	refreshing atomic.Bool // a background refresh has been started
	slot       int         // index in Cache.ring, guarded by Cache.mu
}

// answer is the outcome of a resolver call as shared by its callers.
type answer struct {
	info identity.Info
	err  error
}

// New returns a cache in front of r with opts (see Options for defaults).
//
// The cache reads time from a clock advanced every 100ms by a goroutine of
// its own, so TTLs are honoured to within 100ms; the goroutine ends when the
// cache is no longer referenced (there is nothing to close).
func New(r identity.Resolver, opts Options) *Cache {
	c, _ := newWithClock(r, opts)
	return c
}

// newWithClock is New, also returning the cache's clock.
func newWithClock(r identity.Resolver, opts Options) (*Cache, *coarseClock) {
	k := startClock(tick)
	c := newCache(r, opts, k.now)
	// k's goroutine holds k, not c: once c is unreachable, stop it.
	runtime.AddCleanup(c, func(stop chan struct{}) { close(stop) }, k.stop)
	return c, k
}

// newCache is New with a clock, so tests step time instead of sleeping.
func newCache(r identity.Resolver, opts Options, now func() time.Time) *Cache {
	return &Cache{r: r, opts: opts.withDefaults(), now: now, tab: newTable()}
}

// lookup returns the entry for user, or nil.
func (c *Cache) lookup(user string) *entry {
	return c.tab.load(user)
}

// Resolve returns the groups of user: from the cache when it holds a fresh
// answer, otherwise from the resolver (one call shared by all concurrent
// callers for user). When ctx ends before the answer, Resolve returns
// ctx.Err() and the call goes on for the others. The Info returned is
// shared and must not be modified.
func (c *Cache) Resolve(ctx context.Context, user string) (identity.Info, error) {
	if e := c.lookup(user); e != nil && c.serve(e, user) {
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
func (c *Cache) serve(e *entry, user string) bool {
	now := c.now()
	switch {
	case now.Before(e.expires):
		e.touch()
		ctr := c.stripe()
		if e.err != nil {
			ctr.negHits.Add(1)
		} else {
			ctr.hits.Add(1)
		}
	case e.stale && now.Before(e.keep):
		e.touch()
		c.stripe().staleHits.Add(1)
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
// keeps the user's compiled identity, keyed by its configuration's
// generation, numbered), so that work is done once per answer and key.
func (c *Cache) Attached(user string, key uint64) (in *identity.Info, v any, ok bool) {
	e := c.lookup(user)
	if e == nil || e.err != nil {
		return nil, nil, false
	}
	a := e.att.Load()
	if a == nil || a.key != key || !c.serve(e, user) {
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
	e := c.lookup(user)
	if e == nil || e.err != nil || !sameAnswer(e.info, in) {
		return
	}
	e.att.Store(&attachment{key: key, v: v})
}

func sameAnswer(a, b identity.Info) bool {
	return a.User == b.User && len(a.Groups) == len(b.Groups) && unsafe.SliceData(a.Groups) == unsafe.SliceData(b.Groups) &&
		len(a.Sources) == len(b.Sources) && unsafe.SliceData(a.Sources) == unsafe.SliceData(b.Sources)
}

// Detach drops every attached value, so that what callers kept for a key
// they no longer use (a replaced configuration) is released at once.
func (c *Cache) Detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.ring {
		e.att.Store(nil)
	}
}

// stripe picks the hit counters by the address of the caller's stack, so
// that goroutines counting hits, even on the same user, seldom share a
// cache line: goroutines have stacks of their own, apart by at least 2
// KiB, and the address is mixed so that neighbouring stacks spread over
// the stripes. It costs a few instructions; a random number cost a fifth
// of a cached hit.
func (c *Cache) stripe() *stripe {
	var here byte
	a := uint32(uintptr(unsafe.Pointer(&here)) >> 11)
	return &c.stripes[(a*0x9e3779b1)>>(32-stripeBits)]
}

func (e *entry) touch() {
	if !e.ref.Load() {
		e.ref.Store(true)
	}
}

// miss waits for the shared resolver call for user, or for ctx to end.
func (c *Cache) miss(ctx context.Context, user string) (identity.Info, error) {
	c.misses.Add(1)
	if err := ctx.Err(); err != nil {
		c.cancelled.Add(1)
		return identity.Info{}, err
	}
	ch := c.group.DoChan(user, func() (any, error) {
		// Detached: the first caller leaving must not cancel the call
		// the others wait for. Its values (a logger, say) are kept.
		return c.fill(context.WithoutCancel(ctx), user), nil
	})
	select {
	case res := <-ch:
		a := res.Val.(answer)
		return a.info, a.err
	case <-ctx.Done():
		c.cancelled.Add(1)
		return identity.Info{}, ctx.Err()
	}
}

// refresh retries the resolver for a user served stale answers.
func (c *Cache) refresh(user string) {
	c.group.Do(user, func() (any, error) {
		return c.fill(context.Background(), user), nil
	})
	if c.refreshed != nil {
		c.refreshed(user)
	}
}

// fill asks the resolver about user unless a fresh answer arrived
// meanwhile, stores the outcome and returns what the callers get. It runs
// once per singleflight call.
func (c *Cache) fill(ctx context.Context, user string) answer {
	gen := c.gen.Load()
	if e := c.lookup(user); e != nil && c.now().Before(e.expires) {
		// A call that ended just before this one began stored it.
		return answer{info: e.info, err: e.err}
	}

	// What is stored outlives the caller, whose name may be a substring
	// of a far larger buffer (a request's body): a copy.
	user = strings.Clone(user)
	info, err := c.call(ctx, user)
	now := c.now()
	if err == nil {
		info = identity.Info{
			User:    user,
			Groups:  slices.Clip(slices.Clone(info.Groups)),
			Sources: slices.Clip(slices.Clone(info.Sources)),
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen { // invalidated meanwhile: answer, but do not store.
		return answer{info: info, err: err}
	}
	cur := c.lookup(user)
	switch {
	case err == nil:
		if c.opts.PositiveTTL < 0 {
			c.remove(cur)
			break
		}
		exp := now.Add(c.opts.PositiveTTL)
		c.put(&entry{user: user, info: info, expires: exp, keep: exp.Add(c.opts.StaleTTL)}, now)
	case cur != nil && cur.err == nil && now.Before(cur.keep) && !errors.Is(err, identity.ErrUnknownUser):
		// An outage: serve the last good answer and retry later.
		c.fallbacks.Add(1)
		c.put(&entry{user: user, info: cur.info, expires: cur.expires, keep: cur.keep,
			stale: true, retryAt: now.Add(max(c.opts.NegativeTTL, 0))}, now)
		return answer{info: cur.info}
	case c.opts.NegativeTTL < 0:
		c.remove(cur)
	default:
		exp := now.Add(c.opts.NegativeTTL)
		c.put(&entry{user: user, err: err, expires: exp, keep: exp}, now)
	}
	return answer{info: info, err: err}
}

// call runs one resolver call for user on ctx limited by Timeout,
// recovering a panic into an error.
func (c *Cache) call(ctx context.Context, user string) (identity.Info, error) {
	c.calls.Add(1)
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	start := time.Now() // the real clock: the cache's may be coarse or fake
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				c.panics.Add(1)
				done <- answer{err: fmt.Errorf("%s: groups of %q: resolver panicked: %v", c.opts.Name, user, p)}
			}
		}()
		info, err := c.r.Resolve(ctx, user)
		done <- answer{info: info, err: err}
	}()
	var a answer
	select {
	case a = <-done:
		if a.err != nil && ctx.Err() != nil && errors.Is(a.err, context.DeadlineExceeded) {
			c.timeouts.Add(1)
			a.err = fmt.Errorf("%s: groups of %q: no answer within %v: %w", c.opts.Name, user, c.opts.Timeout, a.err)
		}
	case <-ctx.Done():
		c.timeouts.Add(1)
		a.err = fmt.Errorf("%s: groups of %q: no answer within %v: %w", c.opts.Name, user, c.opts.Timeout, ctx.Err())
	}
	d := time.Since(start)
	c.callTime.Add(int64(d))
	if a.err != nil {
		c.failures.Add(1)
	}
	if c.opts.ObserveCall != nil {
		c.opts.ObserveCall(d, a.err)
	}
	return a.info, a.err
}

// put stores e, evicting an entry if the cache is full. c.mu is held.
func (c *Cache) put(e *entry, now time.Time) {
	if cur := c.lookup(e.user); cur != nil {
		e.slot = cur.slot
		c.ring[e.slot] = e
		c.tab.store(e)
		return
	}
	if len(c.ring) >= c.opts.MaxEntries {
		c.evictOne(now)
		c.evict.Add(1)
	}
	e.slot = len(c.ring)
	c.ring = append(c.ring, e)
	c.tab.store(e)
}

// evictOne removes one entry with the clock algorithm. c.mu is held and the
// cache is not empty.
func (c *Cache) evictOne(now time.Time) {
	for {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		v := c.ring[c.hand]
		if !now.Before(v.keep) || !v.ref.Swap(false) {
			c.remove(v) // the last entry moves to the hand, to be looked at next
			return
		}
		c.hand++
	}
}

// remove deletes e, if not nil. c.mu is held.
func (c *Cache) remove(e *entry) {
	if e == nil {
		return
	}
	last := c.ring[len(c.ring)-1]
	c.ring[e.slot] = last
	last.slot = e.slot
	c.ring[len(c.ring)-1] = nil
	c.ring = c.ring[:len(c.ring)-1]
	c.tab.remove(e.user)
}

// Invalidate forgets what the cache knows about user: the next lookup asks
// the resolver, and a call already under way will not store its answer.
func (c *Cache) Invalidate(user string) {
	c.mu.Lock()
	c.remove(c.lookup(user))
	c.gen.Add(1)
	c.mu.Unlock()
	c.group.Forget(user)
}

// Len returns the number of users held, including expired entries not yet
// evicted or replaced.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ring)
}

// Stats returns the cache's counters. Each is read atomically; the set is
// not a snapshot taken at one instant.
func (c *Cache) Stats() Stats {
	s := Stats{
		Misses:    c.misses.Load(),
		Cancelled: c.cancelled.Load(),
		Calls:     c.calls.Load(),
		Failures:  c.failures.Load(),
		Timeouts:  c.timeouts.Load(),
		Panics:    c.panics.Load(),
		Fallbacks: c.fallbacks.Load(),
		CallTime:  time.Duration(c.callTime.Load()),
		Evictions: c.evict.Load(),
	}
	for i := range c.stripes {
		st := &c.stripes[i]
		s.Hits += st.hits.Load()
		s.NegativeHits += st.negHits.Load()
		s.StaleHits += st.staleHits.Load()
	}
	return s
}
