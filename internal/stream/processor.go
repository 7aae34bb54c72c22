package stream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/internal/membership"
	"github.com/turnguard/turnguard/internal/opsalert"
	"github.com/turnguard/turnguard/internal/statestore"
	"github.com/turnguard/turnguard/internal/topology"
)

// Config configures a Processor.
type Config struct {
	Topology topology.Topology
	// BatchSize is the most messages a partition worker decides and
	// acknowledges together.
	BatchSize int
	// CacheSize is how many session states each partition worker keeps.
	CacheSize int
	// InstanceID names this instance among those sharing the partitions
	// (its key in acs.MembersBucket); empty: host, pid and a random suffix.
	InstanceID string
	// StateKey authenticates every value written to acs.StateBucket (at least
	// turnstate.StateKeySize bytes). Every instance sharing the partitions
	// must have the same key: a value another key sealed does not verify and
	// is rebuilt. Empty: a random key of this OS process, shared by the
	// processors it runs and lost when it exits — for tests and embedded
	// use; a restart then finds every stored state unverified.
	StateKey []byte
	// MaxValueBytes bounds one session's stored value, its state and the
	// outbox of its last write (0, or more than the server's max_payload
	// allows: that). An envelope whose application would exceed it is
	// refused (-32603 state_too_large) and dead-lettered, and its session
	// keeps its previous state.
	MaxValueBytes int
	// StuckAfter is how long an owned partition may keep failing before
	// Ready says the processor is not (0: DefaultStuckAfter).
	StuckAfter time.Duration
	// Observer is told what the workers made durable, for metrics (nil:
	// nothing is observed).
	Observer Observer
	// SingleReceipts signs every decision's and alert's receipt on its own
	// (turnguard-receipt/1) instead of once per batch over a Merkle root
	// (turnguard-receipt-batch/1, each message carrying its inclusion
	// path): an Ed25519 signature per message rather than per batch.
	SingleReceipts bool
	// SubagentWait is the longest a subagentStop waits for its child's
	// partition to have applied the child's envelopes stored before it
	// (0: DefaultSubagentWait; negative: no wait). Past it, or past a
	// worker's budget of a tenth of its time spent waiting, the child
	// counts as carrying every taint.
	SubagentWait time.Duration
	// GroupLoops is how many loops apply the partitions' live batches
	// together, across partitions (group.go): 0 means DefaultGroupLoops,
	// a negative number that every partition worker applies its own
	// batches alone.
	GroupLoops int
	// GroupLinger is how long a group loop waits for more partitions'
	// batches once it took those ready (at most 1 ms; 0: not at all).
	GroupLinger time.Duration
	// GroupMax is the most envelopes a group loop takes at once (0: twice
	// BatchSize); one partition's batch is never split.
	GroupMax int
}

// DefaultGroupLoops is Config.GroupLoops' default: two, so that one loop
// decides while the other's writes are in flight.
const DefaultGroupLoops = 2

// groupLoops is the number of group loops, 0 when batches are not grouped.
func (c Config) groupLoops() int { return orDefault(c.GroupLoops, DefaultGroupLoops) }

// orDefault is a setting's value: def when it is 0 (unset), 0 (off) when
// it is negative.
func orDefault[T int | time.Duration](v, def T) T {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}

// groupMax is the most envelopes one group takes.
func (c Config) groupMax() int {
	if c.GroupMax > 0 {
		return c.GroupMax
	}
	return 2 * c.BatchSize
}

// DefaultSubagentWait is Config.SubagentWait's default: time for a busy
// partition to apply a batch or two, short of an adapter's timeout.
const DefaultSubagentWait = 2 * time.Second

func (c Config) subagentWait() time.Duration { return orDefault(c.SubagentWait, DefaultSubagentWait) }

// DefaultConfig is the processor's default configuration.
func DefaultConfig() Config {
	return Config{Topology: topology.Default(), BatchSize: 256, CacheSize: 4096}
}

// Stats counts what a Processor did. Fields are safe to read while it runs.
type Stats struct {
	// Processed counts inbound messages whose effects were made durable
	// and which were acknowledged (redeliveries included).
	Processed atomic.Uint64
	// Skipped counts redeliveries found already applied.
	Skipped atomic.Uint64
	// DeadLettered counts refusals sent to ACS_DLQ (a retried batch may
	// count one twice; the stream keeps one).
	DeadLettered atomic.Uint64
	// Recovered counts messages read back from the stream after a restart
	// or a delivery gap.
	Recovered atomic.Uint64
	Conflicts atomic.Uint64
	Retries   atomic.Uint64
	// Republished counts publications sent again from an outbox found
	// with a state (after a crash or a handover).
	Republished atomic.Uint64
	// IntegrityFailures counts stored values (sessions, agent states) that
	// did not verify against the state key: edited, moved to another key,
	// sealed with another key, or written by a version without MACs.
	IntegrityFailures atomic.Uint64
	// Rebuilt counts sessions rebuilt from ACS_HOOKS after their value
	// failed to verify; Unverifiable those whose history was gone, whose
	// steps were refused instead.
	Rebuilt      atomic.Uint64
	Unverifiable atomic.Uint64
	// Isolated counts envelopes set aside because they could not be
	// applied (refused and dead-lettered instead), and publications the
	// server refused for good (dropped); each is alerted.
	Isolated atomic.Uint64
	// Recreated counts streams, buckets and consumers recreated after they
	// disappeared while the processor ran.
	Recreated atomic.Uint64
	// OutboxRefused counts publications of verified outboxes that were not
	// published because their subject is not one of turnguard's outputs.
	OutboxRefused atomic.Uint64
	// MembersRejected counts the keys in acs.MembersBucket whose records were
	// left out of the member set because they did not verify: fake
	// members.
	MembersRejected atomic.Uint64
	// SubagentsUnknown counts subagentStops decided without a current
	// state of their child (its partition had not applied the child's
	// envelopes within the wait): the child counted as carrying every
	// taint.
	SubagentsUnknown atomic.Uint64
	// SubagentsAdopted counts subagent sessions that began before their
	// spawn was applied and were linked to their parent then (adopt): a
	// framework that does not wait for subagentStart's decision.
	SubagentsAdopted atomic.Uint64
	// Groups counts the groups of live batches applied together,
	// GroupedBatches the partition batches in them and GroupedEnvelopes
	// their envelopes: the ratios say how much a group took on average.
	Groups           atomic.Uint64
	GroupedBatches   atomic.Uint64
	GroupedEnvelopes atomic.Uint64
	// GroupFallbacks counts live batches whose group attempt failed (a
	// lost revision check, an error) and which were applied alone.
	GroupFallbacks atomic.Uint64
}

// Processor consumes ACS_HOOKS with one worker per partition and publishes
// decisions, alerts, dead letters and session state.
type Processor struct {
	js       jetstream.JetStream
	sealer   *turnstate.Sealer
	guardian *guardian.Guardian
	rules    *policy.Source
	cfg      Config
	log      zerolog.Logger
	stats    Stats
	running  atomic.Bool
	// own is the running ownership loop, whose snapshot says which
	// partitions this instance consumes; unrouted is the worker every
	// instance runs.
	own      atomic.Pointer[ownership]
	unrouted atomic.Pointer[worker]
	// hooksSeen is the highest ACS_HOOKS sequence the workers have read.
	hooksSeen atomic.Uint64
	repair    *repairer
}

// owned lists the workers this instance runs now.
func (p *Processor) owned() []*worker {
	var out []*worker
	if w := p.unrouted.Load(); w != nil {
		out = append(out, w)
	}
	if o := p.own.Load(); o != nil {
		if ws := o.snapshot.Load(); ws != nil {
			out = append(out, *ws...)
		}
	}
	return out
}

// New returns a Processor publishing through nc and deciding with the rule
// set rules holds.
func New(nc *nats.Conn, g *guardian.Guardian, rules *policy.Source, cfg Config, log zerolog.Logger) (*Processor, error) {
	if cfg.BatchSize < 1 || cfg.CacheSize < 1 {
		return nil, fmt.Errorf("batch size and cache size must be positive (got %d, %d)", cfg.BatchSize, cfg.CacheSize)
	}
	if err := cfg.Topology.Validate(); err != nil {
		return nil, err
	}
	key := cfg.StateKey
	if len(key) == 0 {
		key = processKey()
		log.Warn().Msg("no state key configured: state values are sealed with a key of this process only; after a restart every stored state fails to verify and is rebuilt")
	}
	sealer, err := turnstate.NewSealer(key)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.AsyncWindow()))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	p := &Processor{js: js, sealer: sealer, guardian: g, rules: rules, cfg: cfg, log: log}
	p.repair = &repairer{js: js, topo: cfg.Topology, seen: p.hooksSeen.Load, signer: g.Receipts(), log: log, stats: &p.stats}
	return p, nil
}

// processKey is the state key of processors configured without one: random,
// and the same for every processor of this OS process, so that several
// instances in one process (tests, loadgen --processors) verify each
// other's values.
var processKey = sync.OnceValue(func() []byte {
	k := make([]byte, turnstate.StateKeySize)
	// crypto/rand.Read never fails on supported platforms (Go 1.24+).
	_, _ = rand.Read(k)
	return k
})

// self describes this instance for acs.MembersBucket.
func (p *Processor) self() (membership.Member, error) {
	host, _ := os.Hostname()
	id := p.cfg.InstanceID
	if id == "" {
		id = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), nuid.Next()[:8])
	}
	id = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '=' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, id)
	if id == "" {
		return membership.Member{}, errors.New("the instance id is empty")
	}
	// Started is for operators; nothing decides on it.
	return membership.Member{ID: id, Host: host, PID: os.Getpid(), Started: time.Now().UTC()}, nil
}

// newWorker returns the worker of one consumer of ACS_HOOKS.
func (p *Processor) newWorker(c jetstream.Consumer, hooks, decisions jetstream.Stream, store *statestore.Store, filter string, routed bool) *worker {
	consumer := c.CachedInfo().Name
	return &worker{
		consumer: consumer, filter: filter, routed: routed,
		cons: c, hooks: hooks, decisions: decisions, js: p.js, store: store, sealer: p.sealer, guardian: p.guardian, rules: p.rules,
		cache: newStateCache[turnstate.Session](p.cfg.CacheSize), agents: newStateCache[turnstate.Agent](p.cfg.CacheSize), stats: &p.stats,
		log:       p.log.With().Str("consumer", consumer).Logger(),
		batchSize: p.cfg.BatchSize, maxValueBytes: p.cfg.MaxValueBytes, ackWait: p.cfg.Topology.AckWait, pullExpiry: p.cfg.Topology.PullExpiry(), receiptKey: receiptKeyID(p.guardian.Receipts()), singleReceipts: p.cfg.SingleReceipts,
		kick: make(chan struct{}, 1), restart: make(chan struct{}, 1), wake: make(chan struct{}, 1), seen: &p.hooksSeen,
		obs: p.cfg.Observer, childWait: waitBudget{max: p.cfg.subagentWait()},
	}
}

// AsyncWindow is how many asynchronous publishes the processor's
// connection may have unacknowledged (loadgen's pipeline floor takes the
// same). Every partition worker (and the one of malformed subjects) can
// have a full batch's state writes, or its decisions and alerts, in flight
// at once: up to about twice the batch size each. With four batches in
// all, an instance taking over a cut-off one's partitions in the compose
// cluster had its batches of 256 stall ("too many outstanding async
// published messages") and retried.
func (c Config) AsyncWindow() int {
	return max(4*c.BatchSize, 2*c.BatchSize*(c.Topology.Partitions+1))
}

// Ensure creates or checks the topology as Run does first, waiting while
// JetStream is not there yet: for what must find the assets before Run
// starts, such as the HTTP endpoint and its ACS_HANDSHAKES.
func (p *Processor) Ensure(ctx context.Context) error {
	return p.ensureAtStart(ctx)
}

// ensureAtStart is topology.EnsureLogged, tried again while JetStream is
// only slow or not there yet — a cluster still electing its leaders or
// short of the peers an R3 asset needs, a server busy past the API
// timeout — so that a processor started next to its servers waits, loudly
// (a warning per attempt, readiness says why), instead of exiting. What
// waiting cannot cure (an incompatible asset, a topology the flags got
// wrong, a permission the credential lacks) returns at once.
func (p *Processor) ensureAtStart(ctx context.Context) error {
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		// One request first, so that a JetStream that does not answer
		// costs one API timeout per attempt rather than one per asset.
		// Only its silence counts: a credential may lack the permission
		// for it, and Ensure says what is wrong then.
		_, err := p.js.AccountInfo(ctx)
		if err == nil || !jetStreamUnavailable(err) {
			err = topology.EnsureLogged(ctx, p.js, p.cfg.Topology, p.log)
		}
		if err == nil || ctx.Err() != nil || !jetStreamUnavailable(err) {
			p.repair.failed.Store(nil)
			return err
		}
		why := "waiting for JetStream to create or check turnguard's streams: " + err.Error()
		p.repair.failed.Store(&why)
		p.log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", backoff).Msg("JetStream cannot create or check turnguard's streams yet; waiting")
		if !sleep(ctx, backoff) {
			return err
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// jetStreamUnavailable reports whether err says that JetStream did not
// answer or cannot place assets yet, rather than that something is wrong
// for good.
func jetStreamUnavailable(err error) bool {
	if ie := (*topology.IncompatibleError)(nil); errors.As(err, &ie) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		return true
	}
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case jsClusterNoPeers, jsClusterNotAvailable:
		return true
	}
	return false
}

// JetStream API error codes (nats-server's errors.json) of a cluster that
// is forming or has lost peers: "no suitable peers for placement" and
// "JetStream system temporarily unavailable".
const (
	jsClusterNoPeers      jetstream.ErrorCode = 10005
	jsClusterNotAvailable jetstream.ErrorCode = 10008
)

// Stats returns the processor's live counters.
func (p *Processor) Stats() *Stats { return &p.stats }

// Run makes sure the streams, bucket and consumers exist and are
// compatible, then processes until ctx ends. On return every worker has
// finished its in-flight batch.
func (p *Processor) Run(ctx context.Context) error {
	if err := p.ensureAtStart(ctx); err != nil {
		return err
	}
	hooks, err := p.js.Stream(ctx, acs.HooksStream)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", acs.HooksStream, err)
	}
	decisions, err := p.js.Stream(ctx, acs.DecisionsStream)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", acs.DecisionsStream, err)
	}
	kv, err := p.js.KeyValue(ctx, acs.StateBucket)
	if err != nil {
		return fmt.Errorf("open KV bucket %s: %w", acs.StateBucket, err)
	}
	memberKV, err := p.js.KeyValue(ctx, acs.MembersBucket)
	if err != nil {
		return fmt.Errorf("open KV bucket %s: %w", acs.MembersBucket, err)
	}
	stateStream, err := p.js.Stream(ctx, acs.KVStream(acs.StateBucket))
	if err != nil {
		return fmt.Errorf("open the stream of KV bucket %s: %w", acs.StateBucket, err)
	}
	store := statestore.NewStore(kv, p.sealer).WithMarkers(stateStream)
	newWorker := func(consumer, filter string, routed bool) (*worker, error) {
		c, err := hooks.Consumer(ctx, consumer)
		if err != nil {
			return nil, fmt.Errorf("open consumer %s: %w", consumer, err)
		}
		return p.newWorker(c, hooks, decisions, store, filter, routed), nil
	}
	var grp *group
	if loops := p.cfg.groupLoops(); loops > 0 {
		grp = newGroup(p.cfg.groupMax(), p.cfg.GroupLinger)
	}
	partitions := make([]*worker, p.cfg.Topology.Partitions)
	for i := range partitions {
		if partitions[i], err = newWorker(acs.PartitionConsumer(i), acs.PartitionFilter(i), true); err != nil {
			return err
		}
		partitions[i].group = grp
	}
	// Every instance takes malformed subjects: they are only ever
	// dead-lettered, in any order, under a deterministic Nats-Msg-Id.
	unrouted, err := newWorker(acs.UnroutedConsumer, acs.InboundPrefix+".>", false)
	if err != nil {
		return err
	}
	self, err := p.self()
	if err != nil {
		return err
	}
	own := &ownership{
		self: self, members: membership.NewRegistry(memberKV, p.sealer, p.memberRejected(ctx)), hooks: hooks, workers: partitions,
		interval: p.cfg.Topology.MemberTTL / 5, log: p.log,
		running: map[int]*running{}, suspect: map[int]string{}, pinned: make(chan struct{}, 1),
		liveness: membership.NewLiveness(p.cfg.Topology.MemberTTL), memberTTL: p.cfg.Topology.MemberTTL,
		purges:   newPurgeWatch(p.js, purgeLimitsOf(p.cfg.Topology), p.guardian.Receipts(), p.log),
		unrouted: unrouted,
		repair:   p.repair,
	}
	for _, w := range partitions {
		w.onPinned = own.poke
	}
	p.own.Store(own)
	p.unrouted.Store(unrouted)
	p.log.Info().Str("instance", self.ID).Int("partitions", p.cfg.Topology.Partitions).Int("batch", p.cfg.BatchSize).Int("group_loops", p.cfg.groupLoops()).Msg("processing")
	wctx, fatal := context.WithCancelCause(ctx)
	defer fatal(nil)
	var wg sync.WaitGroup
	if grp != nil {
		wg.Go(func() { grp.run(wctx, p.cfg.groupLoops()) })
	}
	wg.Go(func() { unrouted.supervise(wctx, fatal, true) })
	wg.Go(func() { own.run(wctx, fatal) })
	p.running.Store(true)
	wg.Wait()
	p.running.Store(false)
	if ctx.Err() == nil {
		return context.Cause(wctx)
	}
	return nil
}

// purgeLimitsOf is what removes messages by itself from the streams sessions
// are rebuilt from, for purgeWatch.
func purgeLimitsOf(t topology.Topology) map[string]purgeLimits {
	return map[string]purgeLimits{
		// ACS_HOOKS refuses new messages at its byte limit (discard new).
		acs.HooksStream:               {maxAge: t.HooksRetention.MaxAge},
		acs.DecisionsStream:           {maxAge: t.DecisionsRetention.MaxAge, bytes: t.DecisionsRetention.MaxBytes > 0},
		acs.KVStream(acs.StateBucket): {maxAge: t.SessionTTL, kv: true},
	}
}

// memberRejected returns what the ownership loop calls for a member record
// that does not verify: it is counted, logged and alerted once per key, not
// at every tick that sees it again nor at every put that keeps a fake
// alive. Only the ownership goroutine calls it.
func (p *Processor) memberRejected(ctx context.Context) func(key string, rev uint64, reason string) {
	seen := map[string]bool{}
	return func(key string, rev uint64, reason string) {
		if seen[key] {
			return
		}
		if len(seen) >= 1024 {
			clear(seen) // bounded: a flood of fakes is reported again, not remembered forever
		}
		seen[key] = true
		id := key + ":" + strconv.FormatUint(rev, 10)
		p.stats.MembersRejected.Add(1)
		p.log.Error().Str("key", key).Uint64("revision", rev).Str("reason", reason).
			Msg("a record in " + acs.MembersBucket + " was not written by a processor holding the state key; it is not counted as a member")
		msg := fmt.Sprintf("the record %s at revision %d of %s failed its integrity check (%s): it is no processor's, and is left out of the partition assignment",
			key, rev, acs.MembersBucket, reason)
		details := map[string]any{"key": key, "revision": rev, "reason": reason, "bucket": acs.MembersBucket}
		a := opsalert.Alert{ID: AlertMemberRejected, Severity: "critical", Title: "Fake processor member record", Message: msg,
			MsgID: AlertMemberRejected + ":" + id, Details: details}
		if err := opsalert.Publish(ctx, p.js, p.guardian.Receipts(), a); err != nil && ctx.Err() == nil {
			p.log.Error().Err(err).Msg("publish the member integrity alert")
		}
	}
}

// receiptKeyID names the key the core signs receipts with (header
// Acs-Receipt-Key); "" when receipts are off.
func receiptKeyID(s *receipt.Signer) string {
	if s == nil {
		return ""
	}
	return s.KeyID
}
