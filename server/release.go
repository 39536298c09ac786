package server

import (
	"runtime/debug"
	"sync"
)

// releaseMemory returns the replaced generation's memory to the system on a
// goroutine of its own, so RSS comes back down after every reload
// (docs/benchmarks.md); reloads meanwhile fold into one more run.
func releaseMemory() {
	releaseOnce.Do(func() {
		go func() {
			for range releaseWanted {
				debug.FreeOSMemory()
			}
		}()
	})
	select {
	case releaseWanted <- struct{}{}:
	default: // a run is already due; it frees this generation too
	}
}

var (
	releaseOnce   sync.Once
	releaseWanted = make(chan struct{}, 1)
)
