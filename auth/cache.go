package auth

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// cache keeps the API server's answers for a while. It is bounded: when
// full, expired entries go first, then arbitrary ones, so a caller sending
// a new invented credential each time cannot grow it.
type cache[V any] struct {
	fetchTimeout time.Duration
	max          int
	now          func() time.Time

	mu      sync.Mutex
	entries map[string]cacheEntry[V]
	group   singleflight.Group
}

type cacheEntry[V any] struct {
	v       V
	expires time.Time
}

func newCache[V any](max int, fetchTimeout time.Duration, now func() time.Time) *cache[V] {
	if now == nil {
		now = time.Now
	}
	return &cache[V]{max: max, fetchTimeout: fetchTimeout, now: now, entries: map[string]cacheEntry[V]{}}
}

// get returns the cached value of key or calls fetch once for all
// concurrent callers. fetch runs on a context detached from ctx (one
// caller giving up does not fail the others) bounded by the fetch
// timeout; a panic in it is returned as an error. ttl says how long a
// value is kept (0: not at all); errors are never kept.
func (c *cache[V]) get(ctx context.Context, key string, ttl func(V) time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		if c.now().Before(e.expires) {
			c.mu.Unlock()
			return e.v, nil
		}
		delete(c.entries, key)
	}
	c.mu.Unlock()
	ch := c.group.DoChan(key, func() (v any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.fetchTimeout)
		defer cancel()
		val, err := fetch(fctx)
		if err != nil {
			return val, err
		}
		if d := ttl(val); d > 0 {
			c.put(key, val, d)
		}
		return val, nil
	})
	select {
	case r := <-ch:
		v, _ := r.Val.(V)
		return v, r.Err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

func (c *cache[V]) put(key string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = cacheEntry[V]{v: v, expires: now.Add(ttl)}
}

// len returns the number of entries (tests).
func (c *cache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
