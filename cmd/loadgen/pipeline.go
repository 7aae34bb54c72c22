package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/stream"
	"github.com/turnguard/turnguard/internal/topology"
	"github.com/turnguard/turnguard/internal/traffic"
)

// The pipeline floor's stand-ins for what deciding produces, sized from a
// backlog run of the example traffic (seed 1, 200 sessions, 16 partitions,
// 20,000 envelopes) read back from the real streams:
const (
	// floorStateBytes is a session's state without its outbox: the
	// sealed JSON of the final states in ACS_TURNSTATE averaged 2.5 KB;
	// a session is smaller over most of its life, so 2 KB.
	floorStateBytes = 2048
	// floorDecisionBytes is a decision's body: ACS_DECISIONS held
	// 438-byte bodies on average (an allow with its policy data and
	// chain hash).
	floorDecisionBytes = 440
	// floorReceipt stands in for the Ed25519 receipt header (88 base64
	// characters), which with the other decision headers made up the
	// ~500 header bytes a real decision carried.
	floorReceipt = "KoFU8INBJFnL3RoegWDcLtvWD4uUOn5ExwcunJRdrMnskdSi5Hx5q8eNvPZ2XNTw06+yC7YoyTt49KSJLJtuBA=="
)

// pipelineReport is the pipeline floor: a processor of the real one's
// durable shape that decides nothing.
type pipelineReport struct {
	// Messages is how many envelopes were acked within the time limit.
	Messages   int
	Partitions int
	Batch      int
	Rate       float64
}

// pipelineConfig shapes the floor like the run's embedded processors.
type pipelineConfig struct {
	// Processor is theirs (processorConfig): the floor takes its
	// partitions, batch size, consumers, bucket and publish window, with
	// Topology.Replicas the scratch assets' replicas.
	Processor stream.Config
	// Sessions is how many sessions interleave in the input, as the run's
	// --sessions slots interleave them.
	Sessions int
	MaxMsgs  int
	// Limit bounds the publishing and the processing each.
	Limit time.Duration
}

// pipelineFloor measures how fast a processor with turnguard's durable
// shape but no deciding gets through envelopes: the envelopes gen makes,
// in a scratch stream partitioned by the same subject transform as
// ACS_HOOKS, one durable filtered pull consumer per partition, each
// consumed by its own goroutine in batches; per batch a compare-and-set
// write of every touched session (with its outbox) into a scratch bucket,
// then one decision per envelope into a scratch stream, then the acks.
// Everything it creates is deleted before it returns, error or not.
func pipelineFloor(ctx context.Context, nc *nats.Conn, dial func(name string) (*nats.Conn, error), gen *traffic.Generator, cfg pipelineConfig) (rep pipelineReport, err error) {
	topo := cfg.Processor.Topology
	rep.Partitions, rep.Batch = topo.Partitions, cfg.Processor.BatchSize
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return rep, err
	}
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	sc := scratch{
		hooks:     pipelineScratchPrefix + id,
		decisions: pipelineScratchPrefix + "DEC_" + id,
		bucket:    pipelineScratchPrefix + id,
		in:        "loadgen.pipe." + id + ".in",
		part:      "loadgen.pipe." + id + ".part",
		out:       "loadgen.pipe." + id + ".out",
	}
	defer func() {
		if derr := sc.delete(context.WithoutCancel(ctx), js); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	hooks, err := sc.create(ctx, js, topo)
	if err != nil {
		return rep, err
	}
	stored, err := publishInput(ctx, js, hooks, gen, sc, cfg)
	if err != nil || stored == 0 {
		return rep, err
	}
	consumers, err := partitionConsumers(ctx, hooks, &sc, topo)
	if err != nil {
		return rep, err
	}

	// The processing has a connection of its own, as a processor has.
	pnc, err := dial("turnguard-loadgen-pipeline")
	if err != nil {
		return rep, err
	}
	defer pnc.Close()
	pjs, err := jetstream.New(pnc, jetstream.WithPublishAsyncMaxPending(cfg.Processor.AsyncWindow()))
	if err != nil {
		return rep, err
	}
	f := &floor{js: pjs, sc: sc, batch: cfg.Processor.BatchSize, pullExpiry: topo.PullExpiry(), total: int64(stored), done: make(chan struct{})}
	f.filler = make([]byte, floorStateBytes+f.batch*outboxBytes())
	for i := range f.filler {
		f.filler[i] = 'a' + byte(i%26)
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Limit)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, topo.Partitions)
	start := time.Now()
	for p, c := range consumers {
		wg.Go(func() {
			// One partition failing ends the measurement.
			if errs[p] = f.partition(wctx, c); errs[p] != nil {
				cancel()
			}
		})
	}
	select {
	case <-f.done:
	case <-wctx.Done():
	}
	// The acks are fire-and-forget, as the processor's are; a flush's
	// round trip makes sure the server has them before the clock stops.
	// Within the time limit the floor may get through less than stored.
	rep.Messages = int(f.acked.Load())
	ferr := pnc.FlushTimeout(10 * time.Second)
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if err := errors.Join(append(errs, ferr)...); err != nil {
		return rep, fmt.Errorf("pipeline: %w", err)
	}
	rep.Rate = float64(rep.Messages) / elapsed.Seconds()
	return rep, ctx.Err()
}

// create makes the floor's scratch streams and bucket, shaped like
// ACS_HOOKS, ACS_DECISIONS and ACS_TURNSTATE; what it made is noted for
// delete even when it fails part way.
func (sc *scratch) create(ctx context.Context, js jetstream.JetStream, topo topology.Topology) (jetstream.Stream, error) {
	hooks, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: sc.hooks, Subjects: []string{sc.in + ".>"},
		Storage: jetstream.FileStorage, Replicas: topo.Replicas, Duplicates: topology.HooksDuplicates,
		SubjectTransform: topology.PartitionTransformOf(sc.in, sc.part, topo.Partitions)})
	if err != nil {
		return nil, fmt.Errorf("create scratch stream %s: %w", sc.hooks, err)
	}
	sc.created = append(sc.created, sc.hooks)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: sc.decisions, Subjects: []string{sc.out + ".>"},
		Storage: jetstream.FileStorage, Replicas: topo.Replicas, Duplicates: topo.DecisionDedupWindow}); err != nil {
		return nil, fmt.Errorf("create scratch stream %s: %w", sc.decisions, err)
	}
	sc.created = append(sc.created, sc.decisions)
	if _, err := js.CreateKeyValue(ctx, topo.StateBucket(sc.bucket)); err != nil {
		return nil, fmt.Errorf("create scratch bucket %s: %w", sc.bucket, err)
	}
	sc.bucketMade = true
	return hooks, nil
}

// partitionConsumers makes one consumer per partition as the topology
// makes them (topology's PartitionConsumer, acs.PartitionFilter under the
// scratch prefix): durable, filtered, explicit acks, pinned to one client.
func partitionConsumers(ctx context.Context, hooks jetstream.Stream, sc *scratch, topo topology.Topology) ([]jetstream.Consumer, error) {
	consumers := make([]jetstream.Consumer, topo.Partitions)
	for p := range consumers {
		var err error
		if consumers[p], err = hooks.CreateConsumer(ctx, topo.PartitionConsumer("loadgen-p"+strconv.Itoa(p), sc.part+strings.TrimPrefix(acs.PartitionFilter(p), acs.PartitionedPrefix))); err != nil {
			return nil, fmt.Errorf("pipeline consumer %d: %w", p, err)
		}
	}
	return consumers, nil
}

// pipelineScratchPrefix starts the names of the floor's streams and bucket.
const pipelineScratchPrefix = "LOADGEN_PIPE_"

// scratch names the floor's assets; created and bucketMade say which
// exist, for delete.
type scratch struct {
	hooks, decisions, bucket string
	// in is the input subject prefix, part the partitioned one, out the
	// decisions'.
	in, part, out string
	created       []string
	bucketMade    bool
}

// delete removes the scratch streams (their consumers with them) and the
// bucket, on a deadline of its own so that an ended run still cleans up.
func (sc scratch) delete(ctx context.Context, js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var errs []error
	for _, name := range sc.created {
		if err := js.DeleteStream(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("delete scratch stream %s: %w", name, err))
		}
	}
	if sc.bucketMade {
		if err := js.DeleteKeyValue(ctx, sc.bucket); err != nil {
			errs = append(errs, fmt.Errorf("delete scratch bucket %s: %w", sc.bucket, err))
		}
	}
	return errors.Join(errs...)
}

// publishInput stores up to cfg.MaxMsgs envelopes of gen (for at most
// cfg.Limit) under the scratch input prefix, cfg.Sessions sessions
// interleaved, each in its own order, as the run publishes them; it
// returns how many the stream holds.
func publishInput(ctx context.Context, js jetstream.JetStream, hooks jetstream.Stream, gen *traffic.Generator, sc scratch, cfg pipelineConfig) (int, error) {
	type cursor struct {
		s *traffic.Session
		k int
	}
	slots := make([]cursor, max(cfg.Sessions, 1))
	next := int64(0)
	for i := range slots {
		slots[i] = cursor{s: gen.Session(next)}
		next++
	}
	deadline := time.Now().Add(cfg.Limit)
	for n := 0; n < cfg.MaxMsgs && (n%1024 != 0 || time.Now().Before(deadline)); n++ {
		c := &slots[n%len(slots)]
		for c.k == len(c.s.Envelopes) {
			*c = cursor{s: gen.Session(next)}
			next++
		}
		e := &c.s.Envelopes[c.k]
		c.k++
		m := &nats.Msg{Subject: sc.in + strings.TrimPrefix(e.Subject, acs.InboundPrefix), Data: e.Data,
			Header: nats.Header{acs.HdrMsgID: []string{e.MsgID}}}
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(30*time.Second)); err != nil {
			return 0, fmt.Errorf("pipeline publish: %w", err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(30 * time.Second):
		return 0, errors.New("pipeline publish: acks did not arrive within 30s")
	}
	info, err := hooks.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int(info.State.Msgs), nil
}

// outboxBytes is what one decision adds to its session's state write: the
// processor saves the publications with the state (statestore.Outbox),
// bodies raw, as stream.OutboxSize estimates them.
func outboxBytes() int {
	d := nats.NewMsg(acs.DecisionSubject("lg-1-0", "00000000-0000-4000-8000-000000000000"))
	d.Header = floorDecisionHeader("x", 1234567890, "preToolUse", "steps/preToolUse")
	d.Data = make([]byte, floorDecisionBytes)
	return stream.OutboxSize([]*nats.Msg{d})
}

// floorDecisionHeader is a decision's headers as the processor sets them
// (stream's decisionMsg), for an allow with a receipt.
func floorDecisionHeader(msgID string, seq uint64, hook, method string) nats.Header {
	h := nats.Header{}
	h.Set(acs.HdrReceiptKey, "c9053a4ca24aef0b")
	h.Set(acs.HdrMsgID, stream.DecisionMsgID(msgID, seq))
	h.Set(acs.HdrStreamSeq, strconv.FormatUint(seq, 10))
	h.Set(acs.HdrHook, hook)
	h.Set(acs.HdrRequestID, msgID)
	h.Set(acs.HdrMethod, method)
	h.Set(acs.HdrOriginalMsgID, msgID)
	h.Set(acs.HdrReceipt, floorReceipt)
	h.Set(acs.HdrDecision, "allow")
	return h
}

// floor is the processing side of the pipeline floor.
type floor struct {
	js    jetstream.JetStream
	sc    scratch
	batch int
	// pullExpiry is the processor's (topology's PullExpiry).
	pullExpiry time.Duration
	total      int64
	filler     []byte
	acked      atomic.Int64
	done       chan struct{}
	once       sync.Once
}

// partition consumes one partition the way a processor's worker does (a
// pull consume of the batch size, batches made of what has arrived) until
// ctx ends.
func (f *floor) partition(ctx context.Context, c jetstream.Consumer) error {
	deliveries := make(chan jetstream.Msg, f.batch)
	cc, err := c.Consume(func(m jetstream.Msg) {
		select {
		case deliveries <- m:
		case <-ctx.Done():
		}
	}, jetstream.PullMaxMessages(f.batch), jetstream.PullPriorityGroup(acs.PartitionGroup), jetstream.PullExpiry(f.pullExpiry))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	defer cc.Stop()
	// revs is the partition's last written revision of each session, as
	// the processor's state cache holds it.
	revs := map[string]uint64{}
	for {
		var batch []jetstream.Msg
		select {
		case <-ctx.Done():
			return nil
		case m := <-deliveries:
			batch = append(batch, m)
		}
	fill:
		for len(batch) < f.batch {
			select {
			case m := <-deliveries:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		if err := f.handle(ctx, batch, revs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// handle makes one batch durable as the processor's apply does, minus the
// deciding: every touched session written once with compare-and-set, all
// writes in flight together; then the decisions, all but each session's
// last first and its last after (stream's publishOutboxes); then the acks.
func (f *floor) handle(ctx context.Context, batch []jetstream.Msg, revs map[string]uint64) error {
	var keys []string
	decisions := map[string][]*nats.Msg{}
	for _, m := range batch {
		// <part>.<p>.<tenant>.<session>.<hook>
		tok := strings.Split(strings.TrimPrefix(m.Subject(), f.sc.part+"."), ".")
		if len(tok) != 4 {
			return fmt.Errorf("unexpected subject %s", m.Subject())
		}
		key := acs.SessionKey(tok[1], tok[2])
		if _, ok := decisions[key]; !ok {
			keys = append(keys, key)
		}
		meta, err := m.Metadata()
		if err != nil {
			return err
		}
		d := nats.NewMsg(f.sc.out + "." + key)
		d.Header = floorDecisionHeader(m.Headers().Get(acs.HdrMsgID), meta.Sequence.Stream, tok[3], "steps/"+tok[3])
		d.Data = f.filler[:floorDecisionBytes]
		decisions[key] = append(decisions[key], d)
	}
	saves := make([]*nats.Msg, len(keys))
	for i, key := range keys {
		s := nats.NewMsg(acs.KVSubject(f.sc.bucket, key))
		s.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(revs[key], 10))
		s.Data = f.filler[:floorStateBytes+len(decisions[key])*outboxBytes()]
		saves[i] = s
	}
	acks, err := f.publish(ctx, saves)
	if err != nil {
		return fmt.Errorf("save sessions: %w", err)
	}
	for i, key := range keys {
		revs[key] = acks[i].Sequence
	}
	var body, closing []*nats.Msg
	for _, key := range keys {
		ds := decisions[key]
		body = append(body, ds[:len(ds)-1]...)
		closing = append(closing, ds[len(ds)-1])
	}
	if _, err := f.publish(ctx, body); err != nil {
		return fmt.Errorf("publish decisions: %w", err)
	}
	if _, err := f.publish(ctx, closing); err != nil {
		return fmt.Errorf("publish decisions: %w", err)
	}
	for _, m := range batch {
		if err := m.Ack(); err != nil {
			return fmt.Errorf("ack: %w", err)
		}
	}
	if f.acked.Add(int64(len(batch))) >= f.total {
		f.once.Do(func() { close(f.done) })
	}
	return nil
}

// publish sends msgs asynchronously and waits for every acknowledgement;
// any refusal fails it (a revision conflict cannot happen with one writer
// per partition, so it would be a bug here).
func (f *floor) publish(ctx context.Context, msgs []*nats.Msg) ([]*jetstream.PubAck, error) {
	futures := make([]jetstream.PubAckFuture, len(msgs))
	for i, m := range msgs {
		// All partitions share the processor's window of 4 batches in
		// flight: a publish waits for room rather than fail.
		fu, err := f.js.PublishMsgAsync(m, jetstream.WithStallWait(10*time.Second))
		if err != nil {
			return nil, fmt.Errorf("publish to %s: %w", m.Subject, err)
		}
		futures[i] = fu
	}
	acks := make([]*jetstream.PubAck, len(msgs))
	for i, fu := range futures {
		select {
		case ack := <-fu.Ok():
			acks[i] = ack
		case err := <-fu.Err():
			return nil, fmt.Errorf("publish to %s: %w", fu.Msg().Subject, err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return acks, nil
}
