package stream

import (
	"container/list"

	"github.com/turnguard/turnguard/internal/turnstate"
)

// cached is a session's committed state and the KV revision it was read or
// written at (0: not in KV yet).
type cached struct {
	key   string
	state *turnstate.Session
	rev   uint64
}

// stateCache keeps the most recently used committed session states of one
// partition worker, so a busy session costs no KV read per envelope. Only
// its worker touches it.
type stateCache struct {
	max   int
	order *list.List // front = most recently used
	byKey map[string]*list.Element
}

func newStateCache(max int) *stateCache {
	return &stateCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *stateCache) get(key string) (cached, bool) {
	el, ok := c.byKey[key]
	if !ok {
		return cached{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(cached), true
}

func (c *stateCache) put(v cached) {
	if el, ok := c.byKey[v.key]; ok {
		el.Value = v
		c.order.MoveToFront(el)
		return
	}
	c.byKey[v.key] = c.order.PushFront(v)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(cached).key)
	}
}

func (c *stateCache) drop(key string) {
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}
