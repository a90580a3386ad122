package papers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
)

// maxOffset is the largest offset the search tools accept (seed 002).
const maxOffset = 10000

// searchResult is the structuredContent of both search tools.
type searchResult struct {
	Query      string      `json:"query,omitempty"`
	Keyword    string      `json:"keyword,omitempty"`
	Results    []store.Hit `json:"results"`
	Total      int         `json:"total"`
	Offset     int         `json:"offset"`
	Limit      int         `json:"limit"`
	NextOffset *int        `json:"next_offset,omitempty"` // absent on the last page, so the schema keeps its type
}

// SearchPapers serves search_papers.
func (h *Handlers) SearchPapers(ctx context.Context, a papertools.SearchPapersArgs) (*mcp.CallToolResult, error) {
	if strings.TrimSpace(a.Query) == "" {
		return validation(papertools.ToolSearchPapers, "query", mcpkit.CodeMissingArgument, "query is blank"), nil
	}
	page, err := h.store.Search(ctx, a.Query, *a.Limit, *a.Offset)
	if errors.Is(err, store.ErrInvalidQuery) {
		return validation(papertools.ToolSearchPapers, "query", "invalid_query", "the query could not be searched; use plain words"), nil
	}
	if err != nil {
		return h.internal(papertools.ToolSearchPapers, err), nil
	}
	res := pageResult(page, *a.Limit, *a.Offset)
	res.Query = a.Query
	return mcp.NewToolResultStructured(res, searchText(res, fmt.Sprintf("for query %q (best match first)", a.Query), papertools.ToolSearchPapers)), nil
}

// SearchPapersByKeyword serves search_papers_by_keyword.
func (h *Handlers) SearchPapersByKeyword(ctx context.Context, a papertools.SearchPapersByKeywordArgs) (*mcp.CallToolResult, error) {
	k := store.NormalizeKeyword(a.Keyword)
	if k == "" {
		return validation(papertools.ToolSearchPapersByKeyword, "keyword", mcpkit.CodeMissingArgument, "keyword is blank"), nil
	}
	page, err := h.store.SearchByKeyword(ctx, k, *a.Limit, *a.Offset)
	if err != nil {
		return h.internal(papertools.ToolSearchPapersByKeyword, err), nil
	}
	res := pageResult(page, *a.Limit, *a.Offset)
	res.Keyword = k
	return mcp.NewToolResultStructured(res, searchText(res, fmt.Sprintf("with a keyword or tag containing %q (newest first)", k), papertools.ToolSearchPapersByKeyword)), nil
}

func pageResult(page store.Page, limit, offset int) searchResult {
	res := searchResult{Results: append([]store.Hit{}, page.Hits...), Total: page.Total, Offset: offset, Limit: limit}
	if next := offset + len(page.Hits); len(page.Hits) > 0 && next < page.Total && next <= maxOffset {
		res.NextOffset = &next
	}
	return res
}

// searchText is the text content of a search page: one numbered entry per
// paper with its id and snippet, and how to get the next page.
func searchText(res searchResult, what, tool string) string {
	papers := "papers"
	if res.Total == 1 {
		papers = "paper"
	}
	switch {
	case res.Total == 0:
		return fmt.Sprintf("No papers %s.", what)
	case len(res.Results) == 0:
		return fmt.Sprintf("Found %d %s %s, none at offset %d.", res.Total, papers, what, res.Offset)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d %s %s; showing %d-%d.", res.Total, papers, what, res.Offset+1, res.Offset+len(res.Results))
	switch {
	case res.NextOffset != nil:
		fmt.Fprintf(&b, " Next page: call %s with offset=%d.", tool, *res.NextOffset)
	case res.Offset+len(res.Results) < res.Total:
		fmt.Fprintf(&b, " Paging stops at offset %d; narrow the search to see the rest.", maxOffset)
	}
	b.WriteString("\n")
	for i, r := range res.Results {
		fmt.Fprintf(&b, "\n%d. %s (%s, %s)\n   paper_id: %s\n", res.Offset+i+1, r.Title, r.Year, r.Venue, r.PaperID)
		if len(r.MatchedValues) > 0 {
			fmt.Fprintf(&b, "   matched: %s\n", strings.Join(r.MatchedValues, ", "))
		}
		if r.SnippetMarkdown != "" {
			fmt.Fprintf(&b, "   %s\n", r.SnippetMarkdown)
		}
	}
	return b.String()
}

// metadata is the structuredContent of get_paper_metadata and the body of
// paper://{paper_id}/metadata.
type metadata struct {
	PaperID                   string   `json:"paper_id"`
	Title                     string   `json:"title"`
	Year                      string   `json:"year"`
	Month                     string   `json:"month"`
	Venue                     string   `json:"venue"`
	DOI                       string   `json:"doi,omitempty"` // absent when unknown, so the schema keeps its type
	Authors                   []string `json:"authors"`
	Keywords                  []string `json:"keywords"`
	Institutions              []string `json:"institutions"`
	Tags                      []string `json:"tags"`
	PreferredSummaryTemplate  string   `json:"preferred_summary_template"`
	AvailableSummaryTemplates []string `json:"available_summary_templates"`
	HasSource                 bool     `json:"has_source"`
	Translations              []string `json:"translations"`
	HasBibTeX                 bool     `json:"has_bibtex"`
	SummaryPreview            string   `json:"summary_preview"`
}

func metadataOf(p *store.Paper) metadata {
	return metadata{
		PaperID: p.ID, Title: p.Title, Year: p.Year, Month: p.Month, Venue: p.Venue, DOI: p.DOI,
		Authors: p.Authors, Keywords: p.Keywords, Institutions: p.Institutions, Tags: p.Tags,
		PreferredSummaryTemplate: p.PreferredTemplate, AvailableSummaryTemplates: p.Templates,
		HasSource: p.SourceHash != "", Translations: p.Langs(), HasBibTeX: p.HasBibTeX,
		SummaryPreview: p.Preview,
	}
}

// paper loads a paper, turning an unknown id into the error result to
// return. The id's format was checked by the generated Validate.
func (h *Handlers) paper(ctx context.Context, tool, id string) (*store.Paper, *mcp.CallToolResult) {
	p, err := h.store.Paper(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		te := &toolError{Code: CodeNotFound, PaperID: id, Message: fmt.Sprintf("paper %s is not in the snapshot", id),
			Next: "Use a paper_id from search_papers or search_papers_by_keyword."}
		return nil, te.result()
	}
	if err != nil {
		return nil, h.internal(tool, err)
	}
	return p, nil
}

// GetPaperMetadata serves get_paper_metadata.
func (h *Handlers) GetPaperMetadata(ctx context.Context, a papertools.GetPaperMetadataArgs) (*mcp.CallToolResult, error) {
	p, fail := h.paper(ctx, papertools.ToolGetPaperMetadata, a.PaperID)
	if fail != nil {
		return fail, nil
	}
	m := metadataOf(p)
	text, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return h.internal(papertools.ToolGetPaperMetadata, err), nil
	}
	return mcp.NewToolResultStructured(m, string(text)), nil
}

// textResult is the structuredContent of get_paper_summary and
// get_paper_source; the text itself is the result's text content.
type textResult struct {
	PaperID       string `json:"paper_id"`
	Template      string `json:"template,omitempty"`
	Available     *bool  `json:"available,omitempty"`
	Reason        string `json:"reason,omitempty"`
	TotalChars    int    `json:"total_chars"`
	ReturnedChars int    `json:"returned_chars"`
	Truncated     bool   `json:"truncated"`
}

// GetPaperSummary serves get_paper_summary.
func (h *Handlers) GetPaperSummary(ctx context.Context, a papertools.GetPaperSummaryArgs) (*mcp.CallToolResult, error) {
	p, fail := h.paper(ctx, papertools.ToolGetPaperSummary, a.PaperID)
	if fail != nil {
		return fail, nil
	}
	tpl, body, terr := h.summary(ctx, p, strings.TrimSpace(a.Template))
	if terr != nil {
		return terr.result(), nil
	}
	c := truncate(body, *cmp.Or(a.MaxChars, new(DefaultMaxChars)), "Call get_paper_summary again with a larger max_chars to read more.")
	res := textResult{PaperID: p.ID, Template: tpl, TotalChars: c.Total, ReturnedChars: c.Returned, Truncated: c.Truncated}
	return structuredWithText(res, c.Text), nil
}

// summary resolves the template (the preferred one when tpl is empty) and
// loads its JSON, which must parse.
func (h *Handlers) summary(ctx context.Context, p *store.Paper, tpl string) (string, string, *toolError) {
	explicit := tpl != ""
	if !explicit {
		tpl = p.PreferredTemplate
	}
	if !p.HasTemplate(tpl) {
		te := &toolError{Code: CodeTemplateNotAvailable, PaperID: p.ID, Template: tpl, Available: p.Templates,
			Message: fmt.Sprintf("paper %s has no summary in template %q; available: %s", p.ID, tpl, strings.Join(p.Templates, ", "))}
		if !explicit {
			te.Message = fmt.Sprintf("the preferred template %q of paper %s has no summary; available: %s", tpl, p.ID, strings.Join(p.Templates, ", "))
		}
		if len(p.Templates) > 0 {
			te.Next = fmt.Sprintf("Call get_paper_summary with template=%q.", p.Templates[0])
		}
		return "", "", te
	}
	path := assets.TemplateSummaryPath(p.ID, tpl)
	if !explicit {
		path = assets.PreferredSummaryPath(p.ID)
	}
	raw, err := h.readWhole(ctx, path)
	if fe, ok := errors.AsType[*assets.FetchError](err); ok && fe.Reason == assets.ReasonNotFound && !explicit {
		// Some exports write only the per-template files.
		raw, err = h.readWhole(ctx, assets.TemplateSummaryPath(p.ID, tpl))
	}
	if err != nil || !json.Valid(raw) {
		te := &toolError{Code: CodeAssetParseFailed, PaperID: p.ID,
			Message: fmt.Sprintf("the summary of paper %s in template %s is not valid JSON", p.ID, tpl)}
		if err != nil {
			if te = h.assetFailed(err, fmt.Sprintf("summary (template %s)", tpl), p.ID); te.Code == CodeServerBusy {
				return "", "", te
			}
		}
		te.Template, te.Available = tpl, p.Templates
		if others := slices.DeleteFunc(slices.Clone(p.Templates), func(t string) bool { return t == tpl }); len(others) > 0 {
			te.Next = fmt.Sprintf("Another template may load: %s.", strings.Join(others, ", "))
		}
		return "", "", te
	}
	return tpl, string(raw), nil
}

// GetPaperSource serves get_paper_source.
func (h *Handlers) GetPaperSource(ctx context.Context, a papertools.GetPaperSourceArgs) (*mcp.CallToolResult, error) {
	p, fail := h.paper(ctx, papertools.ToolGetPaperSource, a.PaperID)
	if fail != nil {
		return fail, nil
	}
	if p.SourceHash == "" {
		res := textResult{PaperID: p.ID, Available: new(false), Reason: CodeSourceNotAvailable}
		text := fmt.Sprintf("Source markdown is not available for paper %s: the snapshot has no source for it. Read its summary with get_paper_summary instead.", p.ID)
		return mcp.NewToolResultStructured(res, text), nil
	}
	c, terr := h.source(ctx, p, *cmp.Or(a.MaxChars, new(DefaultMaxChars)), "Call get_paper_source again with a larger max_chars to read more.")
	if terr != nil {
		return terr.result(), nil
	}
	res := textResult{PaperID: p.ID, Available: new(true), TotalChars: c.Total, ReturnedChars: c.Returned, Truncated: c.Truncated}
	return structuredWithText(res, c.Text), nil
}

// source reads the paper's source markdown, its first max characters kept
// (see readText).
func (h *Handlers) source(ctx context.Context, p *store.Paper, max int, hint string) (cut, *toolError) {
	c, err := h.readText(ctx, assets.SourcePath(p.SourceHash), max, hint)
	if err != nil {
		te := h.assetFailed(err, "source markdown", p.ID)
		te.Next = "Read its summary with get_paper_summary instead."
		if te.Code == CodeServerBusy {
			te.Next = "Retry shortly, or read it with a smaller max_chars."
		}
		return cut{}, te
	}
	return c, nil
}

// assetFailed is the tool error of an asset that could not be read: no
// room in the bytes in flight, or a failed fetch (logged).
func (h *Handlers) assetFailed(err error, what, paperID string) *toolError {
	if inflight.IsBusy(err) {
		return busyError(err, paperID)
	}
	h.log.Warn("asset", "what", what, "paper_id", paperID, "err", err)
	return fetchFailed(err, what, paperID)
}

// facetsResult is the structuredContent of list_top_facets.
type facetsResult struct {
	Category    string        `json:"category"`
	Facets      []store.Facet `json:"facets"`
	TotalValues int           `json:"total_values"`
}

// ListTopFacets serves list_top_facets.
func (h *Handlers) ListTopFacets(ctx context.Context, a papertools.ListTopFacetsArgs) (*mcp.CallToolResult, error) {
	facets, total, err := h.store.TopFacets(ctx, a.Category, *a.Limit)
	if err != nil {
		return h.internal(papertools.ToolListTopFacets, err), nil
	}
	res := facetsResult{Category: a.Category, Facets: append([]store.Facet{}, facets...), TotalValues: total}
	var b strings.Builder
	fmt.Fprintf(&b, "Top %d of %d %s values by paper_count:\n", len(facets), total, a.Category)
	for i, f := range facets {
		fmt.Fprintf(&b, "%d. %s (%d)\n", i+1, f.Value, f.PaperCount)
	}
	return mcp.NewToolResultStructured(res, b.String()), nil
}

// structuredWithText is a result whose text content is text itself (the
// summary JSON or the markdown) and whose structuredContent describes it.
func structuredWithText(structured any, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: structured,
	}
}

// internal reports an unexpected failure without internal details.
func (h *Handlers) internal(tool string, err error) *mcp.CallToolResult {
	h.log.Error("tool failed", "tool", tool, "err", err)
	te := &toolError{Code: CodeInternal, Message: "the snapshot could not be read; try again", Fields: map[string]any{"tool": tool}}
	return te.result()
}
