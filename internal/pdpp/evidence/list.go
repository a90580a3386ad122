package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
)

// recordPage is an RS record list as RenderList decodes it, once: each
// record decoded and kept raw (a slice of the body) for compactRecord.
type recordPage struct {
	rsclient.RecordList
	Data recordList `json:"data"`
}

// The data member above stands for the model's: renamed in the spec, this
// line stops the build.
var _ []rsclient.Record = rsclient.RecordList{}.Data

// recordList is a page's records and where the list lies in the body
// ([start, end), brackets included), so that a compact step reads the
// envelope around it without reading the records again.
type recordList struct {
	items      []pageRecord
	start, end int
}

// UnmarshalJSONFrom reads the records as objectItems does, bounded; a
// record that does not decode as one is named by its place.
func (l *recordList) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*l = recordList{}
	if dec.PeekKind() == '[' {
		// The offset past the name and colon, white space after
		// included; the bracket is found below.
		l.start = int(dec.InputOffset())
	}
	err := readItems(dec, &l.items, "records page", "records", MaxPageItems)
	if item, ok := errors.AsType[*itemError](err); ok {
		return &pageError{fmt.Errorf("item %d of the records page is not a record: %w", item.i+1, item.err)}
	}
	if err != nil {
		return err
	}
	if l.items != nil {
		l.end = int(dec.InputOffset())
	}
	return nil
}

// pageRecord is one record of a records page, decoded, and where it lies
// ([start, end) of the body, white space and a comma before it included).
type pageRecord struct {
	rec        Record
	start, end int
}

// UnmarshalJSONFrom reads one record of a page.
func (p *pageRecord) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	p.start = int(dec.InputOffset())
	if err := jsonv2.UnmarshalDecode(dec, &p.rec); err != nil {
		return err
	}
	p.end = int(dec.InputOffset())
	return nil
}

// RecordEntry is one record's identity and continuation in structured output.
type RecordEntry struct {
	ID   string       `json:"id"`
	Next Continuation `json:"next"`
}

// ListView is a rendered records page.
type ListView struct {
	Records    []RecordEntry
	NextCursor string
	HasMore    bool
	NextPage   *Continuation
	Rendered   string
	// raws are the page's records, the one of Records[i] at raws[i], and
	// recs the same records decoded.
	raws [][]byte
	recs []Record
	// envelope is the page's body with an empty data list.
	envelope []byte
	// cards are the content[] previews of the first records, the one of
	// Records[i] at cards[i], rendered once for both detail levels.
	cards                []string
	stream, connectionID string
	meta                 *rsclient.ResponseMeta
}

// RenderList renders an RS records list. nextArgs are the caller's arguments
// minus the cursor; the next page call is those plus next_cursor. Its text
// is the one of detail "full"; CompactStep renders a compact step.
func RenderList(body []byte, stream, connectionID string, nextArgs map[string]any) (ListView, error) {
	var page recordPage
	if err := decodeBody(body, "records", "a list", &page, nil); err != nil {
		return ListView{}, err
	}
	if page.Data.items == nil {
		return ListView{}, fmt.Errorf("records response has no data list")
	}
	// Never nil: an empty page lists no records ([]), as the outputSchema says.
	v := ListView{HasMore: page.HasMore, stream: stream, connectionID: connectionID, meta: page.Meta, Records: make([]RecordEntry, 0, len(page.Data.items))}
	if page.NextCursor != nil {
		v.NextCursor = *page.NextCursor
	}
	var b strings.Builder
	// The envelope without its records, for CompactStep: a copy the size
	// of the envelope.
	start := page.Data.start + bytes.IndexByte(body[page.Data.start:], '[')
	v.envelope = slices.Concat(body[:start], []byte("[]"), body[page.Data.end:])
	for i := range page.Data.items {
		it := &page.Data.items[i]
		raw := body[it.start:it.end]
		lead := len(raw) - len(bytes.TrimLeft(raw, ", \t\r\n"))
		raw = raw[lead:]
		// The record's data offsets index raw.
		rec := it.rec
		if rec.Data.end > 0 {
			rec.Data.start, rec.Data.end = rec.Data.start-it.start-lead, rec.Data.end-it.start-lead
		}
		rec.summaries = fieldSummaries{}
		id := recordRef(rec, stream, connectionID).ID()
		if len(v.Records) < RecordsPreviewed {
			v.cards = append(v.cards, recordCard(len(v.Records)+1, id, rec))
			b.WriteString(v.cards[len(v.cards)-1])
		}
		v.Records = append(v.Records, RecordEntry{ID: id, Next: FetchCall(id)})
		v.raws = append(v.raws, raw)
		v.recs = append(v.recs, rec)
	}
	if len(v.Records) > RecordsPreviewed {
		more := len(v.Records) - RecordsPreviewed
		fmt.Fprintf(&b, "(%d more %s on this page: ids in structured records[]; fetch one by id)\n", more, noun(more, "record", "records"))
	}
	if v.NextCursor != "" {
		args := map[string]any{}
		maps.Copy(args, nextArgs)
		args["cursor"] = v.NextCursor
		v.NextPage = &Continuation{Tool: ToolQuery, Arguments: args}
	}
	b.WriteString(v.summary())
	if v.NextPage != nil {
		fmt.Fprintf(&b, "next page: %s\n", v.NextPage.Call())
	}
	v.Rendered = capBytes(b.String())
	return v, nil
}

// summary is the line that counts the page's records, with the RS's
// warnings.
func (v ListView) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "query_records stream=%s: %d %s on this page", v.stream, len(v.Records), noun(len(v.Records), "record", "records"))
	writeTotalAndWarnings(&b, v.meta)
	return b.String()
}

// recordCard is the content[] preview of record rec, the n-th of its page:
// its id and its first FieldsPerRecordShown fields, each bounded.
func recordCard(n int, id string, rec Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d] id=%s\n", n, unseen.Spell(id))
	for j, name := range rec.Data.order {
		if j == FieldsPerRecordShown {
			more := len(rec.Data.fields) + rec.Data.more - j
			fmt.Fprintf(&b, "    (%d more %s; fetch the id or narrow with fields)\n", more, noun(more, "field", "fields"))
			break
		}
		fv := describeField(id, name, rec.Data.fields[name], FieldValueChars, rec.summaries)
		fmt.Fprintf(&b, "    %s: %s\n", name, fv.Line)
	}
	return b.String()
}

// Truncation says what a compact result left out and how to read it: the
// flag, counts, and the exact call that returns everything.
type Truncation struct {
	Truncated bool `json:"truncated"`
	// Shown and Total count the items of the page the result carries in
	// full shape, and the items the page has.
	Shown int `json:"items_shown"`
	Total int `json:"items_total"`
	// ValuesCut counts values replaced by a preview with its own next call.
	ValuesCut int           `json:"values_cut,omitempty"`
	Full      *Continuation `json:"full,omitempty"`
}

// oversizedRecord is a record whose compact form does not fit a step even
// alone: its card and its entry in data say so and name fetch, which reads
// it (with fields to narrow); fields counts its values, all of them cut.
func oversizedRecord(n int, id string, fields int) stepItem {
	call := FetchCall(id)
	card := fmt.Sprintf("[%d] id=%s\n    (%d %s, too large to preview beside others: %s, narrowing with fields)\n", n, unseen.Spell(id), fields, noun(fields, "field", "fields"), call.Call())
	rec := mustMarshal(struct {
		ID        string       `json:"id"`
		Truncated bool         `json:"truncated"`
		Fields    int          `json:"fields"`
		Next      Continuation `json:"next"`
	}{id, true, fields, call})
	return stepItem{card: []byte(card), entry: rec, identity: appendIDEntry(nil, id), cut: fields}
}

// CompactStep builds query_records' compact reply like search's: the
// records from st.Pos, long values as previews, while they fit, in `data`,
// the RS envelope; records[] the ids of those and of the records after
// them; and next. body is the page RenderList read.
func (v ListView) CompactStep(body []byte, st Step, budget int) (string, json.RawMessage, Truncation, error) {
	total := len(v.Records)
	pos := min(st.Pos, total)
	env := v.envelope
	if env == nil {
		env = body
	}
	var envelope objectWriter
	membersCut, err := envelopeMembers(&envelope, env, st.Full)
	if err != nil {
		return "", nil, Truncation{Total: total}, err
	}
	var itemErr error
	// Each record is compacted once, on first use (pageStep.fit): one
	// over alone is shown by id only.
	build := func(i, alone, room int) stepItem {
		e, rec := v.Records[pos+i], v.recs[pos+i]
		var card string
		if pos+i < len(v.cards) {
			card = v.cards[pos+i] // the same record at the same place
		} else {
			card = recordCard(pos+i+1, e.ID, rec)
		}
		// After the card: the compact form reads the summaries it kept.
		compact, _, cut, previewed, err := compactRecord(v.raws[pos+i], rec, v.stream, v.connectionID, FieldValueChars)
		if err != nil && itemErr == nil {
			itemErr = err
		}
		it := stepItem{card: []byte(card), entry: compact, identity: appendJSON(nil, previewedEntry{e.ID, previewed}), cut: cut}
		if rec.Data.more > 0 || it.cost() > alone {
			// Too large for a step even on its own (many long fields):
			// shown by id with its fetch call, so the walk still moves
			// on by one item and the step keeps its budget.
			it = oversizedRecord(pos+i+1, e.ID, len(rec.Data.fields)+rec.Data.more)
			if it.cost() > room {
				// An id so long that even that does not fit.
				it = idOnlyItem(pos+i+1, e.ID, room)
				it.cut = len(rec.Data.fields) + rec.Data.more
			}
		}
		return it
	}
	summary := v.summary()
	fullJSON := st.Full.encoded()
	base := textCost(summary) + WireLen(envelope.buf) + len(`{"data":{,"data":[]},"records":[]}`) +
		StepBase("records", "records[]", st, total) + JSONStringLen(v.NextCursor)
	if v.NextPage != nil {
		// next once the page is shown to its end, and the text line
		// that names it.
		base += WireLen(v.NextPage.encoded()) + textCost("next page: "+v.NextPage.Call())
	}
	p := pageStep{st: st, pos: pos, total: total, id: func(i int) string { return v.Records[pos+i].ID }, what: "records", where: "records[]", nextPage: v.NextPage}
	items, listed := p.fit(budget, base, idEntryCosts(total-pos, p.id), build)
	if itemErr != nil {
		return "", nil, Truncation{Total: total}, itemErr
	}
	text, records, entries, next, tr, fullBytes := p.lay(items, listed, "", summary, membersCut)
	envelope.member("data", records)
	var w objectWriter
	w.member("data", envelope.bytes())
	w.member("records", entries)
	writePageStep(&w, v.HasMore, v.NextCursor, next, st, &tr, fullJSON, fullBytes)
	return text, w.bytes(), tr, nil
}

// FullBytes estimates the serialized reply of the same page at detail
// "full": its text, the RS body verbatim and the records' ids with their
// fetch calls, as encoding/json writes them.
func (v ListView) FullBytes(body []byte) int {
	n := JSONStringLen(v.Rendered) + WireLen(body) + 256
	for _, r := range v.Records {
		n += WireLen(mustMarshal(r)) + 1
	}
	if v.NextPage != nil {
		n += WireLen(v.NextPage.encoded())
	}
	return n
}
