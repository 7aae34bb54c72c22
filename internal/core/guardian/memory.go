package guardian

import (
	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/policy"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Memory keeps session and agent states the way the state bucket keeps
// them, for running the core without NATS: rule tests, scenarios and
// replay. It applies an Outcome's effects on state exactly as a partition
// worker does.
type Memory struct {
	Sessions map[string]*turnstate.Session
	Agents   map[string]*turnstate.Agent
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Sessions: map[string]*turnstate.Session{}, Agents: map[string]*turnstate.Agent{}}
}

// Decide decides one message published to route (the caller parsed the
// subject; see Unroutable otherwise) and keeps its effects on state.
func (m *Memory) Decide(g *Guardian, rs *policy.Set, route acs.Route, msg Message) Outcome {
	var agent *turnstate.Agent
	byAgent := rs != nil && rs.AgentKeyed()
	var f Facts
	// Read only when needed (most envelopes need neither), and then once
	// for both look-ups.
	if byAgent || route.Hook == "subagentStop" {
		f, _ = ReadFacts(msg.Data)
	}
	if byAgent {
		if id := f.AgentID; id != "" {
			if agent = m.Agents[turnstate.AgentKey(route.Tenant, id)]; agent == nil {
				agent = turnstate.NewAgent(route.Tenant, id)
			}
		}
	}
	if id := f.SubagentSessionID; route.Hook == "subagentStop" && id != "" && msg.Subagent == nil {
		msg.Subagent = m.Sessions[acs.SessionKey(route.Tenant, id)]
	}
	out := g.Decide(rs, m.Sessions[route.SessionKey()], agent, route, msg)
	if out.State != nil {
		m.Sessions[route.SessionKey()] = out.State
	}
	if out.Agent != nil {
		m.Agents[out.Agent.Key()] = out.Agent
	}
	if s := out.Spawned; s != nil {
		switch child, exists := m.Sessions[s.Key()]; {
		case !exists:
			m.Sessions[s.Key()] = s
		case child != nil:
			// Begun before the spawn, or spawned before: linked now, or
			// given the parent's live taints, as the processor does.
			if adopted := child.Clone(); adopted.Adopt(s) {
				m.Sessions[s.Key()] = adopted
			}
		}
	}
	return out
}
