package turnstate

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Agent is what an agent's sessions share: the counters of agent-keyed
// threshold rules. Its sessions live in different partitions, so every
// writer updates it with compare-and-set, and it remembers, per partition,
// the stream sequence of the last envelope it counted, so that an envelope
// decided again after a crash is not counted twice.
type Agent struct {
	Tenant   string              `json:"tenant"`
	AgentID  string              `json:"agent_id"`
	Counters map[string]*Counter `json:"counters,omitempty"`
	Applied  map[string]uint64   `json:"applied,omitempty"`
}

// NewAgent returns an agent state with nothing counted.
func NewAgent(tenant, agentID string) *Agent { return &Agent{Tenant: tenant, AgentID: agentID} }

// AgentKey is the KV key of an agent's state: <tenant>.agent-<hash>. The
// agent id is hashed because it may hold characters a key cannot.
func AgentKey(tenant, agentID string) string {
	sum := sha256.Sum256([]byte(agentID))
	return acs.SessionKey(tenant, "agent-"+hex.EncodeToString(sum[:12]))
}

// Key is the agent state's KV key.
func (a *Agent) Key() string { return AgentKey(a.Tenant, a.AgentID) }

// Clone returns a deep copy.
func (a *Agent) Clone() *Agent {
	c := *a
	c.Counters = cloneCounters(a.Counters)
	c.Applied = maps.Clone(a.Applied)
	return &c
}
