// Command usher answers "may this user do this, and why?" for queue ACLs,
// and serves the decision API and the Kubernetes admission webhook.
//
// Run "usher help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/usherhq/usher/cmd/usher/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, &cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, LookupEnv: os.LookupEnv}, os.Args[1:])
	stop()
	os.Exit(code)
}
