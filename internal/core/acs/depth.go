package acs

import "fmt"

// MaxDepth is how deeply objects and arrays may nest in an envelope (the
// envelope object itself is depth 1). ACS envelopes nest a handful of
// levels, tool inputs a few more; 64 leaves room for any real payload and
// none for a document built to make decoders recurse or allocate per
// level. A constant, not a flag: every processor sharing the partitions,
// and replay, must refuse the same envelopes.
const MaxDepth = 64

// ReasonTooDeep refuses an envelope that nests deeper than MaxDepth.
const ReasonTooDeep = "envelope_too_deep"

// CheckDepth reports, without decoding or allocating, whether the JSON
// text data nests objects and arrays deeper than max. It only counts
// brackets outside strings; it does not check the grammar otherwise (the
// decoder that runs next does), so it may pass malformed input but never
// fails a well-formed document nesting max levels or fewer.
func CheckDepth(data []byte, max int) *Error {
	depth := 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return &Error{Code: CodeInvalidRequest, Reason: ReasonTooDeep,
					Message: fmt.Sprintf("the JSON nests deeper than %d levels (at byte %d)", max, i)}
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
