package server

import (
	"runtime/debug"
	"sync"
)

// releaseMemory returns the memory of the generation a reload replaced
// to the operating system soon, rather than as the runtime's scavenger
// gets to it, so that the resident memory of usher serve comes back down
// after every reload (docs/benchmarks.md, "Loading and memory").
//
// debug.FreeOSMemory is a full collection: it runs on one goroutine of its
// own, off the reloading goroutine, and reloads that come while it runs
// are folded into one more run. A burst of reloads costs two collections,
// not one each (300 reloads in a row took minutes with one each).
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
