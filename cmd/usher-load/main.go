// Command usher-load drives usher's /mutate endpoint over TLS with pod
// CREATE reviews from a fixed number of connections and reports throughput
// and latency percentiles. It only talks to the address it is given, which
// should be on loopback.
//
//	usher serve --addr 127.0.0.1:8443 --ca-out /tmp/ca.pem --no-audit --webhook-auth none &
//	usher-load --addr 127.0.0.1:8443 --ca /tmp/ca.pem --conns 16 --duration 10s
//
// With --serve-bare it is the ceiling instead: the same TLS stack answering
// a fixed body (docs/benchmarks.md, "Close to the wire"):
//
//	usher-load --serve-bare --addr 127.0.0.1:8444 --ca-out /tmp/bare.pem &
//	usher-load --addr 127.0.0.1:8444 --ca /tmp/bare.pem --conns 16 --duration 10s
//
// With --reloads it rewrites the configuration usher serve watches and
// samples usher's memory after each reload (docs/benchmarks.md, "Loading
// and memory"):
//
//	usher-load --reloads 50 --config /tmp/q.yaml --pid $(cat /tmp/usher.pid) --ca /tmp/ca.pem --conns 8
//
// With --slow-bodies it attacks usher's memory instead (docs/benchmarks.md,
// "Memory under a slow-body attack"):
//
//	usher-load --addr 127.0.0.1:8443 --ca /tmp/ca.pem --slow-bodies 64 --conns 4 --duration 12s --pid $(pgrep -n usher)
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const review = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
"uid":"UID","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
"namespace":"team-a","operation":"CREATE",
"userInfo":{"username":"alice","uid":"1a2b","groups":["dev","spark-users","system:authenticated"]},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"spark-exec-","namespace":"team-a",
"labels":{"app":"spark","queue":"root.dev","spark-role":"executor"},"annotations":{"prometheus.io/scrape":"true"}},
"spec":{"serviceAccountName":"spark","containers":[{"name":"executor","image":"spark:3.5","args":["executor"],
"resources":{"requests":{"cpu":"1","memory":"2Gi"}}}]}},"oldObject":null,"dryRun":false}}`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("usher-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8443", "usher's `HOST:PORT` (loopback)")
	caFile := fs.String("ca", "", "PEM `FILE` of the CA that signed usher's certificate (usher serve --ca-out)")
	conns := fs.Int("conns", 16, "concurrent connections")
	duration := fs.Duration("duration", 10*time.Second, "how long to send requests")
	maxRequests := fs.Int("max-requests", 5_000_000, "stop after this many requests")
	printReview := fs.Bool("print-review", false, "print the AdmissionReview sent (for other load tools) and exit")
	rate := fs.Float64("rate", 0, "target `REVIEWS/S` over all connections (0: as fast as possible); each connection paces its share")
	slow := fs.Int("slow-bodies", 0, "attack instead: `N` connections each send a --body-bytes body but its last byte and stall "+
		"(reconnecting when answered), while --conns clients send pod reviews and /healthz is polled; all must succeed")
	bodyBytes := fs.Int("body-bytes", 7<<20, "declared size of each slow body (usher's cap is 7 MiB)")
	configReviews := fs.Int("config-attacks", 0, "attack (with or without --slow-bodies): `N` clients send /validate-config reviews of ConfigMaps "+
		"naming /dev/zero as users-to-groups file and of the densest YAML, one after another")
	politely := fs.Bool("retry-after", false, "slow bodies refused with 429 wait for Retry-After (1s) before connecting again")
	pid := fs.Int("pid", 0, "usher's `PID`, to sample its VmRSS and VmHWM from /proc during an attack or reloads")
	bare := fs.Bool("serve-bare", false, "serve instead, at --addr, the ceiling /mutate is measured against: the same Go TLS stack "+
		"answering a fixed AdmissionReview response without deciding anything (certificate PEM to --ca-out)")
	caOut := fs.String("ca-out", "", "with --serve-bare: write the self-signed certificate's PEM to `FILE`")
	reloadCount := fs.Int("reloads", 0, "measure reloads instead: rewrite --config `N` times with a generated configuration "+
		"(--queues, --entries), waiting for usher's /readyz to show each, while --conns clients send reviews; samples --pid's memory")
	configPath := fs.String("config", "", "with --reloads: the configuration `FILE` usher serve watches (overwritten)")
	queues := fs.Int("queues", 10000, "with --reloads: queues of the generated configuration")
	entries := fs.Int("entries", 100000, "with --reloads: ACL entries of the generated configuration")
	h2 := fs.Bool("http2", false, "send the reviews over HTTP/2, as kube-apiserver calls webhooks (default HTTP/1.1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *printReview {
		fmt.Fprintln(stdout, strings.ReplaceAll(review, "\n", ""))
		return 0
	}
	if !strings.HasPrefix(*addr, "127.") && !strings.HasPrefix(*addr, "localhost") && !strings.HasPrefix(*addr, "[::1]") {
		fmt.Fprintln(stderr, "usher-load: refusing a non-loopback address")
		return 2
	}
	if *bare {
		return serveBare(*addr, *caOut, stderr)
	}
	roots := x509.NewCertPool()
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil || !roots.AppendCertsFromPEM(pem) {
			fmt.Fprintf(stderr, "usher-load: --ca %s: no certificate (%v)\n", *caFile, err)
			return 2
		}
	}
	if *reloadCount > 0 {
		if *configPath == "" || *pid == 0 {
			fmt.Fprintln(stderr, "usher-load: --reloads needs --config and --pid")
			return 2
		}
		res, err := reloads(reloadConfig{addr: *addr, roots: roots, path: *configPath, reloads: *reloadCount,
			queues: *queues, entries: *entries, conns: *conns, pid: *pid, settle: 5 * time.Second, releaseWait: 300 * time.Millisecond})
		fmt.Fprintln(stdout, res)
		if err != nil {
			fmt.Fprintln(stderr, "usher-load:", err)
			return 1
		}
		return 0
	}
	if *slow > 0 || *configReviews > 0 {
		res := attack(attackConfig{addr: *addr, roots: roots, conns: *slow, bodyBytes: *bodyBytes, duration: *duration,
			reviewers: *conns, pid: *pid, politely: *politely, configReviewers: *configReviews})
		fmt.Fprintln(stdout, res)
		for _, f := range res.failures {
			fmt.Fprintln(stderr, "usher-load:", f)
		}
		if res.reviewsFailed > 0 || res.healthFailed > 0 || res.reviewsOK == 0 || res.healthOK == 0 {
			return 1
		}
		return 0
	}
	url := "https://" + *addr + "/mutate"
	var sent atomic.Int64
	var failures atomic.Int64
	lat := make([][]time.Duration, *conns)
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range *conns {
		wg.Go(func() {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, ForceAttemptHTTP2: *h2}
			client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			defer tr.CloseIdleConnections()
			body := []byte(review)
			var every time.Duration
			if *rate > 0 {
				every = time.Duration(float64(*conns) / *rate * float64(time.Second))
			}
			next := time.Now()
			for i := 0; time.Now().Before(deadline) && sent.Add(1) <= int64(*maxRequests); i++ {
				if every > 0 {
					next = next.Add(every)
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
				}
				t0 := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					failures.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"allowed":true`)) {
					failures.Add(1)
					continue
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) == 0 {
		fmt.Fprintf(stderr, "usher-load: no successful request (%d failures)\n", failures.Load())
		return 1
	}
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*p))] }
	fmt.Fprintf(stdout, "requests %d ok, %d failed in %.1fs over %d connections\n", len(all), failures.Load(), elapsed.Seconds(), *conns)
	fmt.Fprintf(stdout, "throughput %.0f reviews/s\n", float64(len(all))/elapsed.Seconds())
	fmt.Fprintf(stdout, "latency p50 %v  p90 %v  p99 %v  max %v\n", pct(0.50), pct(0.90), pct(0.99), all[len(all)-1])
	if failures.Load() > 0 {
		return 1
	}
	return 0
}
