// Package secgate creates JetStream consumers for the security role.
//
// The security role lives in an account of its own and reaches
// turnguard's streams through imports. Reads (stream info, message and
// direct gets, pull requests) are imported from JetStream itself: their
// replies come back into the security account whatever reply subject the
// caller named. A consumer create cannot be: its request carries the
// deliver subject of a push consumer, and JetStream would deliver to that
// subject in turnguard's account — into ACS_HOOKS, say, or onto a bucket's
// subject. So the security account's $JS.API.CONSUMER.CREATE.<stream>[.…]
// is imported from natsauth.SecurityConsumerCreate, where the processor
// checks the request here and forwards it: pull consumers, and push
// consumers delivering below the security inbox (exported back to the
// security account) only, and never an update of an existing consumer.
package secgate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/natsauth"
)

// queue is the queue group the processors share: one of them answers.
const queue = "turnguard-secgate"

// requestTimeout bounds the forwarded JetStream request.
const requestTimeout = 10 * time.Second

// Start serves consumer creation for the security role on nc (the
// processor's connection) until the returned stop is called.
func Start(nc *nats.Conn, log zerolog.Logger) (stop func(), err error) {
	log = log.With().Str("component", "secgate").Logger()
	sub, err := nc.QueueSubscribe(natsauth.SecurityConsumerCreate+".>", queue, func(m *nats.Msg) {
		resp := Handle(nc, m.Subject, m.Data, log)
		if m.Reply != "" {
			if err := m.Respond(resp); err != nil {
				log.Debug().Err(err).Msg("reply to a consumer create")
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("security consumer gateway: %w", err)
	}
	return func() {
		if err := sub.Unsubscribe(); err != nil {
			log.Debug().Err(err).Msg("stop the security consumer gateway")
		}
	}, nil
}

// Handle checks one consumer create request received on subject and, if
// it is one the security role may make, forwards it to JetStream; it
// returns the response for the caller (JetStream's, or an API error of the
// same shape).
func Handle(nc *nats.Conn, subject string, data []byte, log zerolog.Logger) []byte {
	api, err := Check(subject, data)
	if err != nil {
		log.Warn().Err(err).Str("subject", subject).Msg("security consumer create refused")
		return apiError(403, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := nc.RequestWithContext(ctx, api.Subject, api.Data)
	if err != nil {
		log.Warn().Err(err).Str("subject", api.Subject).Msg("security consumer create failed")
		return apiError(503, "consumer create: "+err.Error())
	}
	return resp.Data
}

// Request is a checked request to forward.
type Request struct {
	Subject string
	Data    []byte
}

// Check parses a consumer create request received on subject
// (natsauth.SecurityConsumerCreate.<stream>[.<consumer>[.<filter>]]) and
// returns the JetStream request to make for it: the same, on
// $JS.API.CONSUMER.CREATE.…, with action "create" so that it can never
// redefine an existing consumer (the processor's among them).
func Check(subject string, data []byte) (Request, error) {
	rest, ok := strings.CutPrefix(subject, natsauth.SecurityConsumerCreate+".")
	if !ok || rest == "" {
		return Request{}, fmt.Errorf("not a consumer create subject: %q", subject)
	}
	stream, _, _ := strings.Cut(rest, ".")
	pushOnly := slices.Contains(natsauth.SecurityPushOnly(), stream)
	if !pushOnly && !slices.Contains(natsauth.SecurityStreams(), stream) {
		return Request{}, fmt.Errorf("the security role has no consumers on stream %q", stream)
	}
	// Decoded as the server decodes it (its own type, encoding/json's
	// case-insensitive keys and all) and forwarded as encoded from what was
	// checked, so that the server cannot read a deliver subject this check
	// did not see.
	var req server.CreateConsumerRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return Request{}, fmt.Errorf("consumer create request: %w", err)
	}
	if d := req.Config.DeliverSubject; d != "" && (!strings.HasPrefix(d, natsauth.SecurityDeliverPrefix) || strings.ContainsAny(d, "*> \t\r\n")) {
		return Request{}, fmt.Errorf("deliver subject %q: the security role's push consumers deliver below %s only", d, natsauth.SecurityDeliverPrefix)
	}
	if pushOnly {
		// The processor's partition consumers live here: a pull consumer
		// or a name of the processor's kind (created while one of them is
		// missing) would be in its way.
		if req.Config.DeliverSubject == "" {
			return Request{}, fmt.Errorf("stream %s: the security role's consumers there are push consumers on %s", stream, natsauth.SecurityDeliverPrefix)
		}
		for _, name := range []string{req.Config.Name, req.Config.Durable, consumerToken(rest)} {
			if strings.HasPrefix(name, ProcessorConsumerPrefix) {
				return Request{}, fmt.Errorf("stream %s: consumer name %q is the processor's kind", stream, name)
			}
		}
	}
	req.Action = server.ActionCreate
	out, err := json.Marshal(req)
	if err != nil {
		return Request{}, err
	}
	return Request{Subject: "$JS.API.CONSUMER.CREATE." + rest, Data: out}, nil
}

// ProcessorConsumerPrefix starts the names of the processor's consumers on
// ACS_HOOKS (internal/topology).
const ProcessorConsumerPrefix = "turnguard"

// consumerToken is the consumer name in <stream>.<consumer>[.<filter>].
func consumerToken(rest string) string {
	_, after, _ := strings.Cut(rest, ".")
	name, _, _ := strings.Cut(after, ".")
	return name
}

// apiError is a JetStream API error response, which clients report as
// such.
func apiError(code int, description string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":  "io.nats.jetstream.api.v1.consumer_create_response",
		"error": map[string]any{"code": code, "description": "turnguard: " + description},
	})
	return b
}
