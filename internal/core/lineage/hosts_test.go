package lineage

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A compound naming a host with an A-label or a label beyond ASCII is
// also spelt with every label an A-label and with every label a U-label;
// a label that does not convert stays as written.
func TestHostSpellings(t *testing.T) {
	for _, tc := range []struct {
		in, ascii, uni string
		ok             bool
	}{
		{"xn--bcher-kva.example", "xn--bcher-kva.example", "bücher.example", true},
		{"bücher.example", "xn--bcher-kva.example", "bücher.example", true},
		{"https://bücher.example/pfad?q=1", "https://xn--bcher-kva.example/pfad?q=1", "https://bücher.example/pfad?q=1", true},
		{"info@xn--bcher-kva.example", "info@xn--bcher-kva.example", "info@bücher.example", true},
		{"xn--80ak6aa92e.com", "xn--80ak6aa92e.com", "\u0430\u0440\u0440\u04cf\u0435.com", true}, // Cyrillic look-alikes, kept as they are
		{"\u0430\u0440\u0440\u04cf\u0435.com", "xn--80ak6aa92e.com", "\u0430\u0440\u0440\u04cf\u0435.com", true},
		{"shop.bücher.xn--p1ai", "shop.xn--bcher-kva.xn--p1ai", "shop.bücher.\u0440\u0444", true}, // mixed: each way whole
		{"_dmarc.bücher.example", "_dmarc.xn--bcher-kva.example", "_dmarc.bücher.example", true},
		{"faß.de", "xn--fa-hia.de", "faß.de", true}, // non-transitional: ß stays
		{"例え.テスト", "xn--r8jz45g.xn--zckzah", "例え.テスト", true},
		// Malformed A-labels stay as written.
		{"xn--zz.example", "xn--zz.example", "xn--zz.example", true},
		{"xn--.example", "xn--.example", "xn--.example", true},                               // decodes to nothing
		{"xn--abc.example", "xn--abc.example", "xn--abc.example", true},                      // decodes to control characters
		{"xn--bcher-kva-.example", "xn--bcher-kva-.example", "xn--bcher-kva-.example", true}, // a bad digit
		{"xn--bcher-kva.example..x", "", "", false},                                          // an empty label: no host
		{"plain.example", "", "", false},
		{"bücher", "", "", false}, // one label
		{"т.е", "", "", false},    // "that is": no top-level domain
		{"bücher.example.123", "", "", false},
	} {
		a, u, ok := hostSpellings(tc.in)
		if ok != tc.ok || ok && (a != tc.ascii || u != tc.uni) {
			t.Errorf("hostSpellings(%q) = %q, %q, %v, want %q, %q, %v", tc.in, a, u, ok, tc.ascii, tc.uni, tc.ok)
		}
	}
}

// A host a page names by its A-labels is traced to the page when the
// model writes its U-labels, and the other way round, in a host, a URL
// or an address; the user's host is the user's in either spelling. A
// page's punycode of a look-alike of the user's host is not the user's
// host, and does not make the user's host the page's.
func TestInternationalHosts(t *testing.T) {
	const (
		lookalike = "\u0430\u0440\u0440l\u0435.com" // "аррlе.com": Cyrillic but the l, folded "apple.com"
		puny      = "xn--l-7sbq6ba.com"             // its A-label
	)
	for _, tc := range []struct {
		name, user, page, value string
		want                    Origin
	}{
		{"a page's A-label host, written in U-labels", "", "Log in at xn--bcher-kva.example today", "bücher.example", FromUntrusted},
		{"a page's U-label host, written as an A-label", "", "Log in at bücher.example today", "xn--bcher-kva.example", FromUntrusted},
		{"a page's A-label URL, written in U-labels", "", "Log in: https://xn--bcher-kva.example/login", "https://bücher.example/login", FromUntrusted},
		{"a page's U-label URL, written as A-labels", "", "Log in: https://bücher.example/login", "https://xn--bcher-kva.example/login", FromUntrusted},
		{"a page's address at an A-label host, written in U-labels", "", "Write to billing@xn--bcher-kva.example.", "billing@bücher.example", FromUntrusted},
		{"a page's address in capitals with a trailing dot, written as an A-label", "", "Write to BILLING@BÜCHER.EXAMPLE.", "billing@xn--bcher-kva.example", FromUntrusted},
		{"a page's A-label in capitals, written in U-labels", "", "Host: XN--BCHER-KVA.EXAMPLE.", "Bücher.Example", FromUntrusted},
		{"a page's Arabic host, written as A-labels", "", "Visit \u0645\u062b\u0627\u0644.\u0625\u062e\u062a\u0628\u0627\u0631 now", "xn--mgbh0fb.xn--kgbechtv", FromUntrusted},
		{"a page's look-alike host, written as its A-label", "", "Log in at " + lookalike + " now", puny, FromUntrusted},
		{"a page's punycode of a look-alike, written in its letters", "", "Log in at " + puny + " now", lookalike, FromUntrusted},
		{"a page's punycode of a look-alike, written in Latin letters", "", "Log in at " + puny + " now", "apple.com", FromUntrusted},
		{"a page's punycode of a look-alike of the user's host, as written", "log in to apple.com", "Log in at " + puny + " now", puny, FromUntrusted},
		{"a page's punycode of a look-alike of the user's host, in its letters", "log in to apple.com", "Log in at " + puny + " now", lookalike, FromUntrusted},
		{"the user's host beside a page's punycode of a look-alike of it", "log in to apple.com", "Log in at " + puny + " now", "apple.com", FromUser},
		{"the punycode of a look-alike of the user's host, the model's", "log in to apple.com", "newsletter", puny, FromModel},
		{"the user's U-label host, written as an A-label", "order from bücher.example", "newsletter", "xn--bcher-kva.example", FromUser},
		{"the user's U-label host, written as an A-label, beside the page's", "order from bücher.example", "Shop at xn--bcher-kva.example", "xn--bcher-kva.example", FromUser},
		{"the user's A-label host, written in U-labels", "order from xn--bcher-kva.example", "newsletter", "bücher.example", FromUser},
		{"the user's own look-alike, written as its A-label", "log in to " + lookalike, "newsletter", puny, FromUser},
		{"the user's punycode of a look-alike, in its letters", "log in to " + puny, "newsletter", lookalike, FromUser},
		{"the Latin host is not the user's punycode of a look-alike of it", "log in to " + puny, "Log in at apple.com", "apple.com", FromUntrusted},
		{"a malformed A-label, indexed as written", "", "Hosts: xn--zz.example, xn--.example, xn--abc.example", "xn--zz.example", FromUntrusted},
		{"a malformed A-label, indexed as written (empty)", "", "Hosts: xn--zz.example, xn--.example, xn--abc.example", "xn--.example", FromUntrusted},
		{"the model's own host", "", "newsletter", "münchen.example", FromModel},
	} {
		ix := &Index{}
		ix.AddTrusted(tc.user)
		ix.AddUntrusted(tc.page, Source{Seq: 1, Tool: "get_webpage"})
		if got := ix.Classify(tc.value); got.Origin != tc.want {
			t.Errorf("%s: %+v, want %s", tc.name, got, tc.want)
		}
	}
}

// A host the model's call carried first is the model's own in either
// spelling once the call's result echoes it.
func TestInternationalHostOwn(t *testing.T) {
	ix := &Index{}
	ix.AddTrusted("book me a table")
	if !ix.Carry("r1", "https://bücher.example/book") {
		t.Fatal("nothing carried")
	}
	ix.Answered("r1")
	ix.AddUntrusted("Booked at https://xn--bcher-kva.example/book", Source{Seq: 1, RequestID: "r1"})
	for _, v := range []string{"bücher.example", "xn--bcher-kva.example"} {
		if got := ix.Classify(v); got.Origin != FromModel {
			t.Errorf("%q: %+v, want the model's", v, got)
		}
	}
}

// The other spellings a content gives are bounded: maxHostForms compounds.
func TestHostFormsBounded(t *testing.T) {
	var page strings.Builder
	for i := range 3 * maxHostForms {
		page.WriteString("bücher" + strings.Repeat("x", i) + ".example ")
	}
	var forms []string
	eachHostForm(normalExact(page.String()), true, func(tok string, _ uint64, k kind) {
		if k == matter {
			forms = append(forms, tok)
		}
	})
	if len(forms) != maxHostForms || !slices.ContainsFunc(forms, func(s string) bool { return strings.HasPrefix(s, "xn--bcher") }) {
		t.Errorf("%d forms, want %d: %q", len(forms), maxHostForms, forms)
	}
	// Text with nothing to rewrite costs nothing.
	if n := testing.AllocsPerRun(10, func() {
		eachHostForm("a plain page. with dots.and hosts.example", true, func(string, uint64, kind) {})
	}); n != 0 {
		t.Errorf("%v allocations for ASCII text", n)
	}
}

func BenchmarkHostForms(b *testing.B) {
	var idn strings.Builder
	for i := 0; idn.Len() < 2048; i++ {
		fmt.Fprintf(&idn, "Bestellung %d bei https://bücher%d.example/k/%d oder info@xn--mnchen-3ya.example. ", i, i, i*7)
	}
	for _, bc := range []struct{ name, text string }{
		{"2 KiB naming IDN hosts", idn.String()},
		{"256 KiB of malformed A-labels", strings.Repeat("xn--zz.ab ", 256<<10/10)},
		{"256 KiB of one-letter IDN hosts", strings.Repeat("ü.ü ", 256<<10/6)},
		{"256 KiB of one long compound", strings.Repeat("xn--zz.ab/", 256<<10/10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c := &Index{}
				c.AddUntrusted(bc.text, Source{Seq: 1})
			}
		})
	}
}
