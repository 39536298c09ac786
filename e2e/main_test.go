//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// cluster is the control plane every test in this package runs against.
var cluster *Cluster

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

// testMain starts (or joins) the cluster, runs the tests and stops what it
// started. A panic or a -timeout in a test ends the process without running
// the deferred stop: the watchdog that `hack/e2e-cluster.sh up` started for
// this process then takes the cluster down.
func testMain(m *testing.M) (code int) {
	flag.Parse()
	// A cold start builds the control plane, KWOK and Kueue first.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	c, stop, err := Start(ctx)
	cancel()
	if stop != nil {
		defer func() {
			if err := stop(code == 0); err != nil {
				fmt.Fprintln(os.Stderr, err)
				if code == 0 {
					code = 1
				}
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the cluster:", err)
		return 1
	}
	cluster = c
	defer RemoveUsherBuild()
	// Once every test is done: TestPlugin and TestKubectlUsherThroughTheAPIServer
	// share the plugin's build and run in parallel.
	defer RemovePluginBuild()
	// Built before any test's deadline runs: on a fresh machine the first
	// build of usher takes minutes.
	if _, err := BuildUsher(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code = m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: cluster logs are in %s/logs\n", c.StateDir)
	}
	return code
}
