// Package examples embeds the example session of the README walkthrough
// (session/*.json), so that tests and benchmarks publish exactly the files a
// user publishes with the nats CLI.
package examples

import (
	"embed"
	"io/fs"
	"path"
	"strings"

	"github.com/turnguard/turnguard/internal/acs"
)

// SessionID is the session id the example files carry.
const SessionID = "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70"

//go:embed session/*.json
var files embed.FS

// Envelope is one example file: the hook token of its subject and its bytes.
type Envelope struct {
	Hook string
	Data []byte
}

// Session returns the example session in publishing order, moved to
// sessionID ("" keeps SessionID). Request ids only need to be unique within
// a session, so the same files make any number of sessions.
func Session(sessionID string) []Envelope {
	names, err := fs.Glob(files, "session/[0-9][0-9]-*.json")
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
			raw = []byte(strings.ReplaceAll(string(raw), SessionID, sessionID))
		}
		hook := strings.TrimSuffix(path.Base(name)[len("01-"):], ".json")
		out = append(out, Envelope{Hook: hook, Data: raw})
	}
	return out
}

// Subject is the inbound subject of an example envelope for a tenant.
func (e Envelope) Subject(tenant, sessionID string) string {
	if sessionID == "" {
		sessionID = SessionID
	}
	return acs.InboundSubject(tenant, sessionID, e.Hook)
}
