package cache

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/usherhq/usher/identity"
)

// TestClock checks the clock of New advances and that its goroutine ends
// once the cache is garbage. It waits for real time, up to a generous
// bound, because that is what it tests.
func TestClock(t *testing.T) {
	k := startClock(time.Millisecond)
	start := k.now()
	deadline := time.Now().Add(10 * time.Second)
	for !k.now().After(start) {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not advance in 10s")
		}
		time.Sleep(time.Millisecond)
	}
	if k.now().After(time.Now()) {
		t.Error("the clock is ahead of time")
	}
	// Expiries must not move when the wall clock is stepped: the clock's
	// times carry a monotonic reading, before and after a tick.
	if now := k.now(); now.Round(-1) == now || start.Round(-1) == start {
		t.Errorf("the clock's times carry no monotonic reading: %v, %v", start, now)
	}
	close(k.stop)
	<-k.done

	t.Run("stops with its cache", func(t *testing.T) {
		done := func() <-chan struct{} {
			c, k := newWithClock(identity.None(), Options{})
			if _, err := c.Resolve(context.Background(), "alice"); err != nil {
				t.Fatal(err)
			}
			return k.done
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			runtime.GC()
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatal("the clock goroutine outlived its cache")
			}
		}
	})
}
