package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/statestore"
)

// hooksWatermark is the highest ACS_HOOKS sequence anything stored still
// refers to: the sessions' and agents' last applied sequences in the state
// bucket, the sequences the newest decision of each session answers, and
// seen. A recreated ACS_HOOKS numbers its messages from above it. Reading
// every key is slow for a large bucket, but this runs only when ACS_HOOKS
// is created while states or decisions exist: a disaster, not a start.
func hooksWatermark(ctx context.Context, js jetstream.JetStream, seen uint64) (uint64, error) {
	high := seen
	err := lastPerSubject(ctx, js, acs.KVStream(acs.StateBucket), false, func(m jetstream.Msg) {
		var rec struct {
			LastSeq uint64            `json:"last_seq"`
			Applied map[string]uint64 `json:"applied"`
		}
		js, err := statestore.RecordJSON(m.Data())
		if err != nil || json.Unmarshal(js, &rec) != nil {
			return // not a state: it refers to nothing
		}
		high = max(high, rec.LastSeq)
		for _, seq := range rec.Applied {
			high = max(high, seq)
		}
	})
	if err != nil {
		return 0, err
	}
	err = lastPerSubject(ctx, js, acs.DecisionsStream, true, func(m jetstream.Msg) {
		if seq, err := strconv.ParseUint(m.Headers().Get(acs.HdrStreamSeq), 10, 64); err == nil {
			high = max(high, seq)
		}
	})
	return high, err
}

// lastPerSubject calls fn with the newest message of every subject of a
// stream (a stream that does not exist has none).
func lastPerSubject(ctx context.Context, js jetstream.JetStream, stream string, headersOnly bool, fn func(jetstream.Msg)) error {
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", stream, err)
	}
	if s.CachedInfo().State.Msgs == 0 {
		return nil
	}
	// An ephemeral consumer of its own, removed after (and by the server
	// if this process dies first).
	// (Delivering the last per subject needs a filter: all of the stream.)
	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		FilterSubjects: s.CachedInfo().Config.Subjects, AckPolicy: jetstream.AckNonePolicy, HeadersOnly: headersOnly, MemoryStorage: true, InactiveThreshold: time.Minute})
	if err != nil {
		return fmt.Errorf("read stream %s: %w", stream, err)
	}
	defer func() { _ = s.DeleteConsumer(context.WithoutCancel(ctx), c.CachedInfo().Name) }()
	// The consumer knows how many messages it will deliver (one per
	// subject); asking for exactly what is left returns as soon as it has
	// come, where a larger fetch would wait out its timeout.
	info := c.CachedInfo()
	for left := info.NumPending; left > 0; {
		batch, err := c.Fetch(int(min(left, 256)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("read stream %s: %w", stream, err)
		}
		n := uint64(0)
		for m := range batch.Messages() {
			n++
			fn(m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("read stream %s: %w", stream, err)
		}
		if n == 0 {
			return fmt.Errorf("read stream %s: nothing delivered in 5s with %d message(s) left", stream, left)
		}
		left -= min(n, left)
	}
	return nil
}
