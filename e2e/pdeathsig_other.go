//go:build e2e && !linux

package e2e

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent death
// signal; t.Cleanup still stops every process a test started.
func setParentDeathSignal(*exec.Cmd) {}
