package turnstate

import "slices"

// The spawn graph: which sessions spawned which subagents, as read back
// from a history of subagentStarts (links: subagent key → the keys of the
// sessions that spawned it, in stream order). A session's state depends
// on every session connected to it: a subagent's starts from each spawn
// (Session.Adopt), and its taint reaches a spawner at subagentStop. So a
// state rebuilt from history, a replay shard and a timeline take a
// session's whole connected spawn graph.

// AddSpawnLink records that parent spawned child (once; a session naming
// itself is no link).
func AddSpawnLink(links map[string][]string, child, parent string) {
	if child != parent && !slices.Contains(links[child], parent) {
		links[child] = append(links[child], parent)
	}
}

// SpawnConnected returns sessions (keys) and every session connected to
// one of them by a spawn, transitively: the sessions that spawned them,
// those they spawned, and so on (a subagent spawned by two sessions joins
// their graphs).
func SpawnConnected(sessions map[string]bool, links map[string][]string) map[string]bool {
	roots := SpawnRoots(links)
	rootOf := func(k string) string {
		if r, ok := roots[k]; ok {
			return r
		}
		return k
	}
	wanted := map[string]bool{}
	out := make(map[string]bool, len(sessions))
	for key := range sessions {
		out[key] = true
		wanted[rootOf(key)] = true
	}
	for k, r := range roots {
		if wanted[r] {
			out[k] = true
		}
	}
	return out
}

// SpawnRoots maps every session named in links to the root of its
// connected spawn graph: the least key of the sessions connected to it,
// so that one replay worker decides them all, in stream order.
func SpawnRoots(links map[string][]string) map[string]string {
	up := map[string]string{}
	var find func(string) string
	find = func(k string) string {
		p, ok := up[k]
		if !ok || p == k {
			return k
		}
		r := find(p)
		up[k] = r
		return r
	}
	for child, parents := range links {
		for _, p := range parents {
			a, b := find(child), find(p)
			if a == b {
				continue
			}
			if b < a {
				a, b = b, a
			}
			up[b] = a
		}
	}
	roots := make(map[string]string, len(up))
	for child, parents := range links {
		roots[child] = find(child)
		for _, p := range parents {
			roots[p] = find(p)
		}
	}
	return roots
}
