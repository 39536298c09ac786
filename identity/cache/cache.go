// Package cache keeps the answers of an identity.Resolver for a while, so
// that a directory server is asked about a user once per TTL instead of once
// per request. A *Cache is itself an identity.Resolver.
//
// Rules this package enforces:
//   - A success is kept for PositiveTTL, a failure (an unknown user, a
//     timeout, a panic) for NegativeTTL and returned as it is, so callers
//     fail closed.
//   - Concurrent lookups of a user share one resolver call, on a context
//     detached from the callers' and limited by Timeout: a caller that
//     gives up gets its ctx.Err() and does not cancel the others.
//   - A panicking resolver is an error, never a crash.
//   - With StaleTTL, an outage does not lock users out at once: the last
//     good answer serves up to StaleTTL past its expiry while the resolver
//     is retried in the background. "Unknown user" is not an outage.
//   - At most MaxEntries users are kept.
//   - Answers are shared: nobody modifies a cached Info.
package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/defaults"
	"github.com/usherhq/usher/internal/ttlcache"
)

// Options tune a Cache (a usergroupresolver's cache block, but Name and
// Timeout). The zero value of every field means its default.
type Options struct {
	Name        string        `yaml:"-"`           // the resolver in the cache's own errors; default "resolver"
	PositiveTTL time.Duration `yaml:"positivettl"` // default 300s; negative: successes are not kept
	NegativeTTL time.Duration `yaml:"negativettl"` // also the retry interval while stale; default 30s; negative: not kept
	StaleTTL    time.Duration `yaml:"stalettl"`    // default 0: off
	MaxEntries  int           `yaml:"maxentries"`  // default 10,000
	Timeout     time.Duration `yaml:"-"`           // one resolver call, abandoned then; default 10s
}

// Stats are the counters of a Cache since it was made. Every lookup is
// counted in exactly one of Hits, NegativeHits, StaleHits and Misses.
type Stats struct {
	Hits         uint64 // a fresh cached success
	NegativeHits uint64 // a cached failure
	StaleHits    uint64 // the last good answer, while the resolver fails
	Misses       uint64 // waited for a resolver call

	Calls    uint64 // resolver calls, background refreshes included
	Failures uint64 // errors, timeouts, panics
	CallTime time.Duration

	Evictions uint64 // entries removed to stay within MaxEntries
}

// Cache is an identity.Resolver that caches the answers of another one, safe for concurrent use.
type Cache struct {
	r    identity.Resolver
	opts Options
	now  func() time.Time
	tab  *ttlcache.Cache[*entry] // user name -> entry

	hits, negHits, staleHits, misses, calls, failures, evict atomic.Uint64
	callTime                                                 atomic.Int64

	// refreshed, set by tests, is called after a background refresh.
	refreshed func(user string)
}

// entry is the cached answer for one user; apart from the atomics, never
// modified once stored.
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
	opts.Name = cmp.Or(opts.Name, "resolver")
	opts.PositiveTTL = cmp.Or(opts.PositiveTTL, 300*time.Second)
	opts.NegativeTTL = cmp.Or(opts.NegativeTTL, 30*time.Second)
	opts.StaleTTL = max(opts.StaleTTL, 0)
	defaults.Positive(&opts.MaxEntries, 10000)
	defaults.Positive(&opts.Timeout, 10*time.Second)
	return &Cache{r: r, opts: opts, now: time.Now, tab: ttlcache.New[*entry](opts.MaxEntries, time.Now)}
}

// Resolve returns the groups of user, cached or asked; the Info is shared: do not modify it.
func (c *Cache) Resolve(ctx context.Context, user string) (identity.Info, error) {
	now := c.now()
	if e, ok := c.tab.Get(user, now); ok && c.serve(e, user, now) {
		if e.err != nil {
			return identity.Info{}, e.err
		}
		return e.info, nil
	}
	c.misses.Add(1)
	a, err := c.tab.Do(ctx, user, func(ctx context.Context) (*entry, error) { return c.fill(ctx, user), nil })
	if err != nil {
		return identity.Info{}, err // ctx ended first
	}
	return a.info, a.err
}

// serve reports whether e answers from the cache, fresh or stale (starting
// a refresh when a retry is due), and counts the hit.
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
// under key, counting a hit, when Resolve would answer from the cache; else
// ok is false. in is the cache's own copy: do not modify it. The engine
// keeps a user's acl.Subject so, once per answer and generation.
func (c *Cache) Attached(user string, key uint64) (in *identity.Info, v any, ok bool) {
	now := c.now()
	e, found := c.tab.Get(user, now)
	if !found || e.err != nil {
		return nil, nil, false
	}
	if a := e.att.Load(); a != nil && a.key == key && c.serve(e, user, now) {
		return &e.info, a.v, true
	}
	return nil, nil, false
}

// Attach keeps v with user's cached answer under key if the cache still
// holds in (the same slices Resolve returned), so that a newer answer is
// never paired with what was worked out from an older one.
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

// refresh retries the resolver for a user served stale answers.
func (c *Cache) refresh(user string) {
	_, _ = c.tab.Do(context.Background(), user, func(ctx context.Context) (*entry, error) { return c.fill(ctx, user), nil })
	if c.refreshed != nil {
		c.refreshed(user)
	}
}

// fill asks the resolver about user unless a fresh answer arrived
// meanwhile, stores the outcome and returns what the callers get.
func (c *Cache) fill(ctx context.Context, user string) *entry {
	now := c.now()
	if e, ok := c.tab.Get(user, now); ok && now.Before(e.expires) {
		// A call that ended just before this one began stored it.
		return e
	}

	// What is stored must not keep a request's body alive.
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

// call runs one resolver call for user on ctx limited by Timeout, a panic an error.
func (c *Cache) call(ctx context.Context, user string) (identity.Info, error) {
	c.calls.Add(1)
	start := time.Now() // the real clock: the cache's may be fake
	info, err := ttlcache.Call(ctx, c.opts.Timeout, func(ctx context.Context) (identity.Info, error) { return c.r.Resolve(ctx, user) })
	switch {
	case errors.Is(err, ttlcache.ErrPanic):
		err = fmt.Errorf("%s: groups of %q: resolver %w", c.opts.Name, user, err)
	case errors.Is(err, ttlcache.ErrTimeout):
		err = fmt.Errorf("%s: groups of %q: %w", c.opts.Name, user, err)
	}
	c.callTime.Add(int64(time.Since(start)))
	if err != nil {
		c.failures.Add(1)
	}
	return info, err
}

// Stats returns the cache's counters, each read atomically.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits:         c.hits.Load(),
		NegativeHits: c.negHits.Load(),
		StaleHits:    c.staleHits.Load(),
		Misses:       c.misses.Load(),
		Calls:        c.calls.Load(),
		Failures:     c.failures.Load(),
		CallTime:     time.Duration(c.callTime.Load()),
		Evictions:    c.evict.Load(),
	}
}
