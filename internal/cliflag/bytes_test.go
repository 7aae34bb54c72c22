package cliflag_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/cliflag"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "1048576", want: 1 << 20},
		{in: "17B", want: 17},
		{in: "512MiB", want: 512 << 20},
		{in: "10GiB", want: 10 << 30},
		{in: "10 GiB", want: 10 << 30},
		{in: " 2tib ", want: 2 << 40},
		{in: "64KiB", want: 64 << 10},
		{in: "5GB", want: 5e9},
		{in: "1kb", want: 1000},
		{in: "3MB", want: 3e6},
		{in: "1TB", want: 1e12},
		{in: "8388607TiB", want: 8388607 << 40},
		{in: "", wantErr: "whole number"},
		{in: "GiB", wantErr: "whole number"},
		{in: "-1", wantErr: "whole number"},
		{in: "1.5GiB", wantErr: "unknown unit"},
		{in: "10G", wantErr: "unknown unit"},
		{in: "10 M", wantErr: "unknown unit"},
		{in: "10PiB", wantErr: "unknown unit"},
		{in: "8388608TiB", wantErr: "too large"},
		{in: "99999999999999999999", wantErr: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := cliflag.ParseBytes(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseBytes(%q) = %d, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseBytes(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestBytesString(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1000, "1000"},
		{1 << 10, "1KiB"},
		{1536, "1536"},
		{3 << 20, "3MiB"},
		{(1 << 30) + (1 << 20), "1025MiB"},
		{10 << 30, "10GiB"},
		{5 << 40, "5TiB"},
	}
	for _, tt := range tests {
		b := cliflag.Bytes(tt.in)
		if got := b.String(); got != tt.want {
			t.Errorf("Bytes(%d).String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// As a flag, with its environment variable.
func TestBytesFlag(t *testing.T) {
	t.Setenv("TURNGUARD_HOOKS_MAX_BYTES", "2GiB")
	var n int64
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var((*cliflag.Bytes)(&n), "hooks-max-bytes", "")
	if err := cliflag.ApplyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if n != 2<<30 {
		t.Fatalf("from the environment: %d", n)
	}
	if err := fs.Parse([]string{"--hooks-max-bytes", "512MiB"}); err != nil {
		t.Fatal(err)
	}
	if n != 512<<20 {
		t.Fatalf("from the command line: %d", n)
	}
	if err := fs.Parse([]string{"--hooks-max-bytes", "lots"}); err == nil {
		t.Fatal("a bad size was accepted")
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"0", "512MiB", "10 GiB", "5GB", "1.5GiB", "-1", "8388608TiB", "99999999999999999999B", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := cliflag.ParseBytes(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, n)
		}
		b := cliflag.Bytes(n)
		back, err := cliflag.ParseBytes(b.String())
		if err != nil || back != n {
			t.Fatalf("ParseBytes(%q) = %d, written %q, read back %d, %v", s, n, b.String(), back, err)
		}
	})
}
