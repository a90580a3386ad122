package evidence

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/handles"
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
}

// RenderList renders an RS records list. nextArgs are the caller's arguments
// minus the cursor; the next page call is those plus next_cursor.
func RenderList(body []byte, stream, connectionID string, nextArgs map[string]any) (ListView, error) {
	var page ListPage
	if err := json.Unmarshal(body, &page); err != nil {
		return ListView{}, fmt.Errorf("records response is not a list: %w", err)
	}
	v := ListView{HasMore: page.HasMore}
	if page.NextCursor != nil {
		v.NextCursor = *page.NextCursor
	}
	var b strings.Builder
	for i, raw := range page.Data {
		rec, err := DecodeRecord(raw)
		if err != nil {
			continue
		}
		ref := handles.RecordRef{ConnectionID: rec.ConnectionID, Stream: rec.Stream, RecordID: rec.ID}
		if ref.Stream == "" {
			ref.Stream = stream
		}
		if ref.ConnectionID == "" {
			ref.ConnectionID = connectionID
		}
		id := ref.ID()
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
