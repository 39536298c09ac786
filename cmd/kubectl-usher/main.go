// Command kubectl-usher is the kubectl plugin of usher: kubectl usher
// whoami, can-i, why and queues ask usher's decision API (/v1/access) with
// the caller's own kubeconfig credentials. See docs/kubectl-usher.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/usherhq/usher/cmd/kubectl-usher/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := plugin.Main(ctx, os.Args[1:], plugin.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
