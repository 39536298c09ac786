package server

import (
	"runtime/debug"
	"sync"
)

// releaseMemory returns the replaced generation's memory to the operating
// system soon, so RSS comes back down after every reload
// (docs/benchmarks.md). The full collection runs on a goroutine of its
// own, and reloads that come meanwhile fold into one more run.
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
