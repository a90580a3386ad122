package mcpkit

// ResultBudget is a tool's default reply budget from its catalog: the
// largest serialized result (content[] + structuredContent + _meta) its
// compact detail may return. Generated catalogs return one per tool from
// ResultBudgetOf.
type ResultBudget struct {
	// Bytes is a fixed ceiling; 0 when the budget follows the RS body.
	Bytes int
	// RSBodyRatio makes the ceiling that many times the RS body the result
	// renders, but never below MinBytes.
	RSBodyRatio float64
	MinBytes    int
}

// Limit is the ceiling for a result rendering an RS body of rsBodyBytes.
func (b ResultBudget) Limit(rsBodyBytes int) int {
	if b.RSBodyRatio <= 0 {
		return b.Bytes
	}
	return max(b.MinBytes, int(b.RSBodyRatio*float64(rsBodyBytes)))
}
