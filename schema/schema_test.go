package schema_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The seed schema this project was born from must be embedded verbatim: the
// upstream hooks/turn-start.json, byte for byte.
func TestSeedTurnStartSchemaIsVerbatim(t *testing.T) {
	const wantSHA256 = "08591c5f3de25f95480172bcc30343d0919a910045c0c0cfd8620412a98a2740"
	raw, err := fs.ReadFile(schema.FS(), schema.Dir+"/hooks/turn-start.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != wantSHA256 || len(raw) != 2557 {
		t.Fatalf("hooks/turn-start.json is %d bytes with sha256 %s; the seed is 2557 bytes with sha256 %s", len(raw), got, wantSHA256)
	}
}

func TestEverySchemaHasTheNormalisedID(t *testing.T) {
	n := 0
	err := fs.WalkDir(schema.FS(), schema.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(schema.FS(), p)
		if err != nil {
			return err
		}
		want := fmt.Sprintf(`"$id": "%s%s"`, schema.Base, strings.TrimPrefix(p, schema.Dir+"/"))
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("%s: does not declare %s", p, want)
		}
		if bytes.Contains(raw, []byte(`: "https://acs.org/`)) {
			t.Errorf("%s: a value still points at the old https://acs.org/ base", p)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 31 {
		t.Fatalf("found %d schema files, want the full set of at least 31", n)
	}
}

func newValidator(t testing.TB) *schema.Validator {
	t.Helper()
	v, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fixtureMethods are the methods with fixture directories: every method of
// the acs table plus the handshake.
func fixtureMethods() []string {
	ms := []string{schema.HandshakeMethod}
	for _, m := range acs.Methods() {
		ms = append(ms, m.Method)
	}
	return ms
}

func TestEveryMethodHasValidAndInvalidFixtures(t *testing.T) {
	for _, m := range fixtureMethods() {
		dir := filepath.Join("testdata", "envelopes", strings.ReplaceAll(m, "/", "_"))
		valid, _ := filepath.Glob(filepath.Join(dir, "valid-*.json"))
		invalid, _ := filepath.Glob(filepath.Join(dir, "invalid-*.json"))
		if len(valid) == 0 || len(invalid) == 0 {
			t.Errorf("%s: %d valid and %d invalid fixtures in %s; want at least one of each", m, len(valid), len(invalid), dir)
		}
	}
}

// TestEnvelopeFixtures validates every request fixture and compares the
// refusals (code, reason, sorted violations) with a golden file.
func TestEnvelopeFixtures(t *testing.T) {
	v := newValidator(t)
	paths, err := filepath.Glob(filepath.Join("testdata", "envelopes", "*", "*.json"))
	if err != nil || len(paths) < 100 {
		t.Fatalf("found %d fixtures (%v), want the full corpus", len(paths), err)
	}
	var golden strings.Builder
	for _, p := range paths {
		rel := filepath.ToSlash(strings.TrimPrefix(p, filepath.Join("testdata", "envelopes")+string(filepath.Separator)))
		dir, name := filepath.Split(rel)
		wantValid := strings.HasPrefix(name, "valid-")
		t.Run(rel, func(t *testing.T) {
			err := validateEnvelope(t, v, p)
			switch {
			case wantValid && err != nil:
				t.Fatalf("valid fixture refused: %v", err)
			case !wantValid && err == nil:
				t.Fatal("invalid fixture accepted")
			case !wantValid:
				var ae *schema.Error
				if !errors.As(err, &ae) {
					t.Fatalf("refusal is %T, want *schema.Error", err)
				}
				wantCode := schema.CodeInvalidParams
				if dir == "_envelope/" {
					wantCode = schema.CodeInvalidRequest
				}
				if ae.Code != wantCode {
					t.Errorf("code %d, want %d: %v", ae.Code, wantCode, ae)
				}
				if len(ae.Violations) == 0 {
					t.Error("refusal lists no violation")
				}
				fmt.Fprintf(&golden, "%s %d %s\n", rel, ae.Code, ae.Reason)
				for _, vi := range ae.Violations {
					fmt.Fprintf(&golden, "  %s: %s\n", vi.Pointer, vi.Message)
				}
			}
		})
	}
	compareGolden(t, filepath.Join("testdata", "envelopes.golden"), golden.String())
}

func validateEnvelope(t *testing.T, v *schema.Validator, path string) error {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		t.Fatalf("fixture is not JSON: %v", err)
	}
	if err := v.ValidateRequest(doc); err != nil {
		return err
	}
	obj := doc.(map[string]any)
	params := obj["params"].(map[string]any)
	return v.ValidatePayload(obj["method"].(string), params["payload"])
}

func TestResponseFixtures(t *testing.T) {
	v := newValidator(t)
	paths, _ := filepath.Glob(filepath.Join("testdata", "responses", "*.json"))
	if len(paths) < 8 {
		t.Fatalf("found %d response fixtures, want at least 8", len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := schema.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			err = v.ValidateResponse(doc)
			if valid := strings.HasPrefix(filepath.Base(p), "valid-"); valid != (err == nil) {
				t.Fatalf("valid=%v but validation said %v", valid, err)
			}
		})
	}
}

func TestValidatePayloadOfUnknownMethod(t *testing.T) {
	err := newValidator(t).ValidatePayload("steps/teleport", map[string]any{})
	if !errors.Is(err, &schema.Error{Code: schema.CodeCapabilityNotNegotiated}) {
		t.Fatalf("got %v, want a -32003 refusal", err)
	}
}

// Violations come back sorted by pointer, whatever order the library found
// them in; run several times to catch map-order leaks.
func TestViolationsAreSorted(t *testing.T) {
	v := newValidator(t)
	doc, err := schema.Decode([]byte(`{"jsonrpc":"1.0","method":"bogus","id":true,"params":{"acs_version":"x","request_id":"nope","timestamp":"yesterday","metadata":{"session_id":"s"},"payload":{}},"extra":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range 20 {
		err := v.ValidateRequest(doc)
		var ae *schema.Error
		if !errors.As(err, &ae) || len(ae.Violations) < 6 {
			t.Fatalf("want at least 6 violations, got %v", err)
		}
		for j := 1; j < len(ae.Violations); j++ {
			if ae.Violations[j-1].Pointer > ae.Violations[j].Pointer {
				t.Fatalf("violations not sorted: %q before %q", ae.Violations[j-1].Pointer, ae.Violations[j].Pointer)
			}
		}
		if got := fmt.Sprint(ae.Violations); i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("run %d reported %s, run 0 %s", i, got, first)
		}
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from this run (go test ./schema -update rewrites it):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// FuzzValidateRequest feeds arbitrary bytes through decoding and both
// validation stages: nothing may panic, and every failure is a *schema.Error.
func FuzzValidateRequest(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "envelopes", "*", "*.json"))
	for _, p := range paths {
		if raw, err := os.ReadFile(p); err == nil {
			f.Add(raw)
		}
	}
	v := newValidator(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, err := schema.Decode(raw)
		if err != nil {
			return
		}
		if err := v.ValidateRequest(doc); err != nil {
			var ae *schema.Error
			if !errors.As(err, &ae) {
				t.Fatalf("request refusal is %T", err)
			}
			return
		}
		obj := doc.(map[string]any)
		params := obj["params"].(map[string]any)
		if err := v.ValidatePayload(obj["method"].(string), params["payload"]); err != nil {
			var ae *schema.Error
			if !errors.As(err, &ae) {
				t.Fatalf("payload refusal is %T", err)
			}
		}
	})
}
