package policy_test

import (
	"fmt"
	"log"

	"github.com/turnguard/turnguard/examples"
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
	"github.com/turnguard/turnguard/schema"
)

// A rule file is parsed and compiled into a Set, as `processor rules check`
// and --rules do; the decision core then evaluates each envelope of a
// session with it. Here the README's example session meets a rule that
// denies its web_fetch call.
func ExampleCompile() {
	const src = `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: no-fetch}
rules:
  - id: NO-FETCH
    title: No web_fetch
    severity: high
    on: [toolCallRequest]
    when: tool.name == "web_fetch"
    decision: deny
`
	f, err := policy.ParseFile("no-fetch.yaml", []byte(src))
	if err != nil {
		log.Fatal(err)
	}
	rs, err := policy.Compile([]*policy.File{f})
	if err != nil {
		log.Fatal(err)
	}
	v, err := schema.New()
	if err != nil {
		log.Fatal(err)
	}
	g := guardian.New(v, guardian.Config{})
	var state *turnstate.Session
	for i, e := range examples.Session("") {
		route := acs.Route{Tenant: "default", SessionID: examples.SessionID, Hook: e.Hook}
		out := g.Decide(rs, state, nil, route, guardian.Message{Data: e.Data, Seq: uint64(i + 1)})
		if out.State != nil {
			state = out.State
		}
		var hits []string
		for _, h := range out.Hits {
			hits = append(hits, h.Rule.ID)
		}
		fmt.Println(e.Hook, out.Response.Result.Decision, hits)
	}
	// Output:
	// sessionStart allow []
	// turnStart allow []
	// userMessage allow []
	// toolCallRequest deny [NO-FETCH]
	// toolCallResult allow []
	// agentResponse allow []
	// turnEnd allow []
	// sessionEnd allow []
}

// A rule file with a mistake is refused whole, with every problem at its
// position: what `processor rules check` prints.
func ExampleCompile_diagnostics() {
	const src = `apiVersion: turnguard/v1
kind: RuleSet
metadata: {name: misspelt}
rules:
  - id: NO-FETCH
    title: No web_fetch
    severity: high
    on: [toolCallRequest]
    when: tool.nmae == "web_fetch"
    decision: deny
`
	f, err := policy.ParseFile("misspelt.yaml", []byte(src))
	if err == nil {
		_, err = policy.Compile([]*policy.File{f})
	}
	fmt.Println(err)
	// Output:
	// misspelt.yaml:9:15: when: undefined field 'nmae'
}
