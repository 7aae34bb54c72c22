package policy

import "cel.dev/cel-go/common/cost"

// envelopeSized sizes every value a condition reads for the static cost
// estimate: no string or list read from an envelope is longer than the
// largest envelope, 1 MiB.
type envelopeSized struct{}

func (envelopeSized) EstimateSize(cost.AstNode) *cost.SizeEstimate {
	return &cost.SizeEstimate{Min: 0, Max: 1 << 20}
}

// EstimateCallCost leaves every function to CEL's standard estimates.
func (envelopeSized) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
