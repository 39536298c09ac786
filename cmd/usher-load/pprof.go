//go:build pprof

package main

// Built with -tags pprof (hack/wire.sh WIRE_PROFILE=DIR), usher-load serves
// net/http/pprof at $USHER_PPROF_ADDR, which must be a loopback address.
// (for --serve-bare). A build without the tag has none of this.

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
