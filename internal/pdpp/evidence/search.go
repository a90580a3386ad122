package evidence

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// writeTotalAndWarnings ends a page summary line with the total, when the RS
// knows it (meta may be nil), and adds one line per RS warning.
func writeTotalAndWarnings(b *strings.Builder, m *rsclient.ResponseMeta) {
	if m == nil {
		b.WriteString("\n")
		return
	}
	if total := countOf(m.Count); total >= 0 {
		fmt.Fprintf(b, " of %d", total)
	}
	b.WriteString("\n")
	if m.Warnings != nil {
		for _, w := range *m.Warnings {
			fmt.Fprintf(b, "warning %s: %s\n", w.Code, w.Message)
		}
	}
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
	// The bounded, proven match preview, as scalars so every client can
	// read it; EvidenceComplete is set exactly when the hit has one.
	EvidenceField    string `json:"evidence_field,omitempty"`
	EvidencePreview  string `json:"evidence_preview,omitempty"`
	EvidenceComplete *bool  `json:"evidence_complete,omitempty"`
	// snippet is the text's line for the RS's own snippet of a hit
	// without a proven window, labelled as not proven ("" when it has
	// none).
	snippet string
	Next    Continuation `json:"next"`
	// nextCall and nextJSON are Next as the text and structured output
	// write it, encoded once by resultFor: a compact step writes a hit in
	// up to three forms (as the RS gave it, shortened, and to weigh the
	// full reply), each with the same continuation. Empty, Next is
	// encoded where it is written.
	nextCall string
	nextJSON []byte
}

// call is r.Next as the text writes it.
func (r *SearchResult) call() string {
	if r.nextCall != "" {
		return r.nextCall
	}
	return r.Next.Call()
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
	Results    []SearchResult
	Ladder     []LadderRecord
	NextCursor string
	HasMore    bool
	NextPage   *Continuation

	req  SearchRequest
	meta *rsclient.ResponseMeta
	// fullText is the text at detail "full", rendered by FullText.
	fullText string
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
	var page rsclient.SearchResultList
	if err := decodeBody(body, "search", "a search list", &page, searchHits); err != nil {
		return SearchView{}, err
	}
	if page.Data == nil {
		return SearchView{}, fmt.Errorf("search response has no data list")
	}
	v := SearchView{HasMore: page.HasMore, Results: make([]SearchResult, 0, len(page.Data))}
	if page.NextCursor != nil {
		v.NextCursor = *page.NextCursor
	}
	for i := range page.Data {
		r := resultFor(&page.Data[i], providerBase)
		v.Results = append(v.Results, r)
		v.Ladder = append(v.Ladder, LadderRecord{
			ID: r.ID, EvidenceField: r.EvidenceField, EvidencePreview: r.EvidencePreview,
			EvidenceComplete: r.EvidenceComplete, Next: r.Next, Fetch: FetchCall(r.ID),
		})
	}
	if v.NextCursor != "" {
		args := req.Args()
		args["cursor"] = v.NextCursor
		v.NextPage = &Continuation{Tool: ToolSearch, Arguments: args}
	}
	v.req, v.meta = req, page.Meta
	return v, nil
}

// searchHits bounds the hits of a search page as they are decoded.
var searchHits = jsonv2.JoinUnmarshalers(rawInPlace, objectItems[rsclient.SearchResult]("search page", "hits", MaxPageItems))

// FullText returns the content[] text of the page at detail "full", every
// card and the summary, rendering it on first use: a compact step writes
// its own text and needs this one only for the size of the full reply.
func (v *SearchView) FullText() string {
	if v.fullText == "" {
		v.fullText = searchText(*v, len(v.Results))
	}
	return v.fullText
}

func resultFor(hit *rsclient.SearchResult, providerBase string) SearchResult {
	connID := hit.ConnectionId
	ref := handles.RecordRef{ConnectionID: connID, Stream: hit.Stream, RecordID: hit.RecordKey}
	if uri := hit.RecordUri; uri != "" {
		if parsed, err := handles.ParseRecordURI(uri); err == nil {
			parsed.ConnectionID = cmp.Or(parsed.ConnectionID, connID)
			ref = parsed
		}
	}
	id := ref.ID()
	r := SearchResult{
		ID:           id,
		Title:        neutralTitle(ref),
		URL:          recordURL(providerBase, hit.RecordUrl, ref),
		Stream:       ref.Stream,
		RecordID:     ref.RecordID,
		ConnectionID: ref.ConnectionID,
		ConnectorID:  hit.ConnectorId,
		ConnectorKey: hit.ConnectorKey,
	}
	if hit.MatchedFields != nil {
		r.MatchedFields = *hit.MatchedFields
	}
	if ex := provenExcerpt(hit); ex != nil {
		preview, cut := CenterOnMark(ex.PreviewText, PreviewChars)
		complete := !ex.Truncated && !cut
		r.EvidenceField, r.EvidencePreview, r.EvidenceComplete = ex.FieldPath, preview, &complete
		r.Next = ReadFieldCall(id, ex.FieldPath, 0, 0, firstMark(ex.PreviewText))
	} else {
		r.Next = FetchCall(id)
		r.snippet = snippetLine(hit.Snippet)
	}
	r.nextCall = r.Next.Call()
	r.nextJSON = r.Next.appendTo(nil)
	return r
}

// provenExcerpt returns the first excerpt that is a real proven window: it names
// a field and has preview text. Snippets alone are never promoted to evidence.
func provenExcerpt(hit *rsclient.SearchResult) *rsclient.EvidenceExcerpt {
	if hit.EvidenceExcerpts == nil {
		return nil
	}
	for i := range *hit.EvidenceExcerpts {
		ex := &(*hit.EvidenceExcerpts)[i]
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
// It is the text of detail "full", whose structured output lists every hit.
func searchText(v SearchView, inStructured int) string {
	var b strings.Builder
	if len(v.Results) > 0 {
		fmt.Fprintf(&b, "first_fetch_id=%s\n", unseen.Spell(v.Results[0].ID))
	}
	for i, r := range v.Results {
		if i == SearchCardsShown {
			more := min(len(v.Results), inStructured) - SearchCardsShown
			fmt.Fprintf(&b, "(%d more %s on this page %s in structured results[])\n", more, noun(more, "hit", "hits"), noun(more, "is", "are"))
			break
		}
		writeCard(&b, i+1, r)
	}
	b.WriteString(searchSummary(v))
	if v.NextPage != nil {
		fmt.Fprintf(&b, "next page: %s\n", v.NextPage.Call())
	}
	return capBytes(b.String())
}

// searchSummary is the line that counts the page's hits, the RS's
// warnings, and the advice a page without hits gets.
func searchSummary(v SearchView) string {
	req := v.req
	var b strings.Builder
	mode := cmp.Or(req.Mode, "lexical")
	fmt.Fprintf(&b, "search %q (%s): %d %s on this page", req.Q, mode, len(v.Results), noun(len(v.Results), "hit", "hits"))
	writeTotalAndWarnings(&b, v.meta)
	if len(v.Results) == 0 && v.NextPage == nil {
		other := "semantic"
		if mode != "lexical" {
			other = "lexical"
		}
		fmt.Fprintf(&b, "no hits; try other words, mode %q, or check streams with schema\n", other)
	}
	return b.String()
}

// writeCard writes hit r, numbered n, as its lines of content[] text.
func writeCard(b *strings.Builder, n int, r SearchResult) {
	b.WriteByte('[')
	b.WriteString(strconv.Itoa(n))
	b.WriteString("] id=")
	b.WriteString(unseen.Spell(r.ID))
	b.WriteByte('\n')
	if r.EvidenceComplete != nil {
		state := "excerpt; field continues"
		if *r.EvidenceComplete {
			state = "whole field"
		}
		for _, s := range [...]string{"    evidence ", r.EvidenceField, " (", state, "): ", r.EvidencePreview, "\n    read: ", r.call(), "\n"} {
			b.WriteString(s)
		}
	} else {
		if len(r.MatchedFields) > 0 {
			b.WriteString("    matched ")
			b.WriteString(strings.Join(r.MatchedFields, ", "))
			b.WriteString("; no proven text window\n")
		} else {
			b.WriteString("    no proven text window\n")
		}
		if r.snippet != "" {
			b.WriteString("    ")
			b.WriteString(r.snippet)
			b.WriteByte('\n')
		}
		b.WriteString("    continue: ")
		b.WriteString(r.call())
		b.WriteByte('\n')
	}
	b.WriteString("    stream=")
	b.WriteString(r.Stream)
	if r.ConnectorID != "" {
		b.WriteString(" connector=")
		b.WriteString(r.ConnectorID)
	}
	b.WriteByte('\n')
}

// countOf reads meta.count, which the RS sends as a number or as an object with
// a `value`; it returns -1 when no count is known.
func countOf(raw jsontext.Value) int {
	switch raw.Kind() {
	case '0':
		var n int
		if jsonv2.Unmarshal(raw, &n) == nil {
			return n
		}
	case '{':
		var obj struct {
			Value *int `json:"value"`
		}
		if jsonv2.Unmarshal(raw, &obj, rsDecodeOptions) == nil && obj.Value != nil {
			return *obj.Value
		}
	}
	return -1
}

// snippetChars bounds the RS snippet shown for a hit without a proven window.
const snippetChars = 240

// snippetLine renders the RS's own snippet {field, text} of a hit without a
// proven window, bounded to snippetChars around its first match and
// labelled with its field as not a proven window; "" when there is none.
func snippetLine(sn *rsclient.SearchSnippet) string {
	if sn == nil || strings.TrimSpace(sn.Text) == "" {
		return ""
	}
	text, _ := CenterOnMark(sn.Text, snippetChars)
	field := cmp.Or(Clip(oneLine(sn.Field), handles.MaxFieldPathBytes), "a field")
	return fmt.Sprintf("RS snippet of %s (not a proven window): %s", field, text)
}

// compactLadderRecord is one content_ladder entry in compact output: the
// evidence and its next read live once, in results[] (same index).
type compactLadderRecord struct {
	ID    string       `json:"id"`
	Fetch Continuation `json:"fetch"`
}

// previewedEntry is the records[] entry of a record a compact step shows:
// its id and the fields of its data the server replaced by a Preview,
// written outside the data, where the RS cannot write, so a reader (the
// evidence view) follows a preview's next only for the fields named
// there, never for a record value shaped like a Preview.
type previewedEntry struct {
	ID        string   `json:"id"`
	Previewed []string `json:"previewed,omitempty"`
}

// CompactPreviewChars bounds a hit's evidence preview in compact output
// once the page does not fit with the previews as the RS gave them.
const CompactPreviewChars = 200

// encodeHit encodes hit r for a compact step: its card, its results[]
// entry and its content_ladder entry; with shorten, its evidence preview
// is cut to CompactPreviewChars in the card and in results[].
func encodeHit(r SearchResult, n int, shorten bool) stepItem {
	var it stepItem
	if shorten && r.EvidencePreview != "" {
		if shorter, c := CenterOnMark(r.EvidencePreview, CompactPreviewChars); c {
			complete := false
			r.EvidencePreview, r.EvidenceComplete, it.cut = shorter, &complete, 1
		}
	}
	var b strings.Builder
	writeCard(&b, n, r)
	it.card = []byte(b.String())
	it.entry = r.appendJSON(make([]byte, 0, 512))
	it.identity = appendCompactLadder(nil, r.ID)
	return it
}

// CompactStep builds search's compact reply, text and structuredContent
// within budget bytes (the result less its envelope), as one step along
// the page (see Step): the hits from st.Pos with their previews while they
// fit (shortened first when the rest of the page does not fit whole), the
// ids of the hits after them in content_ladder.records[], and next.
func (v *SearchView) CompactStep(st Step, budget int) (string, json.RawMessage, Truncation) {
	total := len(v.Results)
	pos := min(st.Pos, total)
	rest := v.Results[pos:]
	// A hit over alone has its preview shortened, and one over room even
	// so (a very long id) is shown by id alone.
	build := func(shorten bool) func(i, alone, room int) stepItem {
		return func(i, alone, room int) stepItem {
			it := encodeHit(rest[i], pos+i+1, shorten)
			if it.cost() > alone {
				if !shorten {
					it = encodeHit(rest[i], pos+i+1, true)
				}
				if it.cost() > room {
					it = idOnlyItem(pos+i+1, rest[i].ID, room)
					it.cut = 1
				}
			}
			return it
		}
	}
	var nextPage []byte
	if v.NextPage != nil {
		nextPage = v.NextPage.encoded()
	}
	summary := searchSummary(*v)
	// What a step costs besides its items: the summary, the lines that
	// report the step (StepBase), and the structured members around the
	// lists. The first hit's id is named for fetch when fetch takes it.
	firstFetch := len(rest) > 0 && takesBack(rest[0].ID)
	base := textCost(summary) + StepBase("hits", "content_ladder.records[]", st, total) + JSONStringLen(v.NextCursor)
	if firstFetch {
		base += len("first_fetch_id=\n") + textCost(rest[0].ID)
	}
	if v.NextPage != nil {
		// content_ladder.next_page, next once the page is shown to
		// its end, and the text line that names it.
		base += 2*WireLen(nextPage) + textCost("next page: "+v.NextPage.Call())
	}
	p := pageStep{st: st, pos: pos, total: total, id: func(i int) string { return rest[i].ID }, what: "hits", where: "content_ladder.records[]", nextPage: v.NextPage}
	ids := idEntryCosts(len(rest), p.id)
	items, listed := p.fit(budget, base, ids, build(false))
	if len(items) < len(rest) {
		// The rest of the page does not fit whole: previews shrink first.
		items, listed = p.fit(budget, base, ids, build(true))
	}
	head := ""
	if len(items) > 0 && firstFetch {
		head = "first_fetch_id=" + unseen.Spell(rest[0].ID) + "\n"
	}
	text, results, ladder, next, tr, fullBytes := p.lay(items, listed, head, summary, 0)
	var w, lw objectWriter
	w.member("results", results)
	if nextPage != nil && pos+len(items) < total {
		// Once the page is shown to its end, next is this call: it is
		// not said twice.
		lw.member("next_page", nextPage)
	}
	lw.member("records", ladder)
	w.member("content_ladder", lw.bytes())
	writePageStep(&w, v.HasMore, v.NextCursor, next, st, &tr, st.Full.encoded(), fullBytes)
	return text, w.bytes(), tr
}

// writePageStep ends the structured output of a compact step over an RS
// page: the page's has_more and next_cursor, next, and the step's report
// (writeStep); a truncated step names its full call in tr.
func writePageStep(w *objectWriter, hasMore bool, nextCursor string, next *Continuation, st Step, tr *Truncation, fullJSON []byte, fullBytes int) {
	w.member("has_more", strconv.AppendBool(nil, hasMore))
	if nextCursor != "" {
		w.member("next_cursor", appendString(nil, nextCursor))
	}
	if next != nil {
		w.member("next", next.encoded())
	}
	writeStep(w, st, *tr, fullJSON, fullBytes)
	if tr.Truncated {
		tr.Full = &st.Full
	}
}

// writeStep writes the members that report a compact step: detail, the
// truncation flag, the items shown of the total, where a later step
// started and, when something was cut, a restart, the values cut, and the
// full call with its size.
func writeStep(w *objectWriter, st Step, tr Truncation, fullJSON []byte, fullBytes int) {
	w.member("detail", []byte(`"`+DetailCompact+`"`))
	w.member("truncated", strconv.AppendBool(nil, tr.Truncated))
	w.member("items_shown", []byte(strconv.Itoa(tr.Shown)))
	w.member("items_total", []byte(strconv.Itoa(tr.Total)))
	if st.Pos > 0 {
		w.member("page_position", []byte(strconv.Itoa(st.Pos)))
	}
	if !tr.Truncated {
		return
	}
	if st.Restarted {
		w.member("page_changed", []byte("true"))
	}
	if tr.ValuesCut > 0 {
		w.member("values_cut", []byte(strconv.Itoa(tr.ValuesCut)))
	}
	w.member("full", fullJSON)
	w.member("full_bytes", []byte(strconv.Itoa(fullBytes)))
}

// FullBytes estimates the serialized reply of the same search at detail
// "full": its text and every hit with its ladder entry, as encoding/json
// writes them. It encodes each hit once and keeps nothing.
func (v SearchView) FullBytes() int {
	n := JSONStringLen(v.FullText()) + 256
	var buf []byte // reused: one encoding at a time
	for i := range v.Results {
		buf = v.Results[i].appendJSON(buf[:0])
		n += WireLen(buf) + 1
	}
	for i := range v.Ladder {
		buf = v.Ladder[i].appendJSON(buf[:0])
		n += WireLen(buf) + 1
	}
	if v.NextPage != nil {
		n += 2 * WireLen(v.NextPage.encoded())
	}
	return n
}
