package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{
			name: "full VCS stamp, modified tree",
			bi: &debug.BuildInfo{
				GoVersion: "go1.26.8",
				Main:      debug.Module{Path: "github.com/turnguard/turnguard", Version: "v0.0.0-20261203100000-1a2b3c4d5e6f+dirty"},
				Settings: vcs("-buildmode", "exe", "vcs", "git",
					"vcs.revision", "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d",
					"vcs.time", "2026-12-03T10:00:00Z", "vcs.modified", "true"),
			},
			want: "processor v0.0.0-20261203100000-1a2b3c4d5e6f+dirty (rev 1a2b3c4d5e6f, 2026-12-03T10:00:00Z, modified) go1.26.8",
		},
		{
			name: "tagged, clean tree",
			bi: &debug.BuildInfo{
				GoVersion: "go1.26.8",
				Main:      debug.Module{Version: "v1.2.3"},
				Settings: vcs("vcs.revision", "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d",
					"vcs.time", "2026-12-03T10:00:00Z", "vcs.modified", "false"),
			},
			want: "processor v1.2.3 (rev 1a2b3c4d5e6f, 2026-12-03T10:00:00Z) go1.26.8",
		},
		{
			name: "no VCS stamp (-buildvcs=false): no parentheses",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("-trimpath", "true")},
			want: "processor (devel) go1.26.8",
		},
		{
			name: "no module version stamped",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8"},
			want: "processor (devel) go1.26.8",
		},
		{
			name: "a short revision is shown whole",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "abc123")},
			want: "processor (devel) (rev abc123) go1.26.8",
		},
		{
			name: "only modified known",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs("vcs.modified", "true")},
			want: "processor (devel) (modified) go1.26.8",
		},
		{
			name: "no build info at all",
			bi:   nil,
			want: "processor (devel)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Format("processor", tt.bi); got != tt.want {
				t.Errorf("Format:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestStringLinkTimeVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v9.9.9"
	got := String("replay")
	if !strings.HasPrefix(got, "replay v9.9.9") || strings.Contains(got, "()") {
		t.Fatalf("String = %q, want the link-time version", got)
	}
	// The process's own build info is left as it was.
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version == "v9.9.9" {
		t.Fatal("String changed the process's build info")
	}
}

func TestStringRunningBinary(t *testing.T) {
	got := String("loadgen")
	if !strings.HasPrefix(got, "loadgen ") || strings.Contains(got, "()") || strings.HasSuffix(got, " ") {
		t.Fatalf("String = %q", got)
	}
}
