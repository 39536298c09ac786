package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/cache"
)

// TestCacheDoesNotRetainCallersMemory: the name a caller asks about may
// be a substring of a far larger buffer (a request's body, read without
// copying). The entry the cache keeps, under that name, for the positive
// or the negative TTL, must not keep the buffer alive.
func TestCacheDoesNotRetainCallersMemory(t *testing.T) {
	const users = 40
	const body = 1 << 20
	dir := resolverFunc(func(_ context.Context, user string) (identity.Info, error) {
		if strings.HasPrefix(user, "unknown-") {
			return identity.Info{}, fmt.Errorf("dir: %w", identity.ErrUnknownUser)
		}
		return identity.Info{User: user, Groups: []string{"dev"}}, nil
	})
	c := cache.New(dir, cache.Options{})
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range users {
		name := fmt.Sprintf("user-%d", i)
		if i%2 == 1 {
			name = fmt.Sprintf("unknown-%d", i)
		}
		s := string([]byte(strings.Repeat("x", body) + name))
		_, _ = c.Resolve(context.Background(), s[body:])
	}
	after := heap()
	if n := c.Len(); n != users {
		t.Fatalf("%d entries, want %d", n, users)
	}
	runtime.KeepAlive(c)
	if grown := int64(after) - int64(before); grown > users*body/4 {
		t.Fatalf("the heap grew by %d bytes after %d lookups of names in %d-byte buffers: the cache keeps the buffers alive", grown, users, body)
	}
}
