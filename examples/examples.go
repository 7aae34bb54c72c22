// Package examples embeds the example sessions of the walkthrough (docs/WALKTHROUGH.md)
// (session/*.json, taint/*.json), so that tests and benchmarks publish
// exactly the files a user publishes with the nats CLI.
package examples

import (
	"embed"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// SessionID and TaintSessionID are the session ids the example files of
// session/ and taint/ carry.
const (
	SessionID      = "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70"
	TaintSessionID = "3b9d6f2e-8c41-4e7a-b5d0-9a2c4e6f8b13"
)

//go:embed session/*.json taint/*.json
var files embed.FS

// Envelope is one example file: the hook token of its subject and its bytes.
type Envelope struct {
	Hook string
	Data []byte
}

// Session returns the example session in publishing order, moved to
// sessionID ("" keeps SessionID). Request ids only need to be unique within
// a session, so the same files make any number of sessions.
func Session(sessionID string) []Envelope { return load("session", SessionID, sessionID) }

// Taint returns the taint example: web content with untrusted provenance
// in turn 1, then in turn 2 a shell command derived from it.
func Taint(sessionID string) []Envelope { return load("taint", TaintSessionID, sessionID) }

func load(dir, own, sessionID string) []Envelope {
	names, err := fs.Glob(files, dir+"/[0-9][0-9]-*.json")
	if err != nil {
		panic(err) // the pattern is a constant
	}
	out := make([]Envelope, 0, len(names))
	for _, name := range names {
		raw, err := files.ReadFile(name)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		if sessionID != "" {
			raw = []byte(strings.ReplaceAll(string(raw), own, sessionID))
		}
		hook := strings.TrimSuffix(path.Base(name)[len("01-"):], ".json")
		out = append(out, Envelope{Hook: hook, Data: raw})
	}
	return out
}

// Subject is the inbound subject of an example envelope for a tenant and
// session.
func (e Envelope) Subject(tenant, sessionID string) string {
	return acs.InboundSubject(tenant, sessionID, e.Hook)
}

// timestampMember is the first "timestamp" member of an example file:
// params.timestamp, which comes before the payload.
var timestampMember = regexp.MustCompile(`"timestamp":\s*"[^"]*"`)

// Stamp returns an example envelope with its params.timestamp set to at.
// The files carry fixed times; a Guardian refuses an envelope whose time is
// further than its skew window (default 5 minutes) from its arrival, so an
// example sent live is stamped with the time it is sent.
func Stamp(data []byte, at time.Time) []byte {
	stamped := false
	return timestampMember.ReplaceAllFunc(data, func(m []byte) []byte {
		if stamped {
			return m
		}
		stamped = true
		return []byte(`"timestamp": "` + at.UTC().Format(time.RFC3339Nano) + `"`)
	})
}

//go:embed agentdojo/rules.yaml
var agentDojoRules []byte

// AgentDojoRulesPath names the embedded AgentDojo operator file on the
// command line and in diagnostics.
const AgentDojoRulesPath = "builtin:agentdojo"

// AgentDojoRules returns the operator file for AgentDojo's tool suites
// (agentdojo/rules.yaml): which of their tools only read.
func AgentDojoRules() []byte { return agentDojoRules }
