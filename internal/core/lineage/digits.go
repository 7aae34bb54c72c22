package lineage

import (
	"slices"
	"unicode"
)

// Decimal digits of other scripts: a page can write an account or an
// amount in Arabic-Indic ("GB٢٩NWBK٦٠١٦…"), Devanagari, Bengali or Thai
// digits — which NFKC leaves as they are, unlike fullwidth and
// mathematical ones — and a model copying it writes ASCII digits (or the
// other way round). A digit's value is the same number whoever wrote it,
// so normal and normalExact alike write every decimal digit (Unicode
// category Nd) as its ASCII digit.
//
// Go's unicode package has no table of digit values; it has unicode.Nd,
// and Unicode encodes each script's decimal digits as a run of ten, zero
// to nine, in order (TestDigitRuns checks unicode.Nd against the zeros of
// UnicodeData.txt). A digit's value is its distance from the start of its
// run, modulo ten: several scripts' runs can be adjacent
// (the mathematical digits are five).

// digitRun is a run of unicode.Nd: the code points lo to hi, all decimal
// digits, lo a zero.
type digitRun struct{ lo, hi rune }

// digitRuns are unicode.Nd's runs, sorted, adjacent ranges of its table
// joined.
var digitRuns = ndRuns()

func ndRuns() []digitRun {
	var runs []digitRun
	add := func(lo, hi, stride rune) {
		for r := lo; r <= hi; r += stride {
			if n := len(runs); n > 0 && runs[n-1].hi == r-1 {
				runs[n-1].hi = r
			} else {
				runs = append(runs, digitRun{r, r})
			}
		}
	}
	for _, r := range unicode.Nd.R16 {
		add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	for _, r := range unicode.Nd.R32 {
		add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	return runs
}

// firstOtherDigit is the first decimal digit past ASCII's (U+0660,
// ARABIC-INDIC DIGIT ZERO): a letter of Latin, Greek, Cyrillic, Armenian
// or Hebrew is below it and needs no search.
var firstOtherDigit = digitRuns[1].lo

// asciiDigit returns the ASCII digit r (not ASCII) is the decimal digit
// of, if it is one.
func asciiDigit(r rune) (rune, bool) {
	if r < firstOtherDigit {
		return r, false
	}
	i, ok := slices.BinarySearchFunc(digitRuns, r, func(d digitRun, r rune) int {
		switch {
		case d.hi < r:
			return -1
		case d.lo > r:
			return 1
		}
		return 0
	})
	if !ok {
		return r, false
	}
	return '0' + (r-digitRuns[i].lo)%10, true
}
