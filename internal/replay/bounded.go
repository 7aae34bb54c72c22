package replay

// boundedSet remembers the last n keys added.
type boundedSet struct {
	seen  map[string]struct{}
	order []string
	next  int
}

func newBoundedSet(n int) *boundedSet {
	return &boundedSet{seen: make(map[string]struct{}, n), order: make([]string, n)}
}

// add records key and reports whether it was recorded already (with a
// note for the reader).
func (s *boundedSet) add(key string) (string, bool) {
	if _, ok := s.seen[key]; ok {
		return " (already shown): turnguard's message published again, not a new answer", true
	}
	if old := s.order[s.next]; old != "" {
		delete(s.seen, old)
	}
	s.order[s.next] = key
	s.next = (s.next + 1) % len(s.order)
	s.seen[key] = struct{}{}
	return "", false
}

// boundedMap remembers the last n values put.
type boundedMap struct {
	m     map[string]string
	order []string
	next  int
}

func newBoundedMap(n int) *boundedMap {
	return &boundedMap{m: make(map[string]string, n), order: make([]string, n)}
}

func (b *boundedMap) get(k string) (string, bool) {
	v, ok := b.m[k]
	return v, ok
}

func (b *boundedMap) put(k, v string) {
	if _, ok := b.m[k]; !ok {
		if old := b.order[b.next]; old != "" {
			delete(b.m, old)
		}
		b.order[b.next] = k
		b.next = (b.next + 1) % len(b.order)
	}
	b.m[k] = v
}
