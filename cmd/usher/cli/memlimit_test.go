package cli

import (
	"errors"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

func TestMemoryLimit(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	container := memlimit.Limit(256 << 20)
	noLimit := func() (uint64, error) { return 0, memlimit.ErrNoLimit }
	unreadable := func() (uint64, error) { return 0, errors.New("no cgroup mount") }
	tests := []struct {
		flag   string
		lookup func(string) (string, bool)
		cgroup memlimit.Provider
		want   int64
		why    string
	}{
		{"auto", env(), container, 128 << 20, "50% of the container's memory limit 268435456"},
		{"auto", env(), memlimit.Limit(1 << 30), 512 << 20, "50%"},
		{"auto", env(), noLimit, 128 << 20, "no container memory limit"},
		{"auto", env(), unreadable, 128 << 20, "unknown: no cgroup mount"},
		{"200Mi", env(), container, 200 << 20, "--memory-limit 200Mi"},
		{"0", env(), container, 0, "--memory-limit 0"},
		{"auto", env("GOMEMLIMIT", "1GiB"), container, 0, "GOMEMLIMIT=1GiB"},
		{"64Mi", env("GOMEMLIMIT", "1GiB"), container, 0, "GOMEMLIMIT=1GiB"},
	}
	for _, tt := range tests {
		got, why, err := memoryLimit(tt.flag, tt.lookup, tt.cgroup)
		if err != nil || got != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: %d %q %v, want %d %q", tt.flag, got, why, err, tt.want, tt.why)
		}
	}
	for _, bad := range []string{"-1Mi", "lots", ""} {
		if _, _, err := memoryLimit(bad, env(), container); err == nil || !strings.Contains(err.Error(), "want a quantity") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestMemoryLimitFromThisCgroup reads the limit of the cgroup the test
// runs in through the library's reader of /proc/self/mountinfo and
// memory.max: whatever it finds, auto derives a positive limit.
func TestMemoryLimitFromThisCgroup(t *testing.T) {
	got, why, err := memoryLimit("auto", noEnv, memlimit.FromCgroup)
	if err != nil || got <= 0 {
		t.Fatalf("%d %q %v", got, why, err)
	}
	t.Logf("limit %d: %s", got, why)
}

func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{2 << 20, 16 << 20, 700},  // goal 16 MiB
		{8 << 20, 16 << 20, 100},  // Go's default already reaches the floor
		{40 << 20, 16 << 20, 100}, // a large configuration: never below the default
		{0, 16 << 20, 100},        // before the first cycle
	} {
		if got := gcPercent(c.live, c.floor); got != c.want {
			t.Errorf("gcPercent(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
	}
}

// TestHeapFloorFollowsEachCycle: after a collection the GC percent is the
// floor's, set again from the heap that cycle found live, and 100 once
// the floor is stopped.
func TestHeapFloorFollowsEachCycle(t *testing.T) {
	percent := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	t.Cleanup(func() { holdHeapFloor(0); runtime.GC(); debug.SetGCPercent(100) })
	holdHeapFloor(1 << 40) // far above any live heap of this test
	deadline := time.Now().Add(30 * time.Second)
	for percent() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d after collections with a floor of 1 TiB", percent())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	holdHeapFloor(0)
	for percent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d after the floor stopped, want 100", percent())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
