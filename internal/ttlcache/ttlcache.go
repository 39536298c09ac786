// Package ttlcache is usher's one cache of answers by key, for the group
// cache (identity/cache) and the API server's answers (auth): each value kept
// until a time its caller chooses, at most a fixed number of them (the least
// recently used goes), and one call per missing key shared by all its
// concurrent callers, detached from them, bounded in time, a panic an error.
package ttlcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"
)

// ErrTimeout (with context.DeadlineExceeded) and ErrPanic are wrapped by
// the error of a call that did not answer within its timeout or panicked.
var (
	ErrTimeout = errors.New("no answer")
	ErrPanic   = errors.New("panicked")
)

// Cache holds values of type V by key. It is safe for concurrent use.
type Cache[V any] struct {
	now   func() time.Time
	group singleflight.Group
	lru   *lru.Cache // key -> kept[V]

	mu      sync.Mutex // held by Put and Delete, whose lru calls may evict
	evicted bool
}

type kept[V any] struct {
	v    V
	keep time.Time // served before keep
}

// New returns a cache of at most size values (at least one), reading the
// time from now (time.Now when nil).
func New[V any](size int, now func() time.Time) *Cache[V] {
	if now == nil {
		now = time.Now
	}
	c := &Cache[V]{now: now}
	c.lru = lru.NewWithEvictionFunc(max(size, 1), func(lru.Key, any) { c.evicted = true })
	return c
}

// Get returns key's value if it is kept and now is before its keep time.
// now is the caller's reading of the cache's clock.
func (c *Cache[V]) Get(key string, now time.Time) (v V, ok bool) {
	e, ok := c.lru.Get(key)
	if !ok || !now.Before(e.(kept[V]).keep) {
		return v, false
	}
	return e.(kept[V]).v, true
}

// Put keeps v for key until keep, in place of key's value. When the cache
// is full, the least recently used value goes; evicted says one did.
func (c *Cache[V]) Put(key string, v V, keep time.Time) (evicted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evicted = false
	c.lru.Add(key, kept[V]{v, keep})
	return c.evicted
}

// Delete drops key's value and forgets a call under way for key, so that
// the next Do calls again.
func (c *Cache[V]) Delete(key string) {
	c.mu.Lock()
	c.lru.Remove(key)
	c.mu.Unlock()
	c.group.Forget(key)
}

// Len returns the number of values kept, expired ones included.
func (c *Cache[V]) Len() int { return c.lru.Len() }

// Do returns what fill returns for key, calling it once for all the
// concurrent callers of key, on a context detached from ctx (its values
// kept), so that a caller who gives up does not fail the others: that
// caller gets ctx.Err() at once and fill goes on.
func (c *Cache[V]) Do(ctx context.Context, key string, fill func(context.Context) (V, error)) (v V, err error) {
	if err = ctx.Err(); err != nil {
		return v, err
	}
	ch := c.group.DoChan(key, func() (any, error) { return fill(context.WithoutCancel(ctx)) })
	select {
	case r := <-ch:
		v, _ = r.Val.(V)
		return v, r.Err
	case <-ctx.Done():
		return v, ctx.Err()
	}
}

// Call runs f on ctx bounded by timeout, in a goroutine of its own, so
// that an f that ignores its context is abandoned at the timeout (its
// goroutine left to finish). The error of a call that timed out wraps
// ErrTimeout and context.DeadlineExceeded; of one that panicked, ErrPanic.
func Call[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("%w: %v", ErrPanic, p)}
			}
		}()
		v, err := f(ctx)
		done <- result{v, err}
	}()
	var r result
	select {
	case r = <-done:
		if r.err == nil || ctx.Err() == nil || !errors.Is(r.err, context.DeadlineExceeded) {
			return r.v, r.err
		}
	case <-ctx.Done():
		r.err = ctx.Err()
	}
	var zero T
	return zero, fmt.Errorf("%w within %v: %w", ErrTimeout, timeout, r.err)
}

// Fetch returns key's value: the one kept, or what fetch returns, called
// through Do and Call (once for all concurrent callers, detached, bounded
// by timeout); a value fetched is kept for ttl of it when that is
// positive. Errors are never kept.
func (c *Cache[V]) Fetch(ctx context.Context, key string, timeout time.Duration, ttl func(V) time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	if v, ok := c.Get(key, c.now()); ok {
		return v, nil
	}
	return c.Do(ctx, key, func(ctx context.Context) (V, error) {
		v, err := Call(ctx, timeout, fetch)
		if d := ttl(v); err == nil && d > 0 {
			c.Put(key, v, c.now().Add(d))
		}
		return v, err
	})
}
