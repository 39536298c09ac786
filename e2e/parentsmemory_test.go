//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/hack/queuegen"
)

// TestParentCacheMemory measures what the parent cache of propagators
// whose parents are pods costs usher serve: USHER_E2E_PARENT_PODS pods
// (e.g. 50000; the test is skipped without it) are created, then usher
// runs once without and once with such a propagator, and its steady
// VmRSS is compared (docs/benchmarks.md: 1,085 bytes a pod measured). It
// fails when the cache costs more than 1.25 KiB a pod, or usher with it,
// on a small configuration, passes 100 MB.
func TestParentCacheMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("USHER_E2E_PARENT_PODS"))
	if n <= 0 {
		t.Skip("USHER_E2E_PARENT_PODS is not set")
	}
	ctx := ctxFor(t, 30*time.Minute)
	admin := client(t, Admin)
	ns, err := cluster.NewNamespace(ctx, "parents", nil)
	if err != nil {
		t.Fatal(err)
	}
	stamp := map[string]string{UserInfoAnnotation: UserInfoJSON(Alice, "dev", "system:authenticated")}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				p := Pod(ns, fmt.Sprintf("p-%06d", i), stamp)
				if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	kubeconfig, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	steady := func(config string) int64 {
		e := startUsherWith(t, ctx, config, "--kubeconfig", kubeconfig)
		defer e.u.Close()
		var last, same int64
		for same < 5 {
			time.Sleep(time.Second)
			rss := vmRSS(t, e.u)
			if rss > last+last/100 || rss < last-last/100 {
				last, same = rss, 0
				continue
			}
			same++
		}
		time.Sleep(30 * time.Second) // the runtime returns freed memory gradually
		return vmRSS(t, e.u)
	}
	// USHER_E2E_PARENT_QUEUES=10000 measures both beside the configuration
	// of the 10,000-queue memory bar (docs/benchmarks.md) instead of one queue.
	base := baseConfig
	if q, _ := strconv.Atoi(os.Getenv("USHER_E2E_PARENT_QUEUES")); q > 0 {
		base = string(queuegen.Config(q, 10*q, nil)) + baseConfig[strings.Index(baseConfig, "admissionController:"):]
	}
	without := steady(base)
	with := steady(base + "    propagators: [{users: \"^system:serviceaccount:[^:]+:spark$\", parents: [Pod]}]\n")
	per := (with - without) / int64(n)
	t.Logf("%d pods: usher's steady VmRSS %.1f MiB without the parent cache, %.1f MiB with it: %d bytes a pod",
		n, float64(without)/(1<<20), float64(with)/(1<<20), per)
	if per > 1280 || with > 100_000_000 {
		t.Errorf("the parent cache costs %d bytes a pod, usher %d bytes: over 1.25 KiB a pod or 100 MB", per, with)
	}
}

// vmRSS reads usher's resident size.
func vmRSS(t *testing.T, u *UsherProcess) int64 {
	u.mu.Lock()
	cmd := u.cmd
	u.mu.Unlock()
	rss, err := procStatusBytes(cmd.Process.Pid, "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	return rss
}

// procStatusBytes reads a size (in kB) of /proc/PID/status, in bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
