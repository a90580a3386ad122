package evidence

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// SearchHit is the part of an RS `search_result` the adapter reads.
type SearchHit struct {
	RecordKey     string          `json:"record_key"`
	RecordURL     string          `json:"record_url"`
	RecordURI     string          `json:"record_uri"`
	Stream        string          `json:"stream"`
	ConnectionID  string          `json:"connection_id"`
	ConnectorID   string          `json:"connector_id"`
	ConnectorKey  string          `json:"connector_key"`
	MatchedFields []string        `json:"matched_fields"`
	RetrievalMode string          `json:"retrieval_mode"`
	Snippet       *Snippet        `json:"snippet"`
	Excerpts      []Excerpt       `json:"evidence_excerpts"`
	Score         json.RawMessage `json:"score"`
}

// Snippet is the RS's highlighted snippet; it is not proof of a body match.
type Snippet struct {
	Field string `json:"field"`
	Text  string `json:"text"`
}

// Excerpt is one proven match window the RS reports for a hit.
type Excerpt struct {
	FieldPath   string    `json:"field_path"`
	PreviewText string    `json:"preview_text"`
	Truncated   bool      `json:"truncated"`
	Provenance  string    `json:"provenance"`
	Read        *ReadHint `json:"read"`
}

// ReadHint is the RS's ready-made field-window request for an excerpt.
type ReadHint struct {
	Field        string `json:"field"`
	RecordID     string `json:"record_id"`
	Stream       string `json:"stream"`
	ConnectionID string `json:"connection_id"`
}

// SearchPage is an RS search list envelope.
type SearchPage struct {
	Data       []SearchHit `json:"data"`
	HasMore    bool        `json:"has_more"`
	NextCursor *string     `json:"next_cursor"`
	Meta       PageMeta    `json:"meta"`
}

// PageMeta is the `meta` member of RS list envelopes.
type PageMeta struct {
	Count    json.RawMessage `json:"count"`
	Warnings []Warning       `json:"warnings"`
}

// writeTotalAndWarnings ends a page summary line with the total, when the RS
// knows it, and adds one line per RS warning.
func (m PageMeta) writeTotalAndWarnings(b *strings.Builder) {
	if total := countOf(m.Count); total >= 0 {
		fmt.Fprintf(b, " of %d", total)
	}
	b.WriteString("\n")
	for _, w := range m.Warnings {
		fmt.Fprintf(b, "warning %s: %s\n", w.Code, w.Message)
	}
}

// Warning is one RS warning (e.g. limit_clamped).
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SearchRequest is what the caller asked, used to build the next-page call.
type SearchRequest struct {
	Q            string
	Mode         string
	Streams      []string
	Limit        int
	ConnectionID string
	Filter       json.RawMessage
	// Detail is carried into the next-page call when it is not compact.
	Detail string
}

// Args returns the request as search arguments, without cursor.
func (req SearchRequest) Args() map[string]any {
	args := map[string]any{"q": req.Q}
	if req.Mode != "" && req.Mode != "lexical" {
		args["mode"] = req.Mode
	}
	if len(req.Streams) > 0 {
		args["streams"] = req.Streams
	}
	if req.Limit > 0 {
		args["limit"] = req.Limit
	}
	if req.ConnectionID != "" {
		args["connection_id"] = req.ConnectionID
	}
	if len(req.Filter) > 0 && string(req.Filter) != "null" {
		args["filter"] = json.RawMessage(req.Filter)
	}
	if req.Detail == DetailFull {
		args["detail"] = DetailFull
	}
	return args
}

// ProvenEvidence is a bounded, proven match preview for one hit.
type ProvenEvidence struct {
	FieldPath  string `json:"field_path"`
	Preview    string `json:"preview"`
	Complete   bool   `json:"complete"`
	Provenance string `json:"provenance,omitempty"`
}

// SearchResult is one hit as the model sees it in structured output.
type SearchResult struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	URL           string   `json:"url,omitempty"`
	Stream        string   `json:"stream"`
	RecordID      string   `json:"record_id"`
	ConnectionID  string   `json:"connection_id,omitempty"`
	ConnectorID   string   `json:"connector_id,omitempty"`
	ConnectorKey  string   `json:"connector_key,omitempty"`
	MatchedFields []string `json:"matched_fields,omitempty"`
	// The proven match preview, as scalars so every client can read it.
	EvidenceField    string          `json:"evidence_field,omitempty"`
	EvidencePreview  string          `json:"evidence_preview,omitempty"`
	EvidenceComplete *bool           `json:"evidence_complete,omitempty"`
	Evidence         *ProvenEvidence `json:"-"`
	// snippet is the RS's own snippet of a hit without a proven window;
	// the text shows it, labelled as not proven.
	snippet *Snippet
	Next    Continuation `json:"next"`
}

// LadderRecord is one rung entry of content_ladder.records[].
type LadderRecord struct {
	ID               string       `json:"id"`
	EvidenceField    string       `json:"evidence_field,omitempty"`
	EvidencePreview  string       `json:"evidence_preview,omitempty"`
	EvidenceComplete *bool        `json:"evidence_complete,omitempty"`
	Next             Continuation `json:"next"`
	Fetch            Continuation `json:"fetch"`
}

// SearchView is a rendered search page.
type SearchView struct {
	Text       string
	Results    []SearchResult
	Ladder     []LadderRecord
	NextCursor string
	HasMore    bool
	NextPage   *Continuation

	req  SearchRequest
	meta PageMeta
}

// Structured returns the structuredContent object for a search result.
func (v SearchView) Structured() map[string]any {
	ladder := map[string]any{"records": v.Ladder}
	if v.NextPage != nil {
		ladder["next_page"] = v.NextPage
	}
	out := map[string]any{
		"results":        v.Results,
		"content_ladder": ladder,
		"has_more":       v.HasMore,
	}
	if v.NextCursor != "" {
		out["next_cursor"] = v.NextCursor
	}
	return out
}

// RenderSearch turns an RS search body into evidence-first text and structured
// results. providerBase is the RS base URL used to make absolute record URLs.
func RenderSearch(body []byte, req SearchRequest, providerBase string) (SearchView, error) {
	if err := requireObject(body, "search"); err != nil {
		return SearchView{}, err
	}
	var page SearchPage
	if err := json.Unmarshal(body, &page); err != nil {
		return SearchView{}, fmt.Errorf("search response is not a search list: %w", err)
	}
	if page.Data == nil {
		return SearchView{}, fmt.Errorf("search response has no data list")
	}
	v := SearchView{HasMore: page.HasMore, Results: make([]SearchResult, 0, len(page.Data))}
	if page.NextCursor != nil {
		v.NextCursor = *page.NextCursor
	}
	for _, hit := range page.Data {
		r := resultFor(hit, providerBase)
		v.Results = append(v.Results, r)
		v.Ladder = append(v.Ladder, LadderRecord{
			ID: r.ID, EvidenceField: r.EvidenceField, EvidencePreview: r.EvidencePreview,
			EvidenceComplete: r.EvidenceComplete, Next: r.Next, Fetch: FetchCall(r.ID),
		})
	}
	if v.NextCursor != "" {
		args := req.Args()
		args["cursor"] = v.NextCursor
		c := Continuation{Tool: ToolSearch, Arguments: args}
		v.NextPage = &c
	}
	v.req, v.meta = req, page.Meta
	v.Text = searchText(v, len(v.Results))
	return v, nil
}

func resultFor(hit SearchHit, providerBase string) SearchResult {
	ref := handles.RecordRef{ConnectionID: hit.ConnectionID, Stream: hit.Stream, RecordID: hit.RecordKey}
	if hit.RecordURI != "" {
		if parsed, err := handles.ParseRecordURI(hit.RecordURI); err == nil {
			if parsed.ConnectionID == "" {
				parsed.ConnectionID = hit.ConnectionID
			}
			ref = parsed
		}
	}
	id := ref.ID()
	r := SearchResult{
		ID:            id,
		Title:         neutralTitle(ref),
		URL:           recordURL(providerBase, hit.RecordURL, ref),
		Stream:        ref.Stream,
		RecordID:      ref.RecordID,
		ConnectionID:  ref.ConnectionID,
		ConnectorID:   hit.ConnectorID,
		ConnectorKey:  hit.ConnectorKey,
		MatchedFields: hit.MatchedFields,
	}
	if ex := provenExcerpt(hit); ex != nil {
		preview, cut := CenterOnMark(ex.PreviewText, PreviewChars)
		r.Evidence = &ProvenEvidence{
			FieldPath:  ex.FieldPath,
			Preview:    preview,
			Complete:   !ex.Truncated && !cut,
			Provenance: ex.Provenance,
		}
		complete := r.Evidence.Complete
		r.EvidenceField, r.EvidencePreview, r.EvidenceComplete = ex.FieldPath, preview, &complete
		r.Next = ReadFieldCall(id, ex.FieldPath, 0, 0, firstMark(ex.PreviewText))
	} else {
		r.Next = FetchCall(id)
		r.snippet = hit.Snippet
	}
	return r
}

// provenExcerpt returns the first excerpt that is a real proven window: it names
// a field and has preview text. Snippets alone are never promoted to evidence.
func provenExcerpt(hit SearchHit) *Excerpt {
	for i := range hit.Excerpts {
		ex := &hit.Excerpts[i]
		if ex.FieldPath != "" && strings.TrimSpace(ex.PreviewText) != "" {
			return ex
		}
	}
	return nil
}

// neutralTitle names a record without guessing which field is its title.
func neutralTitle(ref handles.RecordRef) string {
	return ref.Stream + " " + ref.RecordID
}

func recordURL(base, recordPath string, ref handles.RecordRef) string {
	if base == "" {
		return ""
	}
	if recordPath == "" {
		recordPath = "/v1/streams/" + url.PathEscape(ref.Stream) + "/records/" + url.PathEscape(ref.RecordID)
	}
	u := strings.TrimRight(base, "/") + recordPath
	if ref.ConnectionID != "" && !strings.Contains(recordPath, "connection_id=") {
		sep := "?"
		if strings.Contains(recordPath, "?") {
			sep = "&"
		}
		u += sep + "connection_id=" + url.QueryEscape(ref.ConnectionID)
	}
	return u
}

// searchText renders the cards of v, for its request and page meta;
// inStructured is how many hits of the page structured results[] carries.
func searchText(v SearchView, inStructured int) string {
	req := v.req
	var b strings.Builder
	if len(v.Results) > 0 {
		fmt.Fprintf(&b, "first_fetch_id=%s\n", v.Results[0].ID)
	}
	for i, r := range v.Results {
		if i == SearchCardsShown {
			more := len(v.Results) - SearchCardsShown
			if listed := inStructured - SearchCardsShown; listed < more {
				fmt.Fprintf(&b, "(%d more %s on this page: %d in structured results[], the rest with detail \"full\")\n", more, noun(more, "hit", "hits"), max(0, listed))
			} else {
				fmt.Fprintf(&b, "(%d more %s on this page %s in structured results[])\n", more, noun(more, "hit", "hits"), noun(more, "is", "are"))
			}
			break
		}
		writeCard(&b, i+1, r)
	}
	mode := req.Mode
	if mode == "" {
		mode = "lexical"
	}
	fmt.Fprintf(&b, "search %q (%s): %d %s on this page", req.Q, mode, len(v.Results), noun(len(v.Results), "hit", "hits"))
	v.meta.writeTotalAndWarnings(&b)
	if v.NextPage != nil {
		fmt.Fprintf(&b, "next page: %s\n", v.NextPage.Call())
	} else if len(v.Results) == 0 {
		other := "semantic"
		if mode != "lexical" {
			other = "lexical"
		}
		fmt.Fprintf(&b, "no hits; try other words, mode %q, or check streams with schema\n", other)
	}
	return capBytes(b.String())
}

func writeCard(b *strings.Builder, n int, r SearchResult) {
	fmt.Fprintf(b, "[%d] id=%s\n", n, r.ID)
	if r.Evidence != nil {
		state := "excerpt; field continues"
		if r.Evidence.Complete {
			state = "whole field"
		}
		fmt.Fprintf(b, "    evidence %s (%s): %s\n", r.Evidence.FieldPath, state, r.Evidence.Preview)
		fmt.Fprintf(b, "    read: %s\n", r.Next.Call())
	} else {
		if len(r.MatchedFields) > 0 {
			fmt.Fprintf(b, "    matched %s; no proven text window\n", strings.Join(r.MatchedFields, ", "))
		} else {
			b.WriteString("    no proven text window\n")
		}
		if line := snippetLine(r.snippet); line != "" {
			fmt.Fprintf(b, "    %s\n", line)
		}
		fmt.Fprintf(b, "    continue: %s\n", r.Next.Call())
	}
	fmt.Fprintf(b, "    stream=%s", r.Stream)
	if r.ConnectorID != "" {
		fmt.Fprintf(b, " connector=%s", r.ConnectorID)
	}
	b.WriteString("\n")
}

// countOf reads meta.count, which the RS sends as a number or as an object with
// a `value`; it returns -1 when no count is known.
func countOf(raw json.RawMessage) int {
	if len(raw) == 0 {
		return -1
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var obj struct {
		Value *int `json:"value"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Value != nil {
		return *obj.Value
	}
	return -1
}

// snippetChars bounds the RS snippet shown for a hit without a proven window.
const snippetChars = 240

// snippetLine renders the RS's own snippet {field, text} of a hit without a
// proven window, bounded to snippetChars around its first match and
// labelled with its field as not a proven window; "" when there is none.
func snippetLine(sn *Snippet) string {
	if sn == nil || strings.TrimSpace(sn.Text) == "" {
		return ""
	}
	text, _ := CenterOnMark(sn.Text, snippetChars)
	field := Clip(oneLine(sn.Field), handles.MaxFieldPathBytes)
	if field == "" {
		field = "a field"
	}
	return fmt.Sprintf("RS snippet of %s (not a proven window): %s", field, text)
}

// compactLadderRecord is one content_ladder entry in compact output: the
// evidence and its next read live once, in results[] (same index).
type compactLadderRecord struct {
	ID    string       `json:"id"`
	Fetch Continuation `json:"fetch"`
}

// CompactPreviewChars bounds a hit's evidence preview in compact structured
// output; the content[] card shows up to PreviewChars.
const CompactPreviewChars = 200

// CompactStructured builds search's compact structuredContent within
// budget bytes: the canonical keys, hits in rank order while they fit (the
// first SearchCardsShown with their preview, later ones with their next
// read only), and the truncation report. full is the same call with detail
// "full".
func (v *SearchView) CompactStructured(budget int, full Continuation) (json.RawMessage, Truncation) {
	tr := Truncation{Total: len(v.Results)}
	// Each hit and its ladder entry are encoded once; the reply is
	// assembled from those bytes.
	results := make([][]byte, len(v.Results))
	ladder := make([][]byte, len(v.Results))
	cut := make([]bool, len(v.Results))
	var nextPage []byte
	if v.NextPage != nil {
		nextPage = mustMarshal(v.NextPage)
	}
	used := 256 + len(nextPage) + len(v.NextCursor) // keys, flags, cursor
	// First every hit as it is; only when the page does not fit are the
	// previews shortened (the cards' hits) or left out (the rest).
	encode := func(shorten bool) int {
		total := used
		for i, r := range v.Results {
			cut[i] = false
			switch {
			case !shorten || r.EvidencePreview == "":
			case i >= SearchCardsShown:
				// Beyond the cards: the hit and its next read, no preview.
				r.EvidencePreview, cut[i] = "", true
			default:
				if shorter, c := CenterOnMark(r.EvidencePreview, CompactPreviewChars); c {
					complete := false
					r.EvidencePreview, r.EvidenceComplete, cut[i] = shorter, &complete, true
				}
			}
			results[i] = mustMarshal(r)
			if ladder[i] == nil {
				ladder[i] = mustMarshal(compactLadderRecord{ID: r.ID, Fetch: FetchCall(r.ID)})
			}
			total += len(results[i]) + len(ladder[i]) + 2
		}
		return total
	}
	all := encode(false)
	if all > budget {
		all = encode(true)
	}
	fullJSON := mustMarshal(full)
	if all > budget || slices.Contains(cut, true) {
		used += len(fullJSON) // the truncation members
	}
	// Hits go in while they fit; the loop is bounded by the page length.
	for i := range v.Results {
		size := len(results[i]) + len(ladder[i]) + 2
		if used+size > budget {
			break
		}
		used += size
		tr.Shown++
		if cut[i] {
			tr.ValuesCut++
		}
	}
	if tr.Shown < tr.Total {
		v.Text = searchText(*v, tr.Shown)
	}
	tr.Truncated = tr.Shown < tr.Total || tr.ValuesCut > 0
	var w, lw objectWriter
	w.member("results", joinArray(results[:tr.Shown]))
	if nextPage != nil {
		lw.member("next_page", nextPage)
	}
	lw.member("records", joinArray(ladder[:tr.Shown]))
	w.member("content_ladder", lw.bytes())
	w.member("has_more", boolJSON(v.HasMore))
	if v.NextCursor != "" {
		w.member("next_cursor", mustMarshal(v.NextCursor))
	}
	w.member("detail", []byte(`"`+DetailCompact+`"`))
	w.member("truncated", boolJSON(tr.Truncated))
	if tr.Truncated {
		tr.Full = &full
		w.member("items_shown", []byte(strconv.Itoa(tr.Shown)))
		w.member("items_total", []byte(strconv.Itoa(tr.Total)))
		if tr.ValuesCut > 0 {
			w.member("values_cut", []byte(strconv.Itoa(tr.ValuesCut)))
		}
		w.member("full", fullJSON)
	}
	return w.bytes(), tr
}
