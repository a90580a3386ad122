package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// FacetCategories are the facets TopFacets lists, as tool arguments name
// them; each is also the name of its table.
var FacetCategories = []string{"author", "venue", "keyword", "institution", "tag"}

// Facet is one facet value with its precomputed paper count, in JSON as
// list_top_facets returns it.
type Facet struct {
	Value      string `json:"value"`
	PaperCount int    `json:"paper_count"`
}

// TopFacets lists the limit most frequent values of a category, highest
// paper_count first and ties in value order, with the number of distinct
// values the category has.
func (s *Store) TopFacets(ctx context.Context, category string, limit int) ([]Facet, int, error) {
	if !slices.Contains(FacetCategories, category) {
		return nil, 0, fmt.Errorf("unknown facet category %q", category)
	}
	var total int
	// category is one of FacetCategories, never user text.
	if err := s.db.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE paper_count > 0", category)).Scan(&total); err != nil {
		return nil, 0, err
	}
	q := fmt.Sprintf("SELECT value, paper_count FROM %s WHERE paper_count > 0 ORDER BY paper_count DESC, value ASC LIMIT ?", category)
	out, err := scanRows(ctx, s.db, q, func(rows *sql.Rows, f *Facet) error { return rows.Scan(&f.Value, &f.PaperCount) }, limit)
	return out, total, err
}
