package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// baselineReport is raw JetStream on the same server in the same run: how
// fast envelope-sized messages are stored (async publish) and consumed by a
// durable pull consumer with explicit acks; and the pipeline floor
// (pipeline.go), a processor of turnguard's durable shape that decides
// nothing. The decided rate is reported as a ratio of all three.
type baselineReport struct {
	Messages     int     `json:"messages"`
	MessageBytes int     `json:"message_bytes"`
	Replicas     int     `json:"replicas"`
	PublishRate  float64 `json:"publish_per_s"`
	ConsumeRate  float64 `json:"consume_per_s"`
	// DecidedVsPublish and DecidedVsConsume are the run's decided_per_s
	// over the two rates.
	DecidedVsPublish float64 `json:"decided_vs_publish"`
	DecidedVsConsume float64 `json:"decided_vs_consume"`
	// The pipeline floor: envelopes it got through, with the processors'
	// partitions and batch size, and how fast.
	PipelineMessages   int     `json:"pipeline_messages"`
	PipelinePartitions int     `json:"pipeline_partitions"`
	PipelineBatch      int     `json:"pipeline_batch"`
	PipelineRate       float64 `json:"pipeline_per_s"`
	// DecidedVsPipeline is decided_per_s over pipeline_per_s: what is
	// left of the floor once deciding is added.
	DecidedVsPipeline float64 `json:"decided_vs_pipeline"`
}

// baselines publishes up to maxMsgs messages of size bytes (or for at most
// limit) into a scratch file stream, consumes them, and deletes the stream.
func baselines(ctx context.Context, nc *nats.Conn, size, replicas, maxMsgs int, limit time.Duration) (rep baselineReport, err error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return rep, err
	}
	// A name of its own, so a baseline never touches another run's stream.
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	name := "LOADGEN_RAW_" + id
	subject := "loadgen.raw." + id
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.FileStorage, Replicas: replicas})
	if err != nil {
		return rep, fmt.Errorf("create scratch stream: %w", err)
	}
	defer func() {
		if derr := js.DeleteStream(context.WithoutCancel(ctx), name); derr != nil {
			err = errors.Join(err, fmt.Errorf("delete scratch stream %s: %w", name, derr))
		}
	}()
	rep.MessageBytes, rep.Replicas = size, replicas
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}

	start := time.Now()
	deadline := start.Add(limit)
	n := 0
	for n < maxMsgs && (n%1024 != 0 || time.Now().Before(deadline)) {
		// A full window waits for room: the default stall wait (200ms)
		// failed the baseline on a loaded machine.
		if _, err := js.PublishAsync(subject, payload, jetstream.WithStallWait(30*time.Second)); err != nil {
			return rep, fmt.Errorf("baseline publish: %w", err)
		}
		n++
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return rep, ctx.Err()
	case <-time.After(30 * time.Second):
		return rep, errors.New("baseline publish: acks did not arrive within 30s")
	}
	rep.PublishRate = float64(n) / time.Since(start).Seconds()
	info, err := s.Info(ctx)
	if err != nil {
		return rep, err
	}
	stored := int(info.State.Msgs)
	rep.Messages = stored

	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "loadgen-raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return rep, fmt.Errorf("baseline consumer: %w", err)
	}
	var got atomic.Int64
	done := make(chan struct{})
	start = time.Now()
	cc, err := c.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		if got.Add(1) == int64(stored) {
			close(done)
		}
	}, jetstream.PullMaxMessages(1000))
	if err != nil {
		return rep, fmt.Errorf("baseline consume: %w", err)
	}
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(limit):
	}
	elapsed := time.Since(start)
	cc.Stop()
	rep.ConsumeRate = float64(got.Load()) / elapsed.Seconds()
	return rep, ctx.Err()
}
