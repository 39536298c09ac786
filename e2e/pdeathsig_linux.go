//go:build e2e && linux

package e2e

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill cmd when the test process dies
// without running its cleanups (a panic, a -timeout, SIGKILL), so no usher
// outlives the tests.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
