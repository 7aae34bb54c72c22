package stream

import (
	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/callersig"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// hdrPinID is set by the server on deliveries to a consumer's pinned client.
const hdrPinID = "Nats-Pin-Id"

// callerOf is who published an envelope (guardian.Message.Caller): the HTTP
// caller the endpoint attested, when the attestation verifies under the
// state key; else the NATS user whose signature verifies
// (internal/callersig); turnstate.CallerForged when either does not
// verify; "" (the tenant's NATS agents) without either. Rebuilds from the
// stream call it on the same stored headers, so they bind sessions as live
// processing did.
func callerOf(sealer *turnstate.Sealer, subject string, data []byte, h nats.Header) string {
	name, ok := h[acs.HdrOnBehalfOf]
	mac := h.Get(acs.HdrOnBehalfOfMAC)
	if !ok && mac == "" {
		caller, _ := callersig.Caller(h, acs.InboundOf(subject), data)
		return caller
	}
	caller := ""
	if len(name) == 1 {
		caller = turnstate.HTTPCaller(name[0])
	}
	if caller == "" || sealer == nil || !sealer.VerifyCaller(acs.InboundOf(subject), caller, data, mac) {
		return turnstate.CallerForged
	}
	return caller
}

func (w *worker) callerOf(subject string, data []byte, h nats.Header) string {
	return callerOf(w.sealer, subject, data, h)
}
