package cli

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version and Commit name the build, set by release builds with -ldflags -X; left
// empty, they come from Go's build information (module version, vcs.revision).
var (
	Version = ""
	Commit  = ""
)

// BuildInfo is what `usher version` prints.
type BuildInfo struct {
	Version, Commit     string
	Modified            bool
	GoVersion, Platform string
}

// CurrentBuild returns the build information of the running binary, "dev"
// and "unknown" where neither -ldflags nor Go's build information says.
func CurrentBuild() BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	return buildInfo(Version, Commit, bi, ok)
}

func buildInfo(version, commit string, bi *debug.BuildInfo, ok bool) BuildInfo {
	b := BuildInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if ok && bi != nil {
		b.GoVersion = cmp.Or(bi.GoVersion, b.GoVersion)
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		if b.Commit == "" {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					b.Commit = s.Value
				case "vcs.modified":
					b.Modified = s.Value == "true"
				}
			}
		}
	}
	b.Version = cmp.Or(b.Version, "dev")
	b.Commit = cmp.Or(b.Commit, "unknown")
	return b
}

func newVersionCommand(env *Env) *cobra.Command {
	cmd, _ := newCommand("", "version", "print the version, the commit and the Go version (also: usher --version)",
		"Print usher's version, the commit it was built from (\"(modified)\" when\nthe checkout had uncommitted changes) and the Go version.")
	return setBody(env, cmd, func(context.Context, []string) int {
		fmt.Fprint(env.Stdout, versionText(CurrentBuild()))
		return ExitOK
	})
}

// versionText is what usher version and usher --version print.
func versionText(b BuildInfo) string {
	commit := b.Commit
	if b.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("usher %s\ncommit: %s\ngo: %s %s\n", b.Version, commit, b.GoVersion, b.Platform)
}
