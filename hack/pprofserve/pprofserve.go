//go:build pprof

package pprofserve

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("USHER_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "USHER_PPROF_ADDR %q: want a loopback HOST:PORT\n", addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "USHER_PPROF_ADDR: %v\n", err)
		os.Exit(2)
	}
	go func() { _ = http.Serve(ln, nil) }()
}
