package acs

import "slices"

// ProvenanceOf walks a decoded payload (maps and slices as JSON decodes
// them) for every provenance object attached to a data-bearing field, in
// document order of the walk. Objects without an origin are not
// provenance.
func ProvenanceOf(payload any) []Provenance {
	var out []Provenance
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if p, ok := t["provenance"].(map[string]any); ok {
				if pv, ok := asProvenance(p); ok {
					out = append(out, pv)
				}
			}
			// Only members holding objects or arrays can hold provenance:
			// just their names are sorted, on the stack when few.
			var small [8]string
			keys := small[:0]
			for k, x := range t {
				switch x.(type) {
				case map[string]any, []any:
					if k != "provenance" {
						keys = append(keys, k)
					}
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(t[k])
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(payload)
	return out
}

func asProvenance(m map[string]any) (Provenance, bool) {
	var p Provenance
	p.ProvenanceID, _ = m["provenance_id"].(string)
	p.Origin, _ = m["origin"].(string)
	p.SourceID, _ = m["source_id"].(string)
	if d, ok := m["derived_from"].([]any); ok {
		for _, x := range d {
			if s, ok := x.(string); ok {
				p.DerivedFrom = append(p.DerivedFrom, s)
			}
		}
	}
	return p, p.Origin != ""
}

// Summarize condenses provenance into a ProvenanceSummary: the origins in
// order of first appearance, and counts. nil when there is none.
func Summarize(ps []Provenance) *ProvenanceSummary {
	if len(ps) == 0 {
		return nil
	}
	s := &ProvenanceSummary{EntryCountByOrigin: map[string]int{}}
	for _, p := range ps {
		if s.EntryCountByOrigin[p.Origin] == 0 {
			s.OriginsSeen = append(s.OriginsSeen, p.Origin)
		}
		s.EntryCountByOrigin[p.Origin]++
	}
	n := len(ps)
	s.EntryCount = &n
	return s
}
