// Package pprofserve serves net/http/pprof at $USHER_PPROF_ADDR, which
// must be a loopback address, in a binary built with -tags pprof that
// imports it (usher and usher-load do, for hack/wire.sh WIRE_PROFILE=DIR).
// Without the tag the package is empty.
package pprofserve
