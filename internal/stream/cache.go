package stream

import (
	"container/list"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/statestore"
)

// cached is a committed state and the KV revision it was read or written at
// (0: not in KV yet).
type cached[T any] struct {
	key   string
	state *T
	rev   uint64
	// outbox is what the write at rev left to publish, until it is known
	// published (sessions only).
	outbox *statestore.Outbox
	// rebuilt is set when the value at rev did not verify and state is
	// what replaces it (integrity.go): not yet written, and written by the
	// next batch whatever it decides.
	rebuilt bool
	// refuse, when set, is the refusal of every step of the session: its
	// value did not verify and could not be rebuilt. Such an entry is never
	// cached.
	refuse *acs.Error
}

// stateCache keeps the most recently used committed states of one
// partition worker — sessions, agents — so a busy key costs no KV read per
// envelope. Only its worker touches it, or a group loop applying the
// worker's batch while the worker waits for it (group.go).
type stateCache[T any] struct {
	max   int
	order *list.List // front = most recently used
	byKey map[string]*list.Element
}

func newStateCache[T any](max int) *stateCache[T] {
	return &stateCache[T]{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *stateCache[T]) get(key string) (cached[T], bool) {
	el, ok := c.byKey[key]
	if !ok {
		return cached[T]{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(cached[T]), true
}

func (c *stateCache[T]) put(v cached[T]) {
	if el, ok := c.byKey[v.key]; ok {
		el.Value = v
		c.order.MoveToFront(el)
		return
	}
	c.byKey[v.key] = c.order.PushFront(v)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(cached[T]).key)
	}
}

// published notes that key's outbox went out.
func (c *stateCache[T]) published(key string) {
	if el, ok := c.byKey[key]; ok {
		v := el.Value.(cached[T])
		v.outbox = nil
		el.Value = v
	}
}

func (c *stateCache[T]) drop(key string) {
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}
