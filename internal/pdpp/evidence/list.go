package evidence

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
)

// ListPage is an RS record list envelope.
type ListPage struct {
	Data       []json.RawMessage      `json:"data"`
	HasMore    bool                   `json:"has_more"`
	NextCursor *string                `json:"next_cursor"`
	Meta       *rsclient.ResponseMeta `json:"meta"`
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
	// raws are the page's records, the one of Records[i] at raws[i].
	raws [][]byte
	// cards are the content[] previews of the first records, the one of
	// Records[i] at cards[i], rendered once for both detail levels.
	cards []string
	// page keeps the split page for CompactStep, so the body is validated
	// once per call.
	page                 *listCache
	stream, connectionID string
	meta                 *rsclient.ResponseMeta
}

// listCache is a records page as RenderList split it: the body it came
// from and its members other than data, slices of the body. Its size is
// bounded by the page's.
type listCache struct {
	body                 []byte
	stream, connectionID string
	members              []member
}

type member struct {
	key string
	val []byte
}

// sameBody reports whether c was split from exactly body.
func (c *listCache) sameBody(body []byte, stream, connectionID string) bool {
	return c != nil && len(body) > 0 && len(c.body) == len(body) && &c.body[0] == &body[0] &&
		c.stream == stream && c.connectionID == connectionID
}

// listPageKeys are the members of ListPage that json.Unmarshal fills.
var listPageKeys = []string{"data", "has_more", "next_cursor", "meta"}

// splitListPage reads a valid records page member by member, as
// json.Unmarshal into ListPage would. It returns false (and the caller uses
// encoding/json, for its behaviour and errors) on anything unusual: invalid
// JSON, a key that differs from a known one only by case, a repeated known
// key (splitKnown), a member of an unexpected type.
func splitListPage(body []byte, c *listCache) (ListPage, bool) {
	var page ListPage
	if !jsonwalk.Valid(body) {
		return page, false
	}
	err := splitKnown(body, listPageKeys, func(key string, val []byte) error {
		if key != "data" {
			c.members = append(c.members, member{key, val})
		}
		switch key {
		case "data":
			if val[0] == 'n' {
				return nil
			}
			page.Data = []json.RawMessage{}
			return jsonwalk.Elements(val, func(rec []byte) error {
				page.Data = append(page.Data, rec)
				return nil
			})
		case "has_more":
			return boolInto(&page.HasMore, val)
		case "next_cursor":
			if val[0] == 'n' {
				return nil
			}
			s, err := jsonwalk.DecodeString(val)
			page.NextCursor = &s
			return err
		case "meta":
			return json.Unmarshal(val, &page.Meta)
		}
		return nil
	})
	return page, err == nil
}

// RenderList renders an RS records list. nextArgs are the caller's arguments
// minus the cursor; the next page call is those plus next_cursor. Its text
// is the one of detail "full"; CompactStep renders a compact step.
func RenderList(body []byte, stream, connectionID string, nextArgs map[string]any) (ListView, error) {
	if err := requireObject(body, "records"); err != nil {
		return ListView{}, err
	}
	if err := checkPageItems(body, "records"); err != nil {
		return ListView{}, err
	}
	cache := &listCache{body: body, stream: stream, connectionID: connectionID}
	page, split := splitListPage(body, cache)
	if !split {
		cache = nil
		page = ListPage{}
		if err := json.Unmarshal(body, &page); err != nil {
			return ListView{}, fmt.Errorf("records response is not a list: %w", err)
		}
	}
	if page.Data == nil {
		return ListView{}, fmt.Errorf("records response has no data list")
	}
	// Never nil: an empty page lists no records ([]), as the outputSchema says.
	v := ListView{HasMore: page.HasMore, page: cache, stream: stream, connectionID: connectionID, meta: page.Meta, Records: make([]RecordEntry, 0, len(page.Data))}
	if page.NextCursor != nil {
		v.NextCursor = *page.NextCursor
	}
	var b strings.Builder
	for i, raw := range page.Data {
		if !isObject(raw) {
			return ListView{}, NotAnObject("records page", i, rawKind(raw))
		}
		rec, err := decodeValidRecord(raw) // the page decoded: raw is valid JSON
		if err != nil {
			// Skipped, the record would leave the page without a word.
			return ListView{}, fmt.Errorf("item %d of the records page is not a record: %w", i+1, err)
		}
		id := recordRef(rec, stream, connectionID).ID()
		if len(v.Records) < RecordsPreviewed {
			v.cards = append(v.cards, recordCard(len(v.Records)+1, id, rec))
			b.WriteString(v.cards[len(v.cards)-1])
		}
		v.Records = append(v.Records, RecordEntry{ID: id, Next: FetchCall(id)})
		v.raws = append(v.raws, raw)
	}
	if len(v.Records) > RecordsPreviewed {
		more := len(v.Records) - RecordsPreviewed
		fmt.Fprintf(&b, "(%d more %s on this page: ids in structured records[]; fetch one by id)\n", more, noun(more, "record", "records"))
	}
	if v.NextCursor != "" {
		args := map[string]any{}
		for k, val := range nextArgs {
			args[k] = val
		}
		args["cursor"] = v.NextCursor
		c := Continuation{Tool: ToolQuery, Arguments: args}
		v.NextPage = &c
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
	fmt.Fprintf(&b, "[%d] id=%s\n", n, TextID(id))
	for j, name := range rec.fieldNames() {
		if j == FieldsPerRecordShown {
			more := len(rec.Data) + rec.MoreFields - j
			fmt.Fprintf(&b, "    (%d more %s; fetch the id or narrow with fields)\n", more, noun(more, "field", "fields"))
			break
		}
		fv := DescribeField(id, name, rec.Data[name], FieldValueChars)
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

// listItem is one record encoded for a compact step: its card in
// content[] text, its compact form in data and its entry in records[].
type listItem struct {
	card, record, id []byte
	cut              int
}

// itemCost is what one record shown in a step adds to the reply: its card
// in content[], its compact form in data and its id in records[].
func itemCost(it listItem) int {
	return textCost(string(it.card)) + WireLen(it.record) + WireLen(it.id) + 2
}

// oversizedRecord is a record whose compact form does not fit a step even
// alone: its card and its entry in data say so and name fetch, which reads
// it (with fields to narrow); fields counts its values, all of them cut.
func oversizedRecord(n int, id string, fields int) listItem {
	call := FetchCall(id)
	card := fmt.Sprintf("[%d] id=%s\n    (%d %s, too large to preview beside others: %s, narrowing with fields)\n", n, TextID(id), fields, noun(fields, "field", "fields"), call.Call())
	rec := mustMarshal(struct {
		ID        string       `json:"id"`
		Truncated bool         `json:"truncated"`
		Fields    int          `json:"fields"`
		Next      Continuation `json:"next"`
	}{id, true, fields, call})
	return listItem{card: []byte(card), record: rec, id: appendIDEntry(nil, id), cut: fields}
}

// CompactStep builds query_records' compact reply, content[] text and
// structuredContent together within budget bytes (the result less its
// envelope), as one step along the page (see Step): the records from
// st.Pos, compact (long values as previews), while they fit, with `data`
// the RS envelope holding them; records[] the ids of those and of the
// records after them; and next. body is the page RenderList read.
func (v ListView) CompactStep(body []byte, st Step, budget int) (string, json.RawMessage, Truncation, error) {
	total := len(v.Records)
	pos := min(st.Pos, total)
	tr := Truncation{Total: total}
	cache := v.page
	if !cache.sameBody(body, v.stream, v.connectionID) {
		cache = nil
	}
	members, membersCut, err := envelopeMembers(body, cache, st.Full)
	if err != nil {
		return "", nil, tr, err
	}
	// Each record is compacted once, on first use; the loops below are
	// bounded by the page length.
	items := make([]listItem, total-pos)
	built := make([]bool, total-pos)
	var itemErr error
	// alone is the room one record may take in a step, set once the
	// step's fixed part is known: a record over it is shown by id only;
	// room is all the step has for its items (the first one shown may
	// take it all).
	alone, room := 0, 0
	item := func(i int) listItem {
		if !built[i] {
			e := v.Records[pos+i]
			rec, _ := decodeValidRecord(v.raws[pos+i])
			compact, _, cut, err := CompactRecord(v.raws[pos+i], v.stream, v.connectionID, FieldValueChars)
			if err != nil && itemErr == nil {
				itemErr = err
			}
			var card string
			if pos+i < len(v.cards) {
				card = v.cards[pos+i] // the same record at the same place
			} else {
				card = recordCard(pos+i+1, e.ID, rec)
			}
			items[i] = listItem{card: []byte(card), record: compact, id: appendIDEntry(nil, e.ID), cut: cut}
			if rec.MoreFields > 0 || (alone > 0 && itemCost(items[i]) > alone) {
				// Too large for a step even on its own (many long fields):
				// shown by id with its fetch call, so the walk still moves
				// on by one item and the step keeps its budget.
				items[i] = oversizedRecord(pos+i+1, e.ID, len(rec.Data)+rec.MoreFields)
				if itemCost(items[i]) > room {
					// An id so long that even that does not fit.
					card, entry, id := idOnlyItem(pos+i+1, e.ID, room)
					items[i] = listItem{card: card, record: entry, id: id, cut: len(rec.Data) + rec.MoreFields}
				}
			}
			built[i] = true
		}
		return items[i]
	}
	var envelope objectWriter
	for _, m := range members {
		envelope.member(m.key, m.val)
	}
	summary := v.summary()
	fullJSON := st.Full.encoded()
	var nextPage []byte
	if v.NextPage != nil {
		nextPage = v.NextPage.encoded()
	}
	base := func() int {
		n := textCost(summary) + WireLen(envelope.buf.Bytes()) + len(`{"data":{,"data":[]},"records":[]}`)
		var resume Continuation
		if st.Resume != nil && total-pos > 1 {
			resume, _ = st.Resume(pos + 1)
		}
		n += textCost(stepLines("records", "records[]", st, 1, total, total-pos, &resume, 1, fullBytesWidth)) + resumeSlack
		n += WireLen(resume.encoded()) + WireLen(fullJSON) + JSONStringLen(v.NextCursor) + 320
		if v.NextPage != nil {
			// next once the page is shown to its end, and the text line
			// that names it.
			n += WireLen(nextPage) + textCost("next page: "+v.NextPage.Call())
		}
		return n
	}()
	ids := idEntryCosts(total-pos, func(i int) string { return v.Records[pos+i].ID })
	alone, room = max(1, budget-base-budget/idsShare), budget-base
	k, listed := fitItems(budget, base, ids, func(i int) int { return itemCost(item(i)) })
	if itemErr != nil {
		return "", nil, tr, itemErr
	}
	tr.Shown = k
	tr.ValuesCut = membersCut
	for i := 0; i < k; i++ {
		tr.ValuesCut += items[i].cut
	}
	next := st.next(pos+k, total, v.NextPage)
	tr.Truncated = pos+k < total || tr.ValuesCut > 0 || st.Restarted

	var text strings.Builder
	records := make([][]byte, 0, k)
	entries := make([][]byte, 0, k+listed)
	for i := 0; i < k; i++ {
		text.Write(items[i].card)
		records = append(records, items[i].record)
		entries = append(entries, items[i].id)
	}
	for i := k; i < k+listed; i++ {
		entries = append(entries, appendIDEntry(nil, v.Records[pos+i].ID))
	}
	text.WriteString(summary)
	fullBytes := 0
	if tr.Truncated {
		fullBytes = st.fullBytes()
	}
	text.WriteString(stepLines("records", "records[]", st, k, total, listed, next, tr.ValuesCut, fullBytes))
	if pos+k == total && v.NextPage != nil {
		fmt.Fprintf(&text, "next page: %s\n", v.NextPage.Call())
	}

	envelope.member("data", joinArray(records))
	var w objectWriter
	w.member("data", envelope.bytes())
	w.member("records", joinArray(entries))
	writePageStep(&w, v.HasMore, v.NextCursor, next, st, &tr, fullJSON, fullBytes)
	return text.String(), w.bytes(), tr, nil
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
