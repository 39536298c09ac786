//go:build pprof

package main

// Built with -tags pprof (hack/wire.sh WIRE_PROFILE=DIR), this binary
// serves net/http/pprof at $USHER_PPROF_ADDR (hack/pprofserve). A
// build without the tag has none of this.
import _ "github.com/usherhq/usher/hack/pprofserve"
