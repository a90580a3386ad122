package evidence

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ListPage is an RS record list envelope.
type ListPage struct {
	Data       []json.RawMessage `json:"data"`
	HasMore    bool              `json:"has_more"`
	NextCursor *string           `json:"next_cursor"`
	Meta       PageMeta          `json:"meta"`
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
	// page keeps the split page for CompactStructured, so the body is
	// validated and its records compacted once per call.
	page *listCache
}

// listCache is a records page as RenderList split it: the body it came
// from, its members other than data and its records, slices of the body,
// and the compact form of each record once built. Its size is bounded by the
// page's.
type listCache struct {
	body                 []byte
	stream, connectionID string
	members              []member
	records              [][]byte
	compact              []compactRecord
}

type member struct {
	key string
	val []byte
}

type compactRecord struct {
	raw json.RawMessage
	cut int
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
	if !validJSON(body) {
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
			return splitElements(val, func(rec []byte) error {
				page.Data = append(page.Data, rec)
				c.records = append(c.records, rec)
				return nil
			})
		case "has_more":
			return boolInto(&page.HasMore, val)
		case "next_cursor":
			if val[0] == 'n' {
				return nil
			}
			s, err := decodeString(val)
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
// minus the cursor; the next page call is those plus next_cursor.
func RenderList(body []byte, stream, connectionID string, nextArgs map[string]any) (ListView, error) {
	if err := requireObject(body, "records"); err != nil {
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
	v := ListView{HasMore: page.HasMore, page: cache, Records: make([]RecordEntry, 0, len(page.Data))}
	if page.NextCursor != nil {
		v.NextCursor = *page.NextCursor
	}
	var b strings.Builder
	for i, raw := range page.Data {
		rec, err := decodeValidRecord(raw) // the page decoded: raw is valid JSON
		if err != nil {
			continue
		}
		id := recordRef(rec, stream, connectionID).ID()
		v.Records = append(v.Records, RecordEntry{ID: id, Next: FetchCall(id)})
		if i < RecordsPreviewed {
			fmt.Fprintf(&b, "[%d] id=%s\n", i+1, id)
			for j, name := range rec.fieldNames() {
				if j == FieldsPerRecordShown {
					fmt.Fprintf(&b, "    (%d more fields; fetch the id or narrow with fields)\n", len(rec.Data)-j)
					break
				}
				fv := DescribeField(id, name, rec.Data[name], FieldValueChars)
				fmt.Fprintf(&b, "    %s: %s\n", name, fv.Line)
			}
		}
	}
	if len(page.Data) > RecordsPreviewed {
		fmt.Fprintf(&b, "(%d more records on this page: ids in structured records[]; fetch one by id)\n", len(page.Data)-RecordsPreviewed)
	}
	fmt.Fprintf(&b, "query_records stream=%s: %d records on this page", stream, len(page.Data))
	page.Meta.writeTotalAndWarnings(&b)
	if v.NextCursor != "" {
		args := map[string]any{}
		for k, val := range nextArgs {
			args[k] = val
		}
		args["cursor"] = v.NextCursor
		c := Continuation{Tool: ToolQuery, Arguments: args}
		v.NextPage = &c
		fmt.Fprintf(&b, "next page: %s\n", c.Call())
	}
	v.Rendered = capBytes(b.String())
	return v, nil
}

// compactList is query_records' compact structuredContent: the canonical
// keys of the full form, `data` holding the RS envelope with as many
// compact records as fit, and the truncation report.
type compactList struct {
	Data       json.RawMessage `json:"data"`
	Records    []recordID      `json:"records"`
	HasMore    bool            `json:"has_more"`
	NextCursor string          `json:"next_cursor,omitempty"`
	Detail     string          `json:"detail"`
	Truncation
}

type recordID struct {
	ID string `json:"id"`
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

// CompactStructured builds the compact structuredContent of a records page
// within budget bytes. full is the same call with detail "full".
func (v ListView) CompactStructured(body []byte, stream, connectionID string, budget int, full Continuation) (json.RawMessage, Truncation, error) {
	out := compactList{HasMore: v.HasMore, NextCursor: v.NextCursor, Detail: DetailCompact}
	out.Total = len(v.Records)
	// Ids first: every record of the page stays addressable while the
	// ids take at most a third of the budget. The loop is bounded by the
	// page length.
	idBytes := 0
	for _, r := range v.Records {
		idBytes += JSONStringLen(r.ID) + len(`{"id":},`)
		if idBytes > budget/3 {
			break
		}
		out.Records = append(out.Records, recordID{ID: r.ID})
	}
	if out.Records == nil {
		out.Records = []recordID{}
	}
	fixed := len(mustMarshal(out)) + 400 // the truncation members
	cache := v.page
	if !cache.sameBody(body, stream, connectionID) {
		cache = nil
	}
	page, err := compactListWith(body, stream, connectionID, budget-fixed, full, cache)
	if err != nil {
		return nil, Truncation{}, err
	}
	out.Data = page.Envelope
	out.Shown = page.Shown
	out.ValuesCut = page.CutValues
	out.Truncated = page.Shown < out.Total || len(out.Records) < out.Total || page.CutValues > 0
	if out.Truncated {
		out.Full = &full
	}
	return mustMarshal(out), out.Truncation, nil
}

// TruncationLine is the content[] sentence that reports a compact cut.
func (t Truncation) TruncationLine(what string) string {
	if !t.Truncated || t.Full == nil {
		return ""
	}
	return fmt.Sprintf("structured output is compact: %d of %d %s in full shape, %d values previewed; everything: %s\n",
		t.Shown, t.Total, what, t.ValuesCut, t.Full.Call())
}
