package replay_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/replay"
)

// TestProgressETA: the time left is not estimated from the first envelope,
// which arrives after the consumer was set up, nor before the run has gone
// on or got far enough; then it follows the rate of progress, smoothed.
// A 14,000-envelope run at 1,000 a second after a 5 s setup is the one
// that once announced 28 minutes.
func TestProgressETA(t *testing.T) {
	const total = 14000
	tests := []struct {
		name  string
		setup time.Duration
		rate  float64 // envelopes a second
		read  uint64  // envelopes read when the last line is looked at
		// eta is the estimate wanted (0: none yet).
		eta time.Duration
	}{
		{"none at the first envelope after a slow setup", 5 * time.Second, 1000, 1, 0},
		{"none within the first second", 5 * time.Second, 1000, 900, 0},
		{"from the rate once 2 s have passed", 5 * time.Second, 1000, 3000, 11 * time.Second},
		{"from the rate near the end", 5 * time.Second, 1000, 13000, time.Second},
		{"once a tenth is done, however soon", 0, 5000, 2001, 2400 * time.Millisecond},
		{"a slow run", 0, 50, 200, 276 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			var out strings.Builder
			p := replay.NewProgressAt(&out, 1, total, func() time.Time { return now })
			now = now.Add(tc.setup)
			step := time.Duration(float64(time.Second) / tc.rate)
			for seq := uint64(1); seq <= tc.read; seq++ {
				if seq > 1 {
					now = now.Add(step)
				}
				p.At(seq)
			}
			lines := strings.Split(out.String(), "\r")
			last := lines[len(lines)-1]
			_, eta, ok := strings.Cut(last, "ETA ")
			if !ok {
				t.Fatalf("no ETA in %q", last)
			}
			eta = strings.TrimSpace(eta)
			if tc.eta == 0 {
				if eta != "…" {
					t.Errorf("ETA %s, want none yet (%q)", eta, last)
				}
				return
			}
			got, err := time.ParseDuration(eta)
			if err != nil {
				t.Fatalf("ETA %q: %v", eta, err)
			}
			// Within a second or 10% of the truth.
			if diff := math.Abs(got.Seconds() - tc.eta.Seconds()); diff > max(1, tc.eta.Seconds()/10) {
				t.Errorf("ETA %s, want about %s (%q)", got, tc.eta, last)
			}
		})
	}
}

// TestCountProgress: a count of items (runs, say) shows done/total in its
// own unit.
func TestCountProgress(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var out strings.Builder
	p := replay.NewCountProgressAt(&out, 400, "runs", func() time.Time { return now })
	for n := uint64(1); n <= 100; n++ {
		now = now.Add(10 * time.Millisecond)
		p.At(n)
	}
	lines := strings.Split(out.String(), "\r")
	last := lines[len(lines)-1]
	// The line is rewritten every 200 ms: last at the 81st run here.
	if want := "  81/400   20%  101 runs/s"; !strings.HasPrefix(last, want) {
		t.Errorf("progress line %q, want it to start %q", last, want)
	}
}
