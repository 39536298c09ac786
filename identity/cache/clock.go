package cache

import (
	"sync/atomic"
	"time"
)

// tick is how often the clock of a Cache made by New advances: TTLs are
// honoured to within this much.
const tick = 100 * time.Millisecond

// coarseClock is a clock that its own goroutine advances every tick, so
// that the hit path reads an atomic instead of the system clock. Reading
// the system clock costs about 20ns on bare metal and 150ns and more in
// some virtual machines (it was most of the cost of a hit where usher was
// benchmarked). Its times carry a monotonic reading, so stepping the wall
// clock does not move expiries.
type coarseClock struct {
	base time.Time
	// cur is the time as of the last tick (base plus the time since, so
	// it carries base's monotonic reading), worked out once per tick
	// rather than on every read: time.Time.Add on every read was a tenth
	// of a cache hit.
	cur  atomic.Pointer[time.Time]
	stop chan struct{}
	done chan struct{} // closed when the goroutine has ended
}

// startClock starts a coarseClock advancing every step. Close its stop
// channel to end its goroutine.
func startClock(step time.Duration) *coarseClock {
	k := &coarseClock{base: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	k.cur.Store(&k.base)
	go k.run(step)
	return k
}

func (k *coarseClock) run(step time.Duration) {
	defer close(k.done)
	t := time.NewTicker(step)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
			now := k.base.Add(time.Since(k.base))
			k.cur.Store(&now)
		}
	}
}

// now returns the time as of the last tick.
func (k *coarseClock) now() time.Time {
	return *k.cur.Load()
}
