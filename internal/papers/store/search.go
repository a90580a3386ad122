package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/textnorm"
)

// Hit is one paper of a search result.
// Its JSON is a result of the search tools.
type Hit struct {
	PaperID         string `json:"paper_id"`
	Title           string `json:"title"`
	Year            string `json:"year"`
	Venue           string `json:"venue"`
	SnippetMarkdown string `json:"snippet_markdown"`
	// Score is the bm25 rank of a full-text hit (lower is better); zero for
	// keyword hits.
	Score float64 `json:"-"`
	// MatchedValues are the keyword and tag values a keyword hit matched.
	MatchedValues []string `json:"matched_values,omitempty"`
}

// Page is one page of hits.
type Page struct {
	Hits  []Hit
	Total int // matching papers in all pages
}

// ErrInvalidQuery reports a query that FTS5 refused.
var ErrInvalidQuery = errors.New("invalid full-text query")

// SnippetTokens is the size of a search snippet, in tokens.
const SnippetTokens = 24

// SearchSQL is the full-text query behind Search. The inner query ranks
// every match by bm25 (title weighted highest) and keeps one page; only
// that page gets a snippet, from the best column, since snippet() is the
// costly part. Parameters: ?1 the MATCH expression, ?2 limit, ?3 offset,
// ?4 and ?5 the snippet markers. Columns: paper_id, title, year, venue,
// snippet, score. Exported so a benchmark can time the bare statement.
var SearchSQL = fmt.Sprintf(`WITH top AS (
  SELECT rowid AS rid, bm25(paper_fts, 0.0, 10.0, 4.0, 1.0, 1.0, 2.0) AS score
  FROM paper_fts WHERE paper_fts MATCH ?1
  ORDER BY score, rowid LIMIT ?2 OFFSET ?3
)
SELECT p.paper_id, p.title, p.year, p.venue,
  snippet(paper_fts, -1, ?4, ?5, '…', %d) AS snip, top.score
FROM top
JOIN paper_fts ON paper_fts.rowid = top.rid
JOIN paper p ON p.paper_id = paper_fts.paper_id
WHERE paper_fts MATCH ?1
ORDER BY top.score, top.rid`, SnippetTokens)

// countSQL counts the rows matching a MATCH expression; without bm25 it is
// a small fraction of SearchSQL's cost.
const countSQL = `SELECT count(*) FROM paper_fts WHERE paper_fts MATCH ?`

// Search runs a full-text query, best match first. A query with no
// searchable term gives an empty page.
func (s *Store) Search(ctx context.Context, query string, limit, offset int) (Page, error) {
	expr := RewriteQuery(query)
	if expr == "" {
		return Page{}, nil
	}
	page, err := s.page(ctx, countSQL, SearchSQL, func(rows *sql.Rows, h *Hit) error {
		var snip sql.NullString
		err := rows.Scan(&h.PaperID, &h.Title, &h.Year, &h.Venue, &snip, &h.Score)
		h.SnippetMarkdown = SnippetMarkdown(snip.String)
		return err
	}, expr, limit, offset, string(markOpen), string(markClose))
	if err != nil {
		return Page{}, matchError(err)
	}
	return page, nil
}

// page counts the papers countQ finds for arg and, when offset falls
// within them, reads the page q returns for arg, limit, offset and extra.
func (s *Store) page(ctx context.Context, countQ, q string, scan func(*sql.Rows, *Hit) error, arg any, limit, offset int, extra ...any) (Page, error) {
	var page Page
	if err := s.db.QueryRowContext(ctx, countQ, arg).Scan(&page.Total); err != nil || page.Total == 0 || offset >= page.Total {
		return page, err
	}
	var err error
	page.Hits, err = scanRows(ctx, s.db, q, scan, append([]any{arg, limit, offset}, extra...)...)
	return page, err
}

// matchError marks FTS5 syntax errors as ErrInvalidQuery.
func matchError(err error) error {
	if strings.Contains(err.Error(), "fts5") {
		return fmt.Errorf("%w: %v", ErrInvalidQuery, err)
	}
	return err
}

// keywordMatchesSQL lists (paper_id, value) for keyword and tag values
// containing the pattern.
const keywordMatchesSQL = `
SELECT pk.paper_id, k.value FROM keyword k JOIN paper_keyword pk ON pk.keyword_id = k.keyword_id
 WHERE k.value LIKE ?1 ESCAPE '\'
UNION
SELECT pt.paper_id, t.value FROM tag t JOIN paper_tag pt ON pt.tag_id = t.tag_id
 WHERE t.value LIKE ?1 ESCAPE '\'`

// NormalizeKeyword is the form SearchByKeyword compares: trimmed,
// lower-cased, white space collapsed, like stored facet values.
func NormalizeKeyword(k string) string { return textnorm.FacetValue(k) }

// SearchByKeyword finds papers with a keyword or tag value containing
// keyword (case-insensitive), newest first, then by title. Snippets are
// the summary previews.
func (s *Store) SearchByKeyword(ctx context.Context, keyword string, limit, offset int) (Page, error) {
	k := NormalizeKeyword(keyword)
	if k == "" {
		return Page{}, nil
	}
	pattern := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(k) + "%"
	countQ := "SELECT count(DISTINCT paper_id) FROM (" + keywordMatchesSQL + ")"
	q := `WITH m AS (` + keywordMatchesSQL + `)
SELECT p.paper_id, p.title, p.year, p.venue, p.summary_preview, group_concat(m.value, char(31))
FROM m JOIN paper p ON p.paper_id = m.paper_id
GROUP BY p.paper_id
ORDER BY (p.year GLOB '[0-9][0-9][0-9][0-9]') DESC, p.year DESC, p.title COLLATE NOCASE, p.paper_id
LIMIT ?2 OFFSET ?3`
	page, err := s.page(ctx, countQ, q, func(rows *sql.Rows, h *Hit) error {
		var values string
		err := rows.Scan(&h.PaperID, &h.Title, &h.Year, &h.Venue, &h.SnippetMarkdown, &values)
		h.MatchedValues = slices.Compact(slices.Sorted(slices.Values(strings.Split(values, "\x1f"))))
		return err
	}, pattern, limit, offset)
	if err != nil {
		return Page{}, err
	}
	return page, nil
}
