package server

import "runtime/debug"

// releaseMemory returns the memory of the generation a reload replaced
// to the operating system at once, rather than as the runtime's scavenger
// gets to it, so that the resident memory of usher serve comes back down
// after every reload (docs/benchmarks.md, "Loading and memory"). It costs
// one collection per reload, on the reloading goroutine.
func releaseMemory() { debug.FreeOSMemory() }
