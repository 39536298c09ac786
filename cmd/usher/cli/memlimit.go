package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

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
// GOGC stays Go's default unless set: the soft limit, not a larger GOGC,
// lets the heap grow, so a large configuration cannot multiply it.
func setMemoryLimit(flag string, lookupEnv func(string) (string, bool), log *slog.Logger) error {
	limit, why, err := memoryLimit(flag, lookupEnv, memlimit.FromCgroup)
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	log.Info("Go memory limit", "limit", debug.SetMemoryLimit(-1), "from", why)
	return nil
}
