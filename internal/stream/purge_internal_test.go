package stream

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestPurgedCountsWhatLimitsDoNotExplain: messages gone that the stream's
// age limit, byte limit or a bucket's replaced values explain are no
// purge; the rest are.
func TestPurgedCountsWhatLimitsDoNotExplain(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	seen := func(at time.Time, first, last, msgs, subjects uint64, firstTime time.Time) purgeSeen {
		return purgeSeen{at: at, state: jetstream.StreamState{FirstSeq: first, LastSeq: last, Msgs: msgs, NumSubjects: subjects, FirstTime: firstTime}}
	}
	day := 24 * time.Hour
	for _, tc := range []struct {
		name      string
		lim       purgeLimits
		prev, cur purgeSeen
		want      uint64
	}{
		{"new messages only", purgeLimits{maxAge: day}, seen(t0, 1, 10, 10, 0, t0.Add(-time.Hour)), seen(t0.Add(time.Second), 1, 15, 15, 0, t0.Add(-time.Hour)), 0},
		{"whole purge", purgeLimits{maxAge: day}, seen(t0, 1, 10, 10, 0, t0.Add(-time.Hour)), seen(t0.Add(time.Second), 11, 11, 1, 0, t0), 10},
		{"subject purge", purgeLimits{maxAge: day}, seen(t0, 1, 10, 10, 0, t0.Add(-time.Hour)), seen(t0.Add(time.Second), 1, 10, 7, 0, t0.Add(-time.Hour)), 3},
		{"aged out", purgeLimits{maxAge: day}, seen(t0, 1, 10, 10, 0, t0.Add(-day+time.Second)), seen(t0.Add(time.Second), 5, 10, 6, 0, t0), 0},
		{"no age limit", purgeLimits{}, seen(t0, 1, 10, 10, 0, t0.Add(-100*day)), seen(t0.Add(time.Second), 11, 10, 0, 0, time.Time{}), 10},
		{"byte limit", purgeLimits{maxAge: day, bytes: true}, seen(t0, 1, 10, 10, 0, t0), seen(t0.Add(time.Second), 9, 20, 12, 0, t0), 0},
		{"empty before", purgeLimits{maxAge: day}, seen(t0, 0, 0, 0, 0, time.Time{}), seen(t0.Add(time.Second), 4, 5, 2, 0, t0), 3},
		{"bucket rewrites", purgeLimits{maxAge: day, kv: true}, seen(t0, 1, 10, 4, 4, t0.Add(-time.Hour)), seen(t0.Add(time.Second), 12, 20, 4, 4, t0), 0},
		{"bucket purged", purgeLimits{maxAge: day, kv: true}, seen(t0, 1, 10, 4, 4, t0.Add(-time.Hour)), seen(t0.Add(time.Second), 21, 21, 1, 1, t0), 3},
		{"bucket expiry", purgeLimits{maxAge: day, kv: true}, seen(t0, 1, 10, 4, 4, t0.Add(-day)), seen(t0.Add(time.Second), 5, 10, 1, 1, t0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := purged(tc.lim, tc.prev, tc.cur); got != tc.want {
				t.Fatalf("purged = %d, want %d", got, tc.want)
			}
		})
	}
}
