//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// pluginBuild holds the kubectl-usher binary built once per test process.
var pluginBuild struct {
	once sync.Once
	dir  string
	err  error
}

// BuildPlugin builds ./cmd/kubectl-usher of the repository into a
// temporary directory of its own, once per process, and returns that
// directory: put it first on PATH and kubectl finds the plugin as
// "kubectl usher". RemovePluginBuild deletes it.
func BuildPlugin() (string, error) {
	pluginBuild.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			pluginBuild.err = err
			return
		}
		dir, err := os.MkdirTemp("", "usher-e2e-plugin-")
		if err != nil {
			pluginBuild.err = err
			return
		}
		pluginBuild.dir = dir
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-usher"), "./cmd/kubectl-usher")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginBuild.err = fmt.Errorf("e2e: go build ./cmd/kubectl-usher in %s: %w\n%s", root, err, out)
		}
	})
	return pluginBuild.dir, pluginBuild.err
}

// RemovePluginBuild deletes the directory BuildPlugin built into, if any.
func RemovePluginBuild() {
	if pluginBuild.dir != "" {
		_ = os.RemoveAll(pluginBuild.dir)
	}
}

// RunPlugin runs `kubectl usher ARGS` as user through the cluster's
// kubectl, with the plugin's directory first on PATH and KUBECONFIG set
// to user's kubeconfig (kubectl passes its environment to a plugin, not
// its flags). It returns stdout, stderr and the exit code; err is set only
// when the command could not be run at all.
func (c *Cluster) RunPlugin(ctx context.Context, user string, stdin []byte, env []string, args ...string) (stdout, stderr string, code int, err error) {
	dir, err := BuildPlugin()
	if err != nil {
		return "", "", -1, err
	}
	f, err := c.Kubeconfig(user)
	if err != nil {
		return "", "", -1, err
	}
	if c.Kubectl == "" {
		return "", "", -1, errors.New("e2e: the cluster env file names no kubectl")
	}
	cmd := exec.CommandContext(ctx, c.Kubectl, append([]string{"usher"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errb.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return out.String(), errb.String(), -1, err
	}
	return out.String(), errb.String(), 0, nil
}
