package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/keyfile"
)

// Core is the decision core's settings. The processor and replay register
// the same flags so that a replay decides with what the processor had:
// a different size limit or signature policy would refuse other envelopes
// and change the hash chain.
type Core struct {
	MaxEnvelopeBytes  int
	OnRuleError       string
	KeysFile          string
	RequireSignatures bool
	// RequireCallerSignatures: see guardian.Config.
	RequireCallerSignatures bool
	SkewWindow              time.Duration
}

// Register adds the core's flags to fs.
func (c *Core) Register(fs *flag.FlagSet) {
	fs.IntVar(&c.MaxEnvelopeBytes, "max-envelope-bytes", guardian.DefaultMaxEnvelopeBytes, "refuse (and dead-letter) envelopes larger than this")
	fs.StringVar(&c.OnRuleError, "on-rule-error", "deny", "decision when a rule condition fails to evaluate: deny or allow")
	fs.StringVar(&c.KeysFile, "keys", "", "HMAC keys file: verify request signatures, sign responses")
	fs.BoolVar(&c.RequireSignatures, "require-signatures", false, "refuse unsigned requests (-32004); needs --keys")
	fs.BoolVar(&c.RequireCallerSignatures, "require-caller-signatures", false, "refuse envelopes published on NATS without their publisher's credential signature (pkg/client signs; the nats CLI does not): every session then belongs to one credential or HTTP caller (-32000 caller_not_bound)")
	fs.DurationVar(&c.SkewWindow, "skew-window", guardian.DefaultSkewWindow, "refuse requests, signed or not, whose timestamp is further than this from their arrival (-32006); 0 disables")
}

// Validate checks the values parsed.
func (c *Core) Validate() error {
	if c.MaxEnvelopeBytes < 1024 || c.MaxEnvelopeBytes > acs.HooksMaxMsgSize {
		return fmt.Errorf("--max-envelope-bytes must be between 1024 and %d (the ACS_HOOKS message limit)", acs.HooksMaxMsgSize)
	}
	if c.OnRuleError != "deny" && c.OnRuleError != "allow" {
		return fmt.Errorf("--on-rule-error %q: want deny or allow", c.OnRuleError)
	}
	if c.RequireSignatures && c.KeysFile == "" {
		return errors.New("--require-signatures needs --keys")
	}
	if c.SkewWindow < 0 {
		return errors.New("--skew-window must not be negative")
	}
	return nil
}

// GuardianConfig is the core's configuration, with the keyring loaded;
// receipts are the caller's.
func (c *Core) GuardianConfig() (guardian.Config, error) {
	cfg := guardian.Config{MaxEnvelopeBytes: c.MaxEnvelopeBytes, OnRuleError: acs.Disposition(c.OnRuleError),
		RequireSignatures: c.RequireSignatures, RequireCallerSignatures: c.RequireCallerSignatures, SkewWindow: c.SkewWindow}
	if c.KeysFile != "" {
		kr, err := keyfile.Keyring(c.KeysFile)
		if err != nil {
			return cfg, err
		}
		cfg.Keys = kr
	}
	return cfg, nil
}
