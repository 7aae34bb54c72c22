package schema

import (
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The library validator builds a scope, an evaluation record and an
// instance-location slice per keyword and per value, whether or not
// anything fails; the profile had it at over a third of a decision. Almost
// every envelope is valid, and for a valid one only the yes/no matters.
// quick answers that yes/no with no allocation for the keywords the ACS
// schemas use, reading the compiled *jsonschema.Schema (so it checks the
// very schema the library would, with the library's own format checkers
// and compiled patterns). It answers "unknown" for anything it does not
// mirror exactly; check then runs the library, which also produces every
// error report, so refusals are unchanged.

// quicker holds what quick precomputes per schema: the properties of every
// reachable schema as a slice, so a check looks members up instead of
// iterating maps.
type quicker struct {
	props map[*jsonschema.Schema][]prop
}

type prop struct {
	name   string
	schema *jsonschema.Schema
}

// documentValue reports whether v is a value of a decoded JSON document as
// the validator receives it (numbers as json.Number). Number keywords are
// only mirrored for json.Number; a float64 or int, which no caller passes
// today, goes to the library.
func documentValue(v any) bool {
	switch v.(type) {
	case map[string]any, []any, string, json.Number, bool, nil:
		return true
	}
	return false
}

// newQuicker walks the schema graph from roots.
func newQuicker(roots ...*jsonschema.Schema) *quicker {
	q := &quicker{props: map[*jsonschema.Schema][]prop{}}
	seen := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if len(s.Properties) > 0 {
			ps := make([]prop, 0, len(s.Properties))
			for name, sub := range s.Properties {
				ps = append(ps, prop{name, sub})
				walk(sub)
			}
			slices.SortFunc(ps, func(a, b prop) int { return strings.Compare(a.name, b.name) })
			q.props[s] = ps
		}
		if add, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			walk(add)
		}
		for _, sub := range []*jsonschema.Schema{s.Ref, s.Items2020, s.Not, s.If, s.Then, s.Else} {
			walk(sub)
		}
		for _, subs := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, sub := range subs {
				walk(sub)
			}
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return q
}

type verdict uint8

const (
	unknown verdict = iota
	valid
	invalid
)

// maxQuickDepth bounds quick's recursion (schema and instance nesting
// together); deeper, the library decides, and detects $ref cycles.
const maxQuickDepth = 128

// and combines the verdicts of two keywords that must both hold: a certain
// failure wins, then uncertainty.
func and(a, b verdict) verdict {
	switch {
	case a == invalid || b == invalid:
		return invalid
	case a == unknown || b == unknown:
		return unknown
	}
	return valid
}

func not(v verdict) verdict {
	switch v {
	case valid:
		return invalid
	case invalid:
		return valid
	}
	return unknown
}

// unsupported reports keywords quick does not mirror.
func unsupported(s *jsonschema.Schema) bool {
	return s.DraftVersion < 2019 || s.RecursiveRef != nil || s.DynamicRef != nil || len(s.Extensions) > 0 ||
		s.PropertyNames != nil || len(s.PatternProperties) > 0 || len(s.Dependencies) > 0 ||
		len(s.DependentRequired) > 0 || len(s.DependentSchemas) > 0 || s.UnevaluatedProperties != nil ||
		s.Contains != nil || s.Items != nil || s.AdditionalItems != nil || len(s.PrefixItems) > 0 ||
		s.UnevaluatedItems != nil || s.ContentEncoding != nil || s.ContentMediaType != nil ||
		s.ContentSchema != nil || s.MultipleOf != nil
}

// check reports whether v is valid against s, as far as it can be sure.
func (q *quicker) check(s *jsonschema.Schema, v any, depth int) verdict {
	if depth > maxQuickDepth || !documentValue(v) {
		return unknown
	}
	if s.Bool != nil {
		if *s.Bool {
			return valid
		}
		return invalid
	}
	if unsupported(s) {
		return unknown
	}
	r := valid
	if s.Types != nil && !s.Types.IsEmpty() {
		if r = and(r, quickType(*s.Types, v)); r == invalid {
			return r
		}
	}
	if s.Const != nil {
		if r = and(r, quickEqual(v, *s.Const)); r == invalid {
			return r
		}
	}
	if s.Enum != nil {
		if r = and(r, quickEnum(s.Enum.Values, v)); r == invalid {
			return r
		}
	}
	if s.Format != nil && !quickFormat(s.Format, v) {
		return invalid
	}
	if s.Ref != nil {
		if r = and(r, q.check(s.Ref, v, depth+1)); r == invalid {
			return r
		}
	}
	switch v := v.(type) {
	case map[string]any:
		r = and(r, q.object(s, v, depth))
	case []any:
		r = and(r, q.array(s, v, depth))
	case string:
		r = and(r, quickString(s, v))
	case json.Number:
		r = and(r, quickNumber(s, v))
	}
	if r == invalid {
		return r
	}
	if s.Not != nil {
		if r = and(r, not(q.check(s.Not, v, depth+1))); r == invalid {
			return r
		}
	}
	for _, sub := range s.AllOf {
		if r = and(r, q.check(sub, v, depth+1)); r == invalid {
			return r
		}
	}
	if len(s.AnyOf) > 0 {
		if r = and(r, q.anyOf(s.AnyOf, v, depth)); r == invalid {
			return r
		}
	}
	if len(s.OneOf) > 0 {
		if r = and(r, q.oneOf(s.OneOf, v, depth)); r == invalid {
			return r
		}
	}
	if s.If != nil {
		r = and(r, q.conditional(s, v, depth))
	}
	return r
}

// quickEnum mirrors enum: valid once one value is certainly equal, unknown
// if none is but one may be, else invalid. Kept out of check, like the
// applicators below, so check reads as the list of keywords in order.
func quickEnum(values []any, v any) verdict {
	e := invalid
	for _, item := range values {
		switch quickEqual(v, item) {
		case valid:
			e = valid
		case unknown:
			if e == invalid {
				e = unknown
			}
		}
		if e == valid {
			break
		}
	}
	return e
}

// anyOf mirrors anyOf over subs (non-empty): valid once one subschema is
// certainly valid; otherwise unknown if any was uncertain, else invalid.
func (q *quicker) anyOf(subs []*jsonschema.Schema, v any, depth int) verdict {
	a := invalid
	for _, sub := range subs {
		switch q.check(sub, v, depth+1) {
		case valid:
			a = valid
		case unknown:
			a = unknown
		}
		if a == valid {
			break
		}
	}
	return a
}

// oneOf mirrors oneOf over subs (non-empty): two certain matches are a
// failure whatever the rest; otherwise any uncertain subschema leaves it
// unknown, and exactly one match is valid.
func (q *quicker) oneOf(subs []*jsonschema.Schema, v any, depth int) verdict {
	matched, uncertain := 0, false
	for _, sub := range subs {
		switch q.check(sub, v, depth+1) {
		case valid:
			matched++
		case unknown:
			uncertain = true
		}
	}
	o := unknown
	switch {
	case matched > 1:
		o = invalid
	case uncertain:
	case matched == 1:
		o = valid
	default:
		o = invalid
	}
	return o
}

// conditional mirrors if/then/else for a schema with if set: an uncertain
// if leaves the whole unknown.
func (q *quicker) conditional(s *jsonschema.Schema, v any, depth int) verdict {
	var c verdict
	switch q.check(s.If, v, depth+1) {
	case valid:
		c = valid
		if s.Then != nil {
			c = q.check(s.Then, v, depth+1)
		}
	case invalid:
		c = valid
		if s.Else != nil {
			c = q.check(s.Else, v, depth+1)
		}
	}
	return c
}

// quickType mirrors the type keyword. Only json.Number needs care:
// "integer" matches any number with an integral value, which quick decides
// only for plain digit strings.
func quickType(t jsonschema.Types, v any) verdict {
	var name string
	switch v := v.(type) {
	case map[string]any:
		name = "object"
	case []any:
		name = "array"
	case string:
		name = "string"
	case bool:
		name = "boolean"
	case nil:
		name = "null"
	case json.Number:
		if hasType(t, "number") {
			return valid
		}
		if !hasType(t, "integer") {
			return invalid
		}
		if plainInteger(string(v)) {
			return valid
		}
		return unknown
	default:
		return unknown
	}
	if hasType(t, name) {
		return valid
	}
	return invalid
}

// hasType reports whether t includes the named type. Types keeps its set
// unexported; adding the name to a copy and comparing shows membership.
func hasType(t jsonschema.Types, name string) bool {
	u := t
	u.Add(name)
	return u == t
}

// plainInteger reports whether s is an integer without fraction or
// exponent.
func plainInteger(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// quickEqual mirrors the library's equality for const and enum where it is
// plain comparison; numbers and containers are left to the library.
func quickEqual(v, want any) verdict {
	switch v := v.(type) {
	case string:
		w, ok := want.(string)
		if ok && v == w {
			return valid
		}
		if ok || isScalar(want) {
			return invalid
		}
	case bool:
		w, ok := want.(bool)
		if ok && v == w {
			return valid
		}
		if ok || isScalar(want) {
			return invalid
		}
	case nil:
		if want == nil {
			return valid
		}
		if isScalar(want) {
			return invalid
		}
	}
	return unknown
}

// isScalar reports the JSON values quickEqual compares with certainty:
// different scalar types are never equal in the library.
func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, nil, json.Number:
		return true
	}
	return false
}

func (q *quicker) object(s *jsonschema.Schema, obj map[string]any, depth int) verdict {
	if s.MinProperties != nil && len(obj) < *s.MinProperties {
		return invalid
	}
	if s.MaxProperties != nil && len(obj) > *s.MaxProperties {
		return invalid
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			return invalid
		}
	}
	r := valid
	additional, isBool := s.AdditionalProperties.(bool)
	// A schema naming no properties has no entry (props is nil then); one
	// that names some but was not reached from the roots takes the loop.
	if props, ok := q.props[s]; (ok || len(s.Properties) == 0) && (s.AdditionalProperties == nil || isBool) {
		// Members the schema does not name are either unconstrained or
		// (additionalProperties: false) refused: look up the named ones
		// instead of iterating the instance, and count them.
		named := 0
		for _, p := range props {
			if val, ok := obj[p.name]; ok {
				named++
				if r = and(r, q.check(p.schema, val, depth+1)); r == invalid {
					return r
				}
			}
		}
		if isBool && !additional && named < len(obj) {
			return invalid
		}
		return r
	}
	for name, val := range obj {
		if sub, ok := s.Properties[name]; ok {
			r = and(r, q.check(sub, val, depth+1))
		} else {
			switch add := s.AdditionalProperties.(type) {
			case bool:
				if !add {
					return invalid
				}
			case *jsonschema.Schema:
				r = and(r, q.check(add, val, depth+1))
			}
		}
		if r == invalid {
			return r
		}
	}
	return r
}

func (q *quicker) array(s *jsonschema.Schema, arr []any, depth int) verdict {
	if s.MinItems != nil && len(arr) < *s.MinItems {
		return invalid
	}
	if s.MaxItems != nil && len(arr) > *s.MaxItems {
		return invalid
	}
	r := valid
	if s.UniqueItems && len(arr) > 1 {
		r = uniqueStrings(arr)
		if r == invalid {
			return r
		}
	}
	if s.Items2020 != nil {
		for _, item := range arr {
			if r = and(r, q.check(s.Items2020, item, depth+1)); r == invalid {
				return r
			}
		}
	}
	return r
}

// uniqueStrings decides uniqueItems for arrays of strings only.
func uniqueStrings(arr []any) verdict {
	for i, a := range arr {
		as, ok := a.(string)
		if !ok {
			return unknown
		}
		for _, b := range arr[:i] {
			if as == b.(string) {
				return invalid
			}
		}
	}
	return valid
}

func quickString(s *jsonschema.Schema, str string) verdict {
	if s.MinLength != nil || s.MaxLength != nil {
		n := utf8.RuneCountInString(str)
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			return invalid
		}
	}
	if s.Pattern != nil && !quickPattern(s.Pattern, str) {
		return invalid
	}
	return valid
}

func quickNumber(s *jsonschema.Schema, n json.Number) verdict {
	if s.Minimum == nil && s.Maximum == nil && s.ExclusiveMinimum == nil && s.ExclusiveMaximum == nil {
		return valid
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && plainInteger(string(n)) {
		// Counts and sizes: compared as integers when the bounds are.
		if r, ok := intBounds(s, i); ok {
			return r
		}
	}
	num, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return unknown
	}
	switch {
	case s.Minimum != nil && num.Cmp(s.Minimum) < 0,
		s.Maximum != nil && num.Cmp(s.Maximum) > 0,
		s.ExclusiveMinimum != nil && num.Cmp(s.ExclusiveMinimum) <= 0,
		s.ExclusiveMaximum != nil && num.Cmp(s.ExclusiveMaximum) >= 0:
		return invalid
	}
	return valid
}

// intBounds checks an integer against bounds that are all integers in
// int64 range; ok=false when one is not.
func intBounds(s *jsonschema.Schema, i int64) (verdict, bool) {
	bound := func(r *big.Rat) (int64, bool) {
		if !r.IsInt() || !r.Num().IsInt64() {
			return 0, false
		}
		return r.Num().Int64(), true
	}
	type check struct {
		r    *big.Rat
		fail func(b int64) bool
	}
	for _, c := range [...]check{
		{s.Minimum, func(b int64) bool { return i < b }},
		{s.Maximum, func(b int64) bool { return i > b }},
		{s.ExclusiveMinimum, func(b int64) bool { return i <= b }},
		{s.ExclusiveMaximum, func(b int64) bool { return i >= b }},
	} {
		if c.r == nil {
			continue
		}
		b, ok := bound(c.r)
		if !ok {
			return unknown, false
		}
		if c.fail(b) {
			return invalid, true
		}
	}
	return valid, true
}
