package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// dispatch answers a body: one request, or a batch in declared order.
func (g *Gateway) dispatch(ctx context.Context, from origin, body []byte, tls bool) reply {
	trimmed := bytes.TrimSpace(body)
	batch := len(trimmed) > 0 && trimmed[0] == '['
	// Before any decoding, as the processor does: a batch's array is one
	// level more than its items.
	limit := acs.MaxDepth
	if batch {
		limit++
	}
	if ref := acs.CheckDepth(trimmed, limit); ref != nil {
		return g.reject(ctx, from, incoming{raw: body}, ref, false)
	}
	if !batch {
		return g.one(ctx, from, trimmed, tls)
	}
	items, err := splitBatch(trimmed, g.cfg.MaxBatch)
	var tooMany *batchTooLargeError
	switch {
	case errors.As(err, &tooMany):
		return g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonBatchTooLarge, Message: err.Error()}, false)
	case err != nil:
		return g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeParseError, Reason: acs.ReasonParseError, Message: err.Error()}, false)
	case len(items) == 0:
		return g.reject(ctx, from, incoming{raw: body}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonEnvelopeInvalid, Message: "an empty batch"}, false)
	}
	replies := make([]reply, len(items))
	for i, it := range items {
		if from.extend != nil {
			from.extend()
		}
		// Each item independently and in order (ACS §3: batches). A batch
		// has no per-item headers, so receipts stay in the stream.
		replies[i] = g.one(ctx, from, it, tls)
		replies[i].receipt = ""
	}
	return reply{doc: replies}
}

// batchTooLargeError is a batch of more items than the endpoint takes.
type batchTooLargeError struct{ max int }

func (e *batchTooLargeError) Error() string {
	return fmt.Sprintf("a batch of more than %d requests", e.max)
}

// splitBatch splits a JSON array into its items, stopping as soon as there
// are more than max: a batch too large is refused without the rest of it
// being decoded.
func splitBatch(b []byte, max int) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // '[', as dispatch checked
		return nil, err
	}
	var items []json.RawMessage
	for dec.More() {
		if len(items) == max {
			return nil, &batchTooLargeError{max: max}
		}
		var it json.RawMessage
		if err := dec.Decode(&it); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 {
		return nil, errors.New("invalid character after the top-level value")
	}
	return items, nil
}
