package gateway

import (
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/pkg/client"
)

// anonymousName is the caller name the open endpoint (--auth none)
// attests its requests with; configured callers have names of their own
// and exist only when the endpoint authenticates.
const anonymousName = "(anonymous)"

// attestor vouches, to the processor, for the caller an envelope is
// published for: the processor binds every session to the caller of its
// first envelope and refuses the envelopes of anyone else, and an agent
// publishing on NATS can set any header it likes, so the caller's name is
// backed by a MAC under the state key (turnstate.Sealer.AttestCaller),
// which only processors hold.
type attestor struct{ sealer *turnstate.Sealer }

// options are the headers that attest who publishes raw on its subject.
func (a *attestor) options(who *Caller, in incoming, raw []byte) []client.DecideOption {
	name := who.Name
	if name == "" {
		name = anonymousName
	}
	subject := acs.InboundSubject(who.Tenant, in.sessionID, acs.HookToken(in.head.Method))
	return []client.DecideOption{client.WithHeader(acs.HdrOnBehalfOf, name),
		client.WithHeader(acs.HdrOnBehalfOfMAC, a.sealer.AttestCaller(subject, turnstate.HTTPCaller(name), raw))}
}
