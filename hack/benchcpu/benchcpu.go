// Package benchcpu reports, beside a benchmark's wall time, the CPU time
// its own thread spent per operation (cpu-ns/op). On a machine shared
// with other work the wall time counts the time the benchmark waited for
// a core; the thread's CPU time does not, so it is the steadier figure of
// what an operation costs. Both are reported; neither replaces the other.
package benchcpu

import (
	"runtime"
	"testing"
)

// Meter measures the CPU time of the calling goroutine's thread, to
// which Start locks the goroutine until Stop.
type Meter struct{ start int64 }

// Start locks the goroutine to its thread and starts measuring.
func Start() Meter {
	runtime.LockOSThread()
	return Meter{threadNanos()}
}

// Stop reports the thread's CPU time since Start divided by ops as
// cpu-ns/op, and unlocks the thread. Where the thread's CPU time cannot
// be read, it reports nothing.
func (m Meter) Stop(b *testing.B, ops int) {
	end := threadNanos()
	runtime.UnlockOSThread()
	if m.start < 0 || end < 0 || ops <= 0 {
		return
	}
	b.ReportMetric(float64(end-m.start)/float64(ops), "cpu-ns/op")
}
