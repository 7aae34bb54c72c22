// Command client is a runnable example of pkg/client: it sends the taint
// example session (examples/taint) to a running processor, one envelope at
// a time, waiting for each decision as an agent framework would before
// running the step.
//
//	go run ./cmd/processor                       # in one terminal
//	go run ./examples/client                     # in another
//	go run ./examples/client --posture deny --timeout 500ms
//	go run ./examples/client --receipt-key /srv/turnguard/receipt-key.pub
//	go run ./examples/client --nats-creds acme.creds --tenant acme   # processor creds add --role agent --tenant acme
//	go run ./examples/client --nats-context tg-agent                 # a nats CLI context
//
// It connects as every turnguard command does (internal/natsconn; --help
// lists the order), and without anything set to nats://127.0.0.1:4222 as
// the agent the processor wrote data/creds/agent.creds for (tenant
// default); an agent credential may only publish its tenant's envelopes
// and read its tenant's decisions.
//
// A decision counts only when its Ed25519 receipt verifies with the
// processor's public key, which the processor writes next to its private
// key (<data-dir>/receipt-key.pub) and serves at GET /receipt-key.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/natsconn"
	"github.com/turnguard/turnguard/pkg/client"
)

// defaultCreds is the agent credential a processor started as the README's
// quick start writes.
const defaultCreds = "data/creds/agent.creds"

func main() {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	var nf natsconn.Flags
	nf.Register(fs, "an agent credential (default "+defaultCreds+")")
	tenant := fs.String("tenant", "default", "the tenant the credential is bound to")
	posture := fs.String("posture", "deny", "what to do when no decision arrives in time: deny or proceed")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for each decision")
	session := fs.String("session", "", "session id (default: a new one each run)")
	receiptKey := fs.String("receipt-key", "data/receipt-key.pub", "the processor's receipt public key (PEM); \"none\" for a processor run with --receipt-key none")
	// An agent's credential: variables of its own (TURNGUARD_CLIENT_…),
	// as TURNGUARD_NATS_CREDS is the processor's.
	connOpts := natsconn.Options{Implicit: true, DefaultURL: nats.DefaultURL, DefaultCreds: defaultCreds, EnvPrefix: "TURNGUARD_CLIENT_"}
	fs.Usage = cliflag.Usage(fs, "Usage: client [flags]\n\nSends the taint example session to a running processor through pkg/client.\nEvery flag can also be set as "+cliflag.EnvPrefix+"<FLAG_NAME>; the credential and the receipt key\nas TURNGUARD_CLIENT_NATS_CREDS, _NATS_CONTEXT, _RECEIPT_KEY.\n\nFlags:\n",
		natsconn.Help(connOpts, nats.DefaultURL+" with the credentials "+defaultCreds+" (unless another source gives some)"))
	renames := natsconn.EnvRenames(connOpts.EnvPrefix)
	renames["receipt-key"] = connOpts.EnvPrefix + "RECEIPT_KEY"
	if err := cliflag.ApplyEnvAs(fs, renames); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(2)
	}
	_ = fs.Parse(os.Args[1:]) // ExitOnError: a bad command line exits here
	target, err := natsconn.Resolve(nf, connOpts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	opt := client.Options{Tenant: *tenant, Posture: client.Posture(*posture), Timeout: *timeout}
	if *receiptKey == "none" {
		// Without receipts anyone allowed to publish on the decision
		// subject can answer in turnguard's name.
		opt.InsecureAcceptUnsignedDecisions = true
	} else {
		key, err := client.LoadReceiptKey(*receiptKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "client:", err)
			os.Exit(1)
		}
		opt.TrustedKeys = []ed25519.PublicKey{key}
	}
	if err := run(target, opt, *session); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

func run(target natsconn.Target, opt client.Options, session string) error {
	nc, err := nats.Connect(target.URL, append([]nats.Option{nats.Name("turnguard-example-client")}, target.Options...)...)
	if err != nil {
		return fmt.Errorf("connect to NATS %s (from %s): %w", target.URL, target.Source, err)
	}
	defer nc.Close()
	c, err := client.New(nc, opt)
	if err != nil {
		return err
	}
	if session == "" {
		session = newUUID()
	}
	fmt.Printf("session %s\n", session)
	for _, e := range examples.Taint(session) {
		// Stamped with the time it is sent, as a framework does: the
		// processor refuses envelopes outside its skew window (-32006).
		d, err := c.Decide(context.Background(), examples.Stamp(e.Data, time.Now()))
		if err != nil {
			return err
		}
		switch {
		case d.FromPosture:
			fmt.Printf("%-16s %-5s  (no decision: %v; posture %s)\n", e.Hook, d.Disposition, d.Failure, opt.Posture)
		case d.Error != nil:
			fmt.Printf("%-16s error %d: %s\n", e.Hook, d.Error.Code, d.Error.Message)
		default:
			fmt.Printf("%-16s %-5s  %s\n", e.Hook, d.Disposition, d.Reasoning)
		}
	}
	if st := c.Stats(); st.DroppedUnverified > 0 {
		fmt.Printf("dropped %d message(s) on the decision subject whose receipt did not verify\n", st.DroppedUnverified)
	}
	return nil
}

// newUUID returns a random version-4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
