package client

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// CredentialsOptions returns the connection options for a turnguard
// credentials file (processor creds add, or <data-dir>/creds/*.creds): the
// credentials themselves and, when the credential may subscribe only below
// a reply prefix of its own (agents: _INBOX.agent.<tenant>), that prefix
// as the connection's inbox prefix, without which publish acknowledgements
// could not reach it.
func CredentialsOptions(path string) ([]nats.Option, error) {
	opts := []nats.Option{nats.UserCredentials(path)}
	prefix, err := InboxPrefixOf(path)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(prefix))
	}
	return opts, nil
}

// InboxPrefixOf reads the user JWT of a credentials file and returns the
// reply prefix its subscribe permissions confine it to: the single allowed
// subject of the form _INBOX.<...>.>. It is empty when the credential may
// subscribe to _INBOX.> or everything.
func InboxPrefixOf(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("NATS credentials: %w", err)
	}
	token, err := jwt.ParseDecoratedJWT(raw)
	if err != nil {
		return "", fmt.Errorf("NATS credentials %s: %w", path, err)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return "", fmt.Errorf("NATS credentials %s: %w", path, err)
	}
	var prefix string
	for _, s := range uc.Permissions.Sub.Allow {
		switch {
		case s == ">" || s == "_INBOX.>":
			return "", nil
		case strings.HasPrefix(s, "_INBOX.") && strings.HasSuffix(s, ".>"):
			if prefix != "" {
				return "", fmt.Errorf("NATS credentials %s: more than one reply prefix (%s, %s)", path, prefix, s)
			}
			prefix = strings.TrimSuffix(s, ".>")
		}
	}
	return prefix, nil
}
