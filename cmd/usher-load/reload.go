package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher/hack/queuegen"
)

// genConfig returns a usher configuration of queues queues (root, 10
// teams per department, 9 leaves per team) holding entries ACL entries,
// half users and half groups: the configuration of config's
// BenchmarkLoad10kQueues. variant is written into root's submit ACL, so
// that configurations of different variants differ.
func genConfig(queues, entries, variant int) []byte {
	return queuegen.Config(queues, entries, func(n int, users, _ []string) {
		if n == 0 {
			users[0] = fmt.Sprintf("variant%d", variant)
		}
	})
}

// reloadConfig drives reloads of a running usher serve.
type reloadConfig struct {
	addr  string
	roots *x509.CertPool
	// path is the configuration file usher serve watches; it is
	// rewritten (to a temporary file, then renamed) reloads times.
	path    string
	reloads int
	queues  int
	entries int
	// conns clients send pod reviews all along.
	conns int
	pid   int
	// settle is how long to wait after the load stops before the last
	// sample.
	settle time.Duration
	// releaseWait is how long to wait after each reload is in service
	// before sampling VmRSS.
	releaseWait time.Duration
}

type reloadResult struct {
	// startRSS is usher's VmRSS before the first reload, under load.
	startRSS int64
	// rss[i] is VmRSS right after reload i+1 was put in service.
	rss []int64
	// idleRSS is VmRSS settle after the load stopped; hwm is VmHWM then.
	idleRSS, hwm  int64
	reloadTimes   []time.Duration
	reviewsOK     int64
	reviewsFailed int64
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// median of the RSS samples of reloads from to to (1-based, inclusive).
func (r *reloadResult) median(from, to int) int64 {
	s := slices.Clone(r.rss[from-1 : to])
	slices.Sort(s)
	return s[len(s)/2]
}

func (r *reloadResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "VmRSS before the first reload %.1f MiB; after reloads", mib(r.startRSS))
	for i, v := range r.rss {
		if i < 3 || (i+1)%10 == 0 {
			fmt.Fprintf(&b, " %d: %.1f", i+1, mib(v))
		}
	}
	n := len(r.rss)
	if n >= 20 {
		fmt.Fprintf(&b, " MiB\nmedian VmRSS after reloads 6-15 %.1f MiB, %d-%d %.1f MiB", mib(r.median(6, 15)), n-9, n, mib(r.median(n-9, n)))
	}
	times := slices.Clone(r.reloadTimes)
	slices.Sort(times)
	if len(times) > 0 {
		fmt.Fprintf(&b, "\nreload (write to /readyz showing it) median %v, max %v", times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\nidle VmRSS %.1f MiB, VmHWM %.1f MiB; reviews %d ok, %d failed", mib(r.idleRSS), mib(r.hwm), r.reviewsOK, r.reviewsFailed)
	return b.String()
}

// reloads rewrites cfg.path cfg.reloads times, each time waiting until
// usher's /readyz names the new file's digest, while cfg.conns clients
// send pod reviews, and samples usher's memory after every reload.
func reloads(cfg reloadConfig) (*reloadResult, error) {
	res := &reloadResult{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for range cfg.conns {
		wg.Go(func() {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cfg.roots}, MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			body := []byte(review)
			for ctx.Err() == nil {
				resp, err := client.Post("https://"+cfg.addr+"/mutate", "application/json", bytes.NewReader(body))
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	stop := func() {
		cancel()
		wg.Wait()
		res.reviewsOK, res.reviewsFailed = ok.Load(), failed.Load()
	}
	time.Sleep(time.Second)
	res.startRSS, _, _ = readRSS(cfg.pid)
	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cfg.roots}}, Timeout: 5 * time.Second}
	for i := 1; i <= cfg.reloads; i++ {
		data := genConfig(cfg.queues, cfg.entries, i)
		sum := sha256.Sum256(data)
		short := hex.EncodeToString(sum[:6])
		tmp := cfg.path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			stop()
			return res, err
		}
		t0 := time.Now()
		if err := os.Rename(tmp, cfg.path); err != nil {
			stop()
			return res, err
		}
		for {
			if time.Since(t0) > time.Minute {
				stop()
				return res, fmt.Errorf("reload %d: /readyz does not show sha256 %s after a minute", i, short)
			}
			resp, err := probe.Get("https://" + cfg.addr + "/readyz")
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if bytes.Contains(b, []byte(short)) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		res.reloadTimes = append(res.reloadTimes, time.Since(t0))
		// usher returns the replaced generation's memory right after the
		// new one is in service, on a goroutine of its own: sample after it.
		time.Sleep(cfg.releaseWait)
		rss, _, err := readRSS(cfg.pid)
		if err != nil {
			stop()
			return res, err
		}
		res.rss = append(res.rss, rss)
	}
	stop()
	time.Sleep(cfg.settle)
	var err error
	res.idleRSS, res.hwm, err = readRSS(cfg.pid)
	return res, err
}
