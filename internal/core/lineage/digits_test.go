package lineage

import (
	"slices"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// ndZeros are the zeros of Unicode's decimal digits (General_Category Nd
// with Numeric_Value 0, UnicodeData.txt 15.0), each the first of a run of
// ten: read with Python's unicodedata (14.0), and the two sets 15.0 added
// (Kawi, Nag Mundari). A Go whose unicode tables add a script's digits
// fails TestDigitRuns until its zero is added here, checked against
// UnicodeData.txt: the fold then no longer rests on an unchecked run.
var ndZeros = []rune{
	0x0030,  // DIGIT ZERO
	0x0660,  // ARABIC-INDIC DIGIT ZERO
	0x06F0,  // EXTENDED ARABIC-INDIC DIGIT ZERO
	0x07C0,  // NKO DIGIT ZERO
	0x0966,  // DEVANAGARI DIGIT ZERO
	0x09E6,  // BENGALI DIGIT ZERO
	0x0A66,  // GURMUKHI DIGIT ZERO
	0x0AE6,  // GUJARATI DIGIT ZERO
	0x0B66,  // ORIYA DIGIT ZERO
	0x0BE6,  // TAMIL DIGIT ZERO
	0x0C66,  // TELUGU DIGIT ZERO
	0x0CE6,  // KANNADA DIGIT ZERO
	0x0D66,  // MALAYALAM DIGIT ZERO
	0x0DE6,  // SINHALA LITH DIGIT ZERO
	0x0E50,  // THAI DIGIT ZERO
	0x0ED0,  // LAO DIGIT ZERO
	0x0F20,  // TIBETAN DIGIT ZERO
	0x1040,  // MYANMAR DIGIT ZERO
	0x1090,  // MYANMAR SHAN DIGIT ZERO
	0x17E0,  // KHMER DIGIT ZERO
	0x1810,  // MONGOLIAN DIGIT ZERO
	0x1946,  // LIMBU DIGIT ZERO
	0x19D0,  // NEW TAI LUE DIGIT ZERO
	0x1A80,  // TAI THAM HORA DIGIT ZERO
	0x1A90,  // TAI THAM THAM DIGIT ZERO
	0x1B50,  // BALINESE DIGIT ZERO
	0x1BB0,  // SUNDANESE DIGIT ZERO
	0x1C40,  // LEPCHA DIGIT ZERO
	0x1C50,  // OL CHIKI DIGIT ZERO
	0xA620,  // VAI DIGIT ZERO
	0xA8D0,  // SAURASHTRA DIGIT ZERO
	0xA900,  // KAYAH LI DIGIT ZERO
	0xA9D0,  // JAVANESE DIGIT ZERO
	0xA9F0,  // MYANMAR TAI LAING DIGIT ZERO
	0xAA50,  // CHAM DIGIT ZERO
	0xABF0,  // MEETEI MAYEK DIGIT ZERO
	0xFF10,  // FULLWIDTH DIGIT ZERO
	0x104A0, // OSMANYA DIGIT ZERO
	0x10D30, // HANIFI ROHINGYA DIGIT ZERO
	0x11066, // BRAHMI DIGIT ZERO
	0x110F0, // SORA SOMPENG DIGIT ZERO
	0x11136, // CHAKMA DIGIT ZERO
	0x111D0, // SHARADA DIGIT ZERO
	0x112F0, // KHUDAWADI DIGIT ZERO
	0x11450, // NEWA DIGIT ZERO
	0x114D0, // TIRHUTA DIGIT ZERO
	0x11650, // MODI DIGIT ZERO
	0x116C0, // TAKRI DIGIT ZERO
	0x11730, // AHOM DIGIT ZERO
	0x118E0, // WARANG CITI DIGIT ZERO
	0x11950, // DIVES AKURU DIGIT ZERO
	0x11C50, // BHAIKSUKI DIGIT ZERO
	0x11D50, // MASARAM GONDI DIGIT ZERO
	0x11DA0, // GUNJALA GONDI DIGIT ZERO
	0x11F50, // KAWI DIGIT ZERO
	0x16A60, // MRO DIGIT ZERO
	0x16AC0, // TANGSA DIGIT ZERO
	0x16B50, // PAHAWH HMONG DIGIT ZERO
	0x1D7CE, // MATHEMATICAL BOLD DIGIT ZERO
	0x1D7D8, // MATHEMATICAL DOUBLE-STRUCK DIGIT ZERO
	0x1D7E2, // MATHEMATICAL SANS-SERIF DIGIT ZERO
	0x1D7EC, // MATHEMATICAL SANS-SERIF BOLD DIGIT ZERO
	0x1D7F6, // MATHEMATICAL MONOSPACE DIGIT ZERO
	0x1E140, // NYIAKENG PUACHUE HMONG DIGIT ZERO
	0x1E2F0, // WANCHO DIGIT ZERO
	0x1E4F0, // NAG MUNDARI DIGIT ZERO
	0x1E950, // ADLAM DIGIT ZERO
	0x1FBF0, // SEGMENTED DIGIT ZERO
}

// Every rune of unicode.Nd, and no other, is a digit of a run of ten
// starting at one of ndZeros, and asciiDigit gives its place in the run;
// normal and normalExact write it as that ASCII digit. Where NFKC folds
// a digit to ASCII (fullwidth, mathematical, segmented), it agrees.
func TestDigitRuns(t *testing.T) {
	if !slices.IsSorted(ndZeros) {
		t.Fatal("ndZeros not sorted")
	}
	nd := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		isNd := unicode.Is(unicode.Nd, r)
		i, _ := slices.BinarySearch(ndZeros, r+1) // ndZeros[i-1] <= r
		inRun := i > 0 && r-ndZeros[i-1] < 10
		if isNd != inRun {
			t.Errorf("%U: Nd %v, in a run of ten from a zero of ndZeros %v", r, isNd, inRun)
			continue
		}
		if !isNd {
			if r >= 0x80 {
				if d, ok := asciiDigit(r); ok {
					t.Errorf("%U: not Nd, folded to %c", r, d)
				}
			}
			continue
		}
		nd++
		want := '0' + (r - ndZeros[i-1])
		if r < 0x80 {
			continue
		}
		if d, ok := asciiDigit(r); !ok || d != want {
			t.Errorf("asciiDigit(%U) = %c, %v, want %c", r, d, ok, want)
		}
		if got := normal(string(r)); got != string(want) {
			t.Errorf("normal(%U) = %q, want %q", r, got, want)
		}
		if got := normalExact(string(r)); got != string(want) {
			t.Errorf("normalExact(%U) = %q, want %q", r, got, want)
		}
		if k := norm.NFKC.String(string(r)); len(k) == 1 && k[0] >= '0' && k[0] <= '9' && rune(k[0]) != want {
			t.Errorf("%U: NFKC %q, run %c", r, k, want)
		}
	}
	if nd != 10*len(ndZeros) {
		t.Errorf("%d Nd runes, want %d (ten a zero)", nd, 10*len(ndZeros))
	}
	for _, z := range ndZeros {
		if !unicode.Is(unicode.Nd, z) || unicode.Is(unicode.Nd, z-1) && !slices.Contains(ndZeros, z-10) {
			t.Errorf("%U: not the zero of a run", z)
		}
	}
}

// An account written in the digits of another script is the account
// written in ASCII digits, both ways; the user's own account is the
// user's in either.
func TestDigitsOfOtherScripts(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GB\u0662\u0669NWBK\u0666\u0660\u0661\u0666", "gb29nwbk6016"},                 // Arabic-Indic
		{"\u06f0\u06f1\u06f2\u06f3\u06f4\u06f5\u06f6\u06f7\u06f8\u06f9", "0123456789"}, // Extended Arabic-Indic (Persian, Urdu)
		{"\u0966\u0967\u0968\u0969\u096a\u096b\u096c\u096d\u096e\u096f", "0123456789"}, // Devanagari
		{"\u09e6\u09e7\u09e8\u09e9\u09ea\u09eb\u09ec\u09ed\u09ee\u09ef", "0123456789"}, // Bengali
		{"\u0e50\u0e51\u0e52\u0e53\u0e54\u0e55\u0e56\u0e57\u0e58\u0e59", "0123456789"}, // Thai
		{"\u1040\u1041\u1049 \u17e0\u17e9", "019 09"},                                  // Myanmar, Khmer
		{"\U0001d7ce\U0001d7d9\U0001d7ec\U0001d7ff", "0109"},                           // mathematical (NFKC already)
		{"\uff10\uff19", "09"},                                 // fullwidth (NFKC already)
		{"\U0001fbf0\U0001fbf9", "09"},                         // segmented (NFKC already)
		{"\u0663\u0664 \u0417 \u00b2 \u2460", "34 \u0437 2 1"}, // З is no 3; ², ① are NFKC's
	} {
		if got := normal(tc.in); got != tc.want {
			t.Errorf("normal(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := normalExact(tc.in); got != tc.want {
			t.Errorf("normalExact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	const (
		arabic    = "GB\u0662\u0669NWBK\u0666\u0660\u0661\u0666\u0661\u0663\u0663\u0661\u0669\u0662\u0666\u0668\u0661\u0669" // GB29NWBK60161331926819
		ascii     = "GB29NWBK60161331926819"
		persian   = "IR\u06f0\u06f6\u06f2\u06f9\u06f6\u06f0\u06f0\u06f0\u06f0\u06f0\u06f0\u06f0\u06f1\u06f0\u06f0\u06f3\u06f2\u06f4\u06f2\u06f0\u06f0\u06f0\u06f0\u06f1" // IR062960000000100324200001
		devanagri = "DE\u096e\u096f \u0969\u096d\u0966\u096a \u0966\u0966\u096a\u096a \u0966\u096b\u0969\u0968 \u0966\u0967\u0969\u0966 \u0966\u0966"                    // DE89 3704 0044 0532 0130 00
		thai      = "\u0e54\u0e51\u0e51\u0e51 \u0e51\u0e51\u0e51\u0e51 \u0e51\u0e51\u0e51\u0e51 \u0e51\u0e51\u0e51\u0e51"                                                // 4111 1111 1111 1111
	)
	for _, tc := range []struct {
		name, user, page, value string
		want                    Origin
	}{
		{"a page's Arabic-Indic account, copied in ASCII digits", "pay the bill", "IBAN: " + arabic, ascii, FromUntrusted},
		{"a page's ASCII account, written in Arabic-Indic digits", "pay the bill", "IBAN: " + ascii, arabic, FromUntrusted},
		{"a page's Persian account, copied in ASCII digits", "pay the bill", "Sheba: " + persian + ".", "IR062960000000100324200001", FromUntrusted},
		{"a page's Devanagari account in groups, copied compact", "pay the bill", "IBAN " + devanagri + ", due", "DE89370400440532013000", FromUntrusted},
		{"a page's Thai card number, copied compact", "pay the bill", "card " + thai, "4111111111111111", FromUntrusted},
		{"the user's account in Arabic-Indic digits, written in ASCII", "pay my landlord " + arabic, "newsletter", ascii, FromUser},
		{"the user's account in ASCII digits, written in Arabic-Indic", "pay my landlord " + ascii, "newsletter", arabic, FromUser},
		{"the user's Arabic-Indic account beside the page's ASCII copy", "pay my landlord " + arabic, "IBAN: " + ascii, ascii, FromUser},
		{"the model's own number in Persian digits", "pay the bill", "newsletter", "\u06f1\u06f2\u06f3\u06f4\u06f5\u06f6\u06f7\u06f8", FromModel},
	} {
		ix := &Index{}
		ix.AddTrusted(tc.user)
		ix.AddUntrusted(tc.page, Source{Seq: 1, Tool: "get_webpage"})
		if got := ix.Classify(tc.value); got.Origin != tc.want {
			t.Errorf("%s: %+v, want %s", tc.name, got, tc.want)
		}
	}
}
