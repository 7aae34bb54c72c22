package secgate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/turnguard/turnguard/internal/natsauth"
	"github.com/turnguard/turnguard/internal/secgate"
)

const prefix = natsauth.SecurityConsumerCreate + "."

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, subject, body string
		ok                  bool
	}{
		{"pull consumer", prefix + "ACS_DECISIONS", `{"stream_name":"ACS_DECISIONS","config":{"ack_policy":"none"}}`, true},
		{"named with a filter", prefix + "ACS_ALERTS.c1.acs.alerts.>", `{"stream_name":"ACS_ALERTS","config":{"name":"c1","filter_subject":"acs.alerts.>"}}`, true},
		{"push to the security inbox", prefix + "KV_ACS_TURNSTATE.w1.$KV.ACS_TURNSTATE.>", `{"stream_name":"KV_ACS_TURNSTATE","config":{"deliver_subject":"_INBOX.security.abc"}}`, true},
		{"update becomes create", prefix + "ACS_DECISIONS.c1", `{"stream_name":"ACS_DECISIONS","config":{"name":"c1"},"action":"update"}`, true},
		{"push into ACS_HOOKS", prefix + "ACS_DECISIONS", `{"stream_name":"ACS_DECISIONS","config":{"deliver_subject":"acs.hooks.x.y.z"}}`, false},
		{"push onto a member record", prefix + "KV_ACS_PROCESSORS", `{"config":{"deliver_subject":"$KV.ACS_PROCESSORS.p1"}}`, false},
		{"push onto a decision", prefix + "ACS_ALERTS", `{"config":{"deliver_subject":"acs.decisions.t.s"}}`, false},
		{"key in capitals", prefix + "ACS_DECISIONS", `{"config":{"DELIVER_SUBJECT":"acs.hooks.x.y.z"}}`, false},
		{"config key in capitals", prefix + "ACS_DECISIONS", `{"CONFIG":{"deliver_subject":"acs.hooks.x.y.z"}}`, false},
		{"second key wins", prefix + "ACS_DECISIONS", `{"config":{"deliver_subject":"_INBOX.security.a","Deliver_Subject":"acs.hooks.x.y.z"}}`, false},
		{"a neighbour of the inbox", prefix + "ACS_DECISIONS", `{"config":{"deliver_subject":"_INBOX.securityx.a"}}`, false},
		{"the inbox itself", prefix + "ACS_DECISIONS", `{"config":{"deliver_subject":"_INBOX.security"}}`, false},
		{"a wildcard", prefix + "ACS_DECISIONS", `{"config":{"deliver_subject":"_INBOX.security.*"}}`, false},
		{"ACS_HOOKS: a pull consumer", prefix + "ACS_HOOKS", `{"config":{}}`, false},
		{"ACS_HOOKS: a push consumer on the inbox", prefix + "ACS_HOOKS.h1.acs.hooks.>", `{"config":{"name":"h1","deliver_subject":"_INBOX.security.h"}}`, true},
		{"ACS_HOOKS: a push consumer elsewhere", prefix + "ACS_HOOKS", `{"config":{"deliver_subject":"acs.decisions.x.y"}}`, false},
		{"ACS_HOOKS: the processor's name", prefix + "ACS_HOOKS.turnguard-p000", `{"config":{"name":"turnguard-p000","deliver_subject":"_INBOX.security.h"}}`, false},
		{"ACS_HOOKS: the processor's name in the subject", prefix + "ACS_HOOKS.turnguard-p000.acs.>", `{"config":{"deliver_subject":"_INBOX.security.h"}}`, false},
		{"ACS_HOOKS: the processor's durable", prefix + "ACS_HOOKS", `{"config":{"durable_name":"turnguard-unrouted","deliver_subject":"_INBOX.security.h"}}`, false},
		{"another subject", "turnguard.other.ACS_DECISIONS", `{"config":{}}`, false},
		{"no stream", prefix, `{"config":{}}`, false},
		{"not JSON", prefix + "ACS_DECISIONS", `{"config":`, false},
		{"unknown action", prefix + "ACS_DECISIONS", `{"config":{},"action":"destroy"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := secgate.Check(c.subject, []byte(c.body))
			if (err == nil) != c.ok {
				t.Fatalf("Check = %v, want ok=%v", err, c.ok)
			}
			if err != nil {
				return
			}
			checkForwarded(t, c.subject, req)
		})
	}
}

// checkForwarded asserts what a forwarded request must be, as the server
// reads it.
func checkForwarded(t *testing.T, subject string, req secgate.Request) {
	t.Helper()
	if want := "$JS.API.CONSUMER.CREATE." + strings.TrimPrefix(subject, prefix); req.Subject != want {
		t.Fatalf("forwarded to %q, want %q", req.Subject, want)
	}
	var got server.CreateConsumerRequest
	if err := json.Unmarshal(req.Data, &got); err != nil {
		t.Fatalf("forwarded %s: %v", req.Data, err)
	}
	if got.Action != server.ActionCreate {
		t.Fatalf("forwarded action %v, want create", got.Action)
	}
	if d := got.Config.DeliverSubject; d != "" && !strings.HasPrefix(d, natsauth.SecurityDeliverPrefix) {
		t.Fatalf("forwarded deliver subject %q", d)
	}
	if strings.HasPrefix(req.Subject, "$JS.API.CONSUMER.CREATE.ACS_HOOKS") {
		if got.Config.DeliverSubject == "" || strings.HasPrefix(got.Config.Name, "turnguard") || strings.HasPrefix(got.Config.Durable, "turnguard") ||
			strings.HasPrefix(req.Subject, "$JS.API.CONSUMER.CREATE.ACS_HOOKS.turnguard") {
			t.Fatalf("forwarded a consumer on ACS_HOOKS that is not a push consumer of the security role's: %s %s", req.Subject, req.Data)
		}
	}
}

// FuzzCheck: whatever the security role sends, what is forwarded creates
// (never updates) a pull consumer or a push consumer on its inbox.
func FuzzCheck(f *testing.F) {
	f.Add("ACS_DECISIONS", `{"config":{"deliver_subject":"_INBOX.security.a"}}`)
	f.Add("ACS_DECISIONS.c.acs.>", `{"config":{"deliver_subject":"acs.hooks.a.b.c","DeliverSubject":"x"}}`)
	f.Add("ACS_HOOKS.turnguard-p000", `{"config":{"deliver_subject":"_INBOX.security.a"}}`)
	f.Add("KV_ACS_PROCESSORS", `{"config":{"Deliver_subject":"_INBOX.security.a","deliver_subject":"$KV.x"},"action":"update"}`)
	f.Fuzz(func(t *testing.T, rest, body string) {
		subject := prefix + rest
		req, err := secgate.Check(subject, []byte(body))
		if err != nil {
			return
		}
		checkForwarded(t, subject, req)
	})
}
