// Command usher-load drives usher's /mutate endpoint over TLS with pod
// CREATE reviews from a fixed number of connections and reports throughput
// and latency percentiles. It only talks to the address it is given, which
// should be on loopback.
//
//	usher serve --addr 127.0.0.1:8443 --ca-out /tmp/ca.pem --no-audit &
//	usher-load --addr 127.0.0.1:8443 --ca /tmp/ca.pem --conns 16 --duration 10s
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
	politely := fs.Bool("retry-after", false, "slow bodies refused with 429 wait for Retry-After (1s) before connecting again")
	pid := fs.Int("pid", 0, "usher's `PID`, to sample its VmRSS and VmHWM from /proc during an attack")
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
	roots := x509.NewCertPool()
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil || !roots.AppendCertsFromPEM(pem) {
			fmt.Fprintf(stderr, "usher-load: --ca %s: no certificate (%v)\n", *caFile, err)
			return 2
		}
	}
	if *slow > 0 {
		res := attack(attackConfig{addr: *addr, roots: roots, conns: *slow, bodyBytes: *bodyBytes, duration: *duration,
			reviewers: *conns, pid: *pid, politely: *politely})
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
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}
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
