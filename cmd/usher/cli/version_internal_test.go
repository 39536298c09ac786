package cli

import (
	"runtime/debug"
	"testing"
)

func TestBuildInfoSources(t *testing.T) {
	checkout := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/usherhq/usher", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	installed := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/usherhq/usher", Version: "v0.3.1"}}
	tests := []struct {
		name            string
		version, commit string
		bi              *debug.BuildInfo
		ok              bool
		want            BuildInfo
	}{
		{"checkout", "", "", checkout, true, BuildInfo{Version: "dev", Commit: "0123abcd", Modified: true, GoVersion: "go1.26.8"}},
		{"go install @version", "", "", installed, true, BuildInfo{Version: "v0.3.1", Commit: "unknown", GoVersion: "go1.26.8"}},
		{"ldflags win", "v1.2.3", "feedbeef", checkout, true, BuildInfo{Version: "v1.2.3", Commit: "feedbeef", GoVersion: "go1.26.8"}},
		{"ldflags version only", "v1.2.3", "", checkout, true, BuildInfo{Version: "v1.2.3", Commit: "0123abcd", Modified: true, GoVersion: "go1.26.8"}},
		{"no build info", "", "", nil, false, BuildInfo{Version: "dev", Commit: "unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildInfo(tt.version, tt.commit, tt.bi, tt.ok)
			if tt.want.GoVersion == "" {
				tt.want.GoVersion = got.GoVersion
			}
			tt.want.Platform = got.Platform
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
