package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The Go runtime's soft memory limit of usher serve (docs/limits.md).
const (
	memoryLimitAuto = "auto" // the default of --memory-limit: from the container's
	// containerShare is the share of the container's memory limit the Go heap
	// may use before the collector works harder; the rest is for what the runtime
	// does not count (stacks, TLS and HTTP/2 buffers) and a reload's two configurations.
	containerShare = 0.5
	fallbackLimit  = 128 << 20 // outside a container with a memory limit
)

// memoryLimit is the soft limit usher serve sets and why: GOMEMLIMIT wins
// (the runtime has read it; 0 is returned), then --memory-limit.
func memoryLimit(flag string, lookupEnv func(string) (string, bool), cgroup memlimit.Provider) (limit int64, why string, err error) {
	if v, _ := lookupEnv("GOMEMLIMIT"); v != "" {
		return 0, "GOMEMLIMIT=" + v, nil
	}
	if flag != memoryLimitAuto {
		q, err := resource.ParseQuantity(flag)
		if err != nil || q.Sign() < 0 {
			return 0, "", fmt.Errorf("--memory-limit %q: want a quantity such as 128Mi, or auto", flag)
		}
		return q.Value(), "--memory-limit " + flag, nil
	}
	c, err := cgroup()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit), err == nil && c == 0:
		return fallbackLimit, "no container memory limit", nil
	case err != nil:
		// Not in a cgroup this process can read (or not on Linux).
		return fallbackLimit, "container memory limit unknown: " + err.Error(), nil
	}
	return int64(float64(c) * containerShare), fmt.Sprintf("%.0f%% of the container's memory limit %d", containerShare*100, c), nil
}

// setMemoryLimit applies memoryLimit to the runtime and logs the result.
// Unless GOGC is set, the heap may grow to an eighth of the soft limit
// before a collection (holdHeapFloor); past that, Go's default GC percent:
// a fixed larger GOGC would multiply a large configuration's heap.
func setMemoryLimit(flag string, lookupEnv func(string) (string, bool), log *slog.Logger) error {
	limit, why, err := memoryLimit(flag, lookupEnv, memlimit.FromCgroup)
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	limit = debug.SetMemoryLimit(-1)
	var floor uint64
	if v, _ := lookupEnv("GOGC"); v == "" && limit < math.MaxInt64 {
		floor = uint64(limit / 8)
		holdHeapFloor(floor)
	}
	log.Info("Go memory limit", "limit", limit, "from", why, "heapFloor", floor)
	return nil
}

// heapFloor is the heap goal holdHeapFloor keeps to; 0 stops it.
var heapFloor atomic.Uint64

// holdHeapFloor keeps the collector's goal at floor or above while the live
// heap is small. Go's smallest goal is 4 MiB: with a small configuration
// usher serve then collected every few hundred reviews, and those cycles'
// fixed costs were a large share of a review's CPU (docs/benchmarks.md,
// "Close to the wire"). Go has no minimum goal, so the GC percent is set
// again after every cycle, from the heap that cycle found live.
func holdHeapFloor(floor uint64) {
	if heapFloor.Swap(floor) == 0 && floor > 0 {
		setGCPercent(0)
	}
}

func setGCPercent(int) {
	floor := heapFloor.Load()
	if floor == 0 {
		debug.SetGCPercent(100)
		return
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	debug.SetGCPercent(gcPercent(live[0].Value.Uint64(), floor))
	runtime.AddCleanup(new([16]byte), setGCPercent, 0) // runs after the next cycle
}

// gcPercent is the GC percent whose goal, live × (1 + percent/100), is
// floor, and never below Go's default of 100.
func gcPercent(live, floor uint64) int {
	if live == 0 || live*2 >= floor {
		return 100
	}
	return int(floor*100/live - 100)
}
