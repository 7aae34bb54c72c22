package lineage

import (
	"cmp"
	"slices"
)

// Look-alike letters: a page can write an address or an account with
// letters of another script that look like Latin ones — "аttacker@evil.com"
// with a Cyrillic "а", "gοogle.com" with a Greek "ο" — and a model copying
// it writes the Latin letters (or the other way round). normal folds each
// such letter to the Latin letter it looks like, on every text and value
// alike, so each spelling finds the other.
//
// The table is Unicode's (UTS #39, confusables.txt 13.0, as
// github.com/mtibben/confusables reads it): each lower-case letter of the
// Latin, Greek, Cyrillic, Armenian, Cherokee and Lisu scripts that NFKC
// leaves as it is and whose skeleton is one ASCII letter — its own, or its
// capital's when it has none ("в" is folded as "В" is, to "b"), so that
// case never decides. A letter is folded alone, whatever is around it:
// the fold of a part of a text is the part of the fold of the text, so a
// token found inside a content is found inside its fold. Look-alikes of
// digits (Cyrillic "З" for 3, "б" for 6) are not folded: they are common
// letters of prose, and folding them would turn its words into numbers
// that matter.
var lookalikes = [...]lookalikeOf{
	{0x0131, 'i'}, // ı Latin
	{0x0185, 'b'}, // ƅ (Ƅ) Latin
	{0x018D, 'g'}, // ƍ Latin
	{0x01BD, 's'}, // ƽ Latin
	{0x01C0, 'l'}, // ǀ Latin
	{0x0251, 'a'}, // ɑ Latin
	{0x0261, 'g'}, // ɡ Latin
	{0x0263, 'y'}, // ɣ Latin
	{0x0269, 'i'}, // ɩ Latin
	{0x026A, 'i'}, // ɪ Latin
	{0x026F, 'w'}, // ɯ Latin
	{0x0280, 'r'}, // ʀ (Ʀ) Latin
	{0x028B, 'u'}, // ʋ Latin
	{0x028F, 'y'}, // ʏ Latin
	{0x029D, 'j'}, // ʝ (Ʝ) Latin
	{0x03B1, 'a'}, // α Greek
	{0x03B2, 'b'}, // β (Β) Greek
	{0x03B3, 'y'}, // γ Greek
	{0x03B5, 'e'}, // ε (Ε) Greek
	{0x03B6, 'z'}, // ζ (Ζ) Greek
	{0x03B7, 'h'}, // η (Η) Greek
	{0x03B9, 'i'}, // ι Greek
	{0x03BA, 'k'}, // κ (Κ) Greek
	{0x03BC, 'm'}, // μ (Μ) Greek
	{0x03BD, 'v'}, // ν Greek
	{0x03BF, 'o'}, // ο Greek
	{0x03C1, 'p'}, // ρ Greek
	{0x03C3, 'o'}, // σ Greek
	{0x03C4, 't'}, // τ (Τ) Greek
	{0x03C5, 'u'}, // υ Greek
	{0x03C7, 'x'}, // χ (Χ) Greek
	{0x03DD, 'f'}, // ϝ (Ϝ) Greek
	{0x03F3, 'j'}, // ϳ Greek
	{0x03FB, 'm'}, // ϻ (Ϻ) Greek
	{0x0430, 'a'}, // а Cyrillic
	{0x0432, 'b'}, // в (В) Cyrillic
	{0x0433, 'r'}, // г Cyrillic
	{0x0435, 'e'}, // е Cyrillic
	{0x043A, 'k'}, // к (К) Cyrillic
	{0x043C, 'm'}, // м (М) Cyrillic
	{0x043D, 'h'}, // н (Н) Cyrillic
	{0x043E, 'o'}, // о Cyrillic
	{0x0440, 'p'}, // р Cyrillic
	{0x0441, 'c'}, // с Cyrillic
	{0x0442, 't'}, // т (Т) Cyrillic
	{0x0443, 'y'}, // у Cyrillic
	{0x0445, 'x'}, // х Cyrillic
	{0x044C, 'b'}, // ь (Ь) Cyrillic
	{0x0455, 's'}, // ѕ Cyrillic
	{0x0456, 'i'}, // і Cyrillic
	{0x0458, 'j'}, // ј Cyrillic
	{0x0461, 'w'}, // ѡ Cyrillic
	{0x0475, 'v'}, // ѵ Cyrillic
	{0x04AF, 'y'}, // ү Cyrillic
	{0x04BB, 'h'}, // һ Cyrillic
	{0x04BD, 'e'}, // ҽ Cyrillic
	{0x04CF, 'i'}, // ӏ Cyrillic
	{0x0501, 'd'}, // ԁ Cyrillic
	{0x050D, 'g'}, // ԍ (Ԍ) Cyrillic
	{0x051B, 'q'}, // ԛ Cyrillic
	{0x051D, 'w'}, // ԝ Cyrillic
	{0x0561, 'w'}, // ա Armenian
	{0x0563, 'q'}, // գ Armenian
	{0x0566, 'q'}, // զ Armenian
	{0x0570, 'h'}, // հ Armenian
	{0x0578, 'n'}, // ո Armenian
	{0x057C, 'n'}, // ռ Armenian
	{0x057D, 'u'}, // ս Armenian
	{0x057F, 's'}, // տ (Տ) Armenian
	{0x0581, 'g'}, // ց Armenian
	{0x0584, 'f'}, // ք Armenian
	{0x0585, 'o'}, // օ Armenian
	{0x13FB, 'g'}, // ᏻ (Ᏻ) Cherokee
	{0x13FC, 'b'}, // ᏼ (Ᏼ) Cherokee
	{0x1C80, 'b'}, // ᲀ (В) Cyrillic
	{0x1C82, 'o'}, // ᲂ (О) Cyrillic
	{0x1C83, 'c'}, // ᲃ (С) Cyrillic
	{0x1C84, 't'}, // ᲄ (Т) Cyrillic
	{0x1C85, 't'}, // ᲅ (Т) Cyrillic
	{0x1D04, 'c'}, // ᴄ Latin
	{0x1D0F, 'o'}, // ᴏ Latin
	{0x1D11, 'o'}, // ᴑ Latin
	{0x1D1C, 'u'}, // ᴜ Latin
	{0x1D20, 'v'}, // ᴠ Latin
	{0x1D21, 'w'}, // ᴡ Latin
	{0x1D22, 'z'}, // ᴢ Latin
	{0x1D26, 'r'}, // ᴦ Greek
	{0x1D83, 'g'}, // ᶃ Latin
	{0x1D8C, 'y'}, // ᶌ Latin
	{0x1E9D, 'f'}, // ẝ Latin
	{0x1EFF, 'y'}, // ỿ Latin
	{0xA4D0, 'b'}, // ꓐ Lisu
	{0xA4D1, 'p'}, // ꓑ Lisu
	{0xA4D2, 'd'}, // ꓒ Lisu
	{0xA4D3, 'd'}, // ꓓ Lisu
	{0xA4D4, 't'}, // ꓔ Lisu
	{0xA4D6, 'g'}, // ꓖ Lisu
	{0xA4D7, 'k'}, // ꓗ Lisu
	{0xA4D9, 'j'}, // ꓙ Lisu
	{0xA4DA, 'c'}, // ꓚ Lisu
	{0xA4DC, 'z'}, // ꓜ Lisu
	{0xA4DD, 'f'}, // ꓝ Lisu
	{0xA4DF, 'm'}, // ꓟ Lisu
	{0xA4E0, 'n'}, // ꓠ Lisu
	{0xA4E1, 'l'}, // ꓡ Lisu
	{0xA4E2, 's'}, // ꓢ Lisu
	{0xA4E3, 'r'}, // ꓣ Lisu
	{0xA4E6, 'v'}, // ꓦ Lisu
	{0xA4E7, 'h'}, // ꓧ Lisu
	{0xA4EA, 'w'}, // ꓪ Lisu
	{0xA4EB, 'x'}, // ꓫ Lisu
	{0xA4EC, 'y'}, // ꓬ Lisu
	{0xA4EE, 'a'}, // ꓮ Lisu
	{0xA4F0, 'e'}, // ꓰ Lisu
	{0xA4F2, 'l'}, // ꓲ Lisu
	{0xA4F3, 'o'}, // ꓳ Lisu
	{0xA4F4, 'u'}, // ꓴ Lisu
	{0xA647, 'i'}, // ꙇ Cyrillic
	{0xA731, 's'}, // ꜱ Latin
	{0xA799, 'f'}, // ꞙ Latin
	{0xA79F, 'u'}, // ꞟ Latin
	{0xA7B5, 'b'}, // ꞵ (Ꞵ) Latin
	{0xAB32, 'e'}, // ꬲ Latin
	{0xAB35, 'f'}, // ꬵ Latin
	{0xAB3D, 'o'}, // ꬽ Latin
	{0xAB47, 'r'}, // ꭇ Latin
	{0xAB48, 'r'}, // ꭈ Latin
	{0xAB4E, 'u'}, // ꭎ Latin
	{0xAB52, 'u'}, // ꭒ Latin
	{0xAB53, 'x'}, // ꭓ (Ꭓ) Latin
	{0xAB5A, 'y'}, // ꭚ Latin
	{0xAB70, 'd'}, // ꭰ (Ꭰ) Cherokee
	{0xAB71, 'r'}, // ꭱ (Ꭱ) Cherokee
	{0xAB72, 't'}, // ꭲ (Ꭲ) Cherokee
	{0xAB75, 'i'}, // ꭵ Cherokee
	{0xAB79, 'y'}, // ꭹ (Ꭹ) Cherokee
	{0xAB7A, 'a'}, // ꭺ (Ꭺ) Cherokee
	{0xAB7B, 'j'}, // ꭻ (Ꭻ) Cherokee
	{0xAB7C, 'e'}, // ꭼ (Ꭼ) Cherokee
	{0xAB81, 'r'}, // ꮁ Cherokee
	{0xAB83, 'w'}, // ꮃ Cherokee
	{0xAB87, 'm'}, // ꮇ (Ꮇ) Cherokee
	{0xAB8B, 'h'}, // ꮋ (Ꮋ) Cherokee
	{0xAB8D, 'y'}, // ꮍ (Ꮍ) Cherokee
	{0xAB90, 'g'}, // ꮐ (Ꮐ) Cherokee
	{0xAB92, 'h'}, // ꮒ (Ꮒ) Cherokee
	{0xAB93, 'z'}, // ꮓ Cherokee
	{0xAB9F, 'b'}, // ꮟ (Ꮟ) Cherokee
	{0xABA2, 'r'}, // ꮢ (Ꮢ) Cherokee
	{0xABA4, 'w'}, // ꮤ (Ꮤ) Cherokee
	{0xABA5, 's'}, // ꮥ (Ꮥ) Cherokee
	{0xABA9, 'v'}, // ꮩ Cherokee
	{0xABAA, 's'}, // ꮪ Cherokee
	{0xABAE, 'l'}, // ꮮ (Ꮮ) Cherokee
	{0xABAF, 'c'}, // ꮯ Cherokee
	{0xABB2, 'p'}, // ꮲ (Ꮲ) Cherokee
	{0xABB6, 'k'}, // ꮶ (Ꮶ) Cherokee
	{0xABB7, 'd'}, // ꮷ (Ꮷ) Cherokee
}

type lookalikeOf struct {
	r  rune
	to byte // lower case
}

// lookalike returns the ASCII letter r (lower case) looks like, if any.
func lookalike(r rune) (rune, bool) {
	if r < lookalikes[0].r {
		return r, false
	}
	i, ok := slices.BinarySearchFunc(lookalikes[:], r, func(e lookalikeOf, r rune) int { return cmp.Compare(e.r, r) })
	if !ok {
		return r, false
	}
	return rune(lookalikes[i].to), true
}
