package replay_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
	"github.com/turnguard/turnguard/internal/testkit/natstest"
)

// TestCountsAgree records every scenario — denied turnStarts (turn-ids),
// refusals (bad-input), implicit turns (codex-implicit-turns), subagents —
// and requires sessions, timeline, verify and the stored session state to
// count alike: envelopes (sessions, timeline steps, verify steps), chain
// entries (timeline, verify) and turns (timeline and the state's
// turns_started, the turns that count toward windows; replay sessions
// counts the turns opened, of which those are a part).
func TestCountsAgree(t *testing.T) {
	for _, path := range scenarioPaths(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sc, built := loadScenario(t, path)
			rs := guardiantest.DefaultRules(t)
			rec := newRecorder(t, rs)
			rec.publishStepwise(built.Messages)
			rec.finish()
			src := rec.source()
			whole := wholeRange(t, src)
			kr, signer := testKeys(t)
			// "*", as every command defaults to, and the scenario's tenant.
			listed := map[string]replay.SessionSummary{}
			for _, tenant := range []string{"*", sc.Tenant} {
				ss, err := src.Sessions(ctx, whole, tenant, "", nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range ss {
					if prev, ok := listed[s.SessionID]; ok && prev != s {
						t.Errorf("session %s listed as %+v with --tenant %s, %+v before", s.SessionID, s, tenant, prev)
					}
					listed[s.SessionID] = s
				}
			}
			js := natstest.JetStream(t, natstest.Connect(t, rec.srv))
			kv, err := js.KeyValue(ctx, acs.StateBucket)
			if err != nil {
				t.Fatal(err)
			}
			for _, alias := range append([]string{"main"}, sc.Sessions...) {
				id := sc.SessionID(alias)
				tl, err := replay.BuildTimeline(ctx, src, rec.guardian(), rs, whole, sc.Tenant, id)
				if err != nil {
					t.Fatal(err)
				}
				v, err := replay.Verify(ctx, src, rec.guardian(), kr, signer.Public(), whole, sc.Tenant, id)
				if err != nil {
					t.Fatal(err)
				}
				entry, err := kv.Get(ctx, acs.SessionKey(sc.Tenant, id))
				if err != nil {
					t.Fatalf("state of %s: %v", alias, err)
				}
				var state turnstate.Session
				rec, err := statestore.RecordJSON(entry.Value())
				if err != nil {
					t.Fatalf("state of %s: %v", alias, err)
				}
				if err := json.Unmarshal(rec, &state); err != nil {
					t.Fatalf("state of %s: %v", alias, err)
				}
				s, ok := listed[id]
				if !ok {
					t.Fatalf("replay sessions does not list %s", alias)
				}
				for _, c := range []struct {
					what       string
					got, want  int
					gotBy, why string
				}{
					{"envelopes", s.Envelopes, len(tl.Steps), "sessions", "timeline steps"},
					{"envelopes", len(v.Steps), len(tl.Steps), "verify steps", "timeline steps"},
					{"chain entries", v.Chain.Entries, tl.Chained, "verify", "timeline"},
					{"turns", tl.Turns, state.TurnsStarted, "timeline", "the stored state's turns_started"},
					{"turns (at least)", min(s.Turns, state.TurnsStarted), state.TurnsStarted, "sessions", "the stored state's turns_started"},
				} {
					if c.got != c.want {
						t.Errorf("%s: %s counts %d %s, %s %d", alias, c.gotBy, c.got, c.what, c.why, c.want)
					}
				}
				if !v.Verified() {
					t.Errorf("%s: verify says %s: %v", alias, v.Result(), v.Problems)
				}
			}
		})
	}
}
