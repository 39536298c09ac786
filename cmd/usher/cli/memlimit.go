package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The Go runtime's soft memory limit of usher serve (docs/limits.md, "The
// Go runtime's soft limit").
const (
	// memoryLimitAuto, the default of --memory-limit, derives the limit
	// from the container's.
	memoryLimitAuto = "auto"
	// containerShare is the share of the container's memory limit (its
	// cgroup's memory.max, or memory.limit_in_bytes under cgroup v1)
	// that the Go heap may use before the collector works harder: the
	// rest is for what the runtime does not count (goroutine stacks,
	// TLS and HTTP/2 buffers, the binary) and for the peak of a reload,
	// which holds two configurations for a moment.
	containerShare = 0.5
	// fallbackLimit is the limit when the process runs in no container
	// with a memory limit.
	fallbackLimit = 128 << 20
)

// memoryLimit is the soft limit usher serve sets and why: GOMEMLIMIT in
// the environment wins (the runtime has read it; 0 is returned), then an
// explicit --memory-limit quantity ("0": none), then, for "auto", the
// container's limit read from its cgroup by cgroup, times
// containerShare, or fallbackLimit when there is no container limit.
func memoryLimit(flag string, getenv func(string) string, cgroup memlimit.Provider) (limit int64, why string, err error) {
	if v := getenv("GOMEMLIMIT"); v != "" {
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

// setMemoryLimit applies memoryLimit to the runtime and logs the result;
// an invalid --memory-limit is an error. GOGC in the environment is left
// to the runtime; otherwise Go's default (100) stays: the soft limit, not
// a larger GOGC, is what lets the heap grow, so that a large
// configuration cannot make the heap a multiple of itself.
func setMemoryLimit(flag string, getenv func(string) string, log *slog.Logger) error {
	limit, why, err := memoryLimit(flag, getenv, memlimit.FromCgroup)
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	log.Info("Go memory limit", "limit", debug.SetMemoryLimit(-1), "from", why)
	return nil
}
