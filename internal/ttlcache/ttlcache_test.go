package ttlcache

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A value is served before its keep time only; a full cache evicts the
// least recently used entry.
func TestKeepAndEviction(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New[int](2, func() time.Time { return now })
	c.Put("a", 1, now.Add(time.Minute))
	c.Put("b", 2, now.Add(time.Hour))
	if v, ok := c.Get("a", now); !ok || v != 1 {
		t.Fatalf("a = %v, %v", v, ok)
	}
	if c.Put("c", 3, now.Add(time.Hour)) != true { // a was served: b goes
		t.Fatal("no eviction in a full cache")
	}
	if _, ok := c.Get("b", now); ok {
		t.Fatal("b, never served, survived")
	}
	now = now.Add(2 * time.Minute)
	if _, ok := c.Get("a", now); ok {
		t.Fatal("a served past its keep time")
	}
	c.Get("c", now)
	c.Put("d", 4, now.Add(time.Hour)) // c was served after a: a goes
	if _, ok := c.Get("c", now); !ok || c.Len() != 2 {
		t.Fatalf("c evicted in place of a; %d kept", c.Len())
	}
}

// A caller of Do that gives up gets its ctx.Err() at once, and the call
// goes on, on a context its cancellation does not end.
func TestDoDetachesTheCall(t *testing.T) {
	c := New[int](10, nil)
	caller, cancel := context.WithCancel(context.Background())
	inner, returned := make(chan error, 1), make(chan struct{})
	_, err := c.Do(caller, "k", func(ctx context.Context) (int, error) {
		cancel()
		<-caller.Done()
		inner <- ctx.Err()
		<-returned
		return 0, nil
	})
	close(returned)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller who gave up: %v", err)
	}
	if err := <-inner; err != nil {
		t.Fatalf("the call's context ended with its caller's: %v", err)
	}
}

// Call abandons an f that ignores its context at the timeout, and turns
// a panic into an error.
func TestCall(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	_, err := Call(context.Background(), time.Millisecond, func(context.Context) (int, error) { <-block; return 1, nil })
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || err.Error() != "no answer within 1ms: context deadline exceeded" {
		t.Fatalf("timeout: %v", err)
	}
	_, err = Call(context.Background(), time.Second, func(context.Context) (int, error) { panic("boom") })
	if !errors.Is(err, ErrPanic) || err.Error() != "panicked: boom" {
		t.Fatalf("panic: %v", err)
	}
	own := errors.New("own")
	if _, err = Call(context.Background(), time.Second, func(context.Context) (int, error) { return 0, own }); err != own {
		t.Fatalf("an error of f's own: %v", err)
	}
}
