package evidence

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/handles"
)

// Document is fetch's structured output: {id, title, text, url, metadata}.
type Document struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	URL      string         `json:"url,omitempty"`
	Metadata map[string]any `json:"metadata"`
	// Rendered is the bounded content[] text.
	Rendered string `json:"-"`
}

// RenderDocument renders one RS record as a fetch document. ref is the record
// the caller asked for (its connection fills in when the RS names one).
func RenderDocument(body []byte, ref handles.RecordRef, providerBase string, roles Roles) (Document, error) {
	rec, err := DecodeRecord(body)
	if err != nil {
		return Document{}, err
	}
	if rec.ConnectionID != "" {
		ref.ConnectionID = rec.ConnectionID
	}
	if rec.ID != "" {
		ref.RecordID = rec.ID
	}
	if rec.Stream != "" {
		ref.Stream = rec.Stream
	}
	id := ref.ID()
	doc := Document{ID: id, Title: neutralTitle(ref), URL: recordURL(providerBase, "", ref)}
	if tf := roles.titleField(); tf != "" {
		var s string
		if raw, ok := rec.Data[tf]; ok && json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
			doc.Title = Clip(oneLine(s), FieldValueChars)
		}
	}

	names := orderByRole(rec.fieldNames(), roles)
	fields := map[string]any{}
	var text, shown strings.Builder
	fmt.Fprintf(&shown, "id=%s title=%q\n", id, doc.Title)
	cutFields := 0
	for i, name := range names {
		raw := rec.Data[name]
		full := DescribeField(id, name, raw, StructuredTextChars)
		fmt.Fprintf(&text, "%s: %s\n", name, full.Line)
		if !full.Complete || full.Kind == "blob" || full.Kind == "binary" {
			fields[name] = full
		}
		if i < FieldsPerRecordShown {
			brief := full.Within(id, raw, FetchTextChars/4)
			fmt.Fprintf(&shown, "%s: %s\n", name, brief.Line)
			if !brief.Complete {
				cutFields++
			}
		}
	}
	if len(names) > FieldsPerRecordShown {
		fmt.Fprintf(&shown, "(%d more fields in structured text; narrow with fetch {\"id\":%q,\"fields\":[...]})\n",
			len(names)-FieldsPerRecordShown, id)
	}
	if cutFields == 0 && len(names) <= FieldsPerRecordShown {
		shown.WriteString("(whole record shown)\n")
	}
	doc.Text = text.String()
	doc.Metadata = map[string]any{
		"stream":    ref.Stream,
		"record_id": ref.RecordID,
	}
	if ref.ConnectionID != "" {
		doc.Metadata["connection_id"] = ref.ConnectionID
	}
	if rec.ConnectorKey != "" {
		doc.Metadata["connector_key"] = rec.ConnectorKey
	}
	if rec.EmittedAt != "" {
		doc.Metadata["emitted_at"] = rec.EmittedAt
	}
	if rec.RecordJSONBytes > 0 {
		doc.Metadata["record_json_bytes"] = rec.RecordJSONBytes
	}
	if len(fields) > 0 {
		doc.Metadata["fields"] = fields
	}
	doc.Rendered = capBytes(shown.String())
	return doc, nil
}

// orderByRole puts declared title and body fields first; other fields keep the
// RS order. Undeclared fields are never promoted.
func orderByRole(names []string, roles Roles) []string {
	if len(roles) == 0 {
		return names
	}
	rank := func(n string) int {
		switch {
		case titleRoles[roles[n]]:
			return 0
		case roles[n] == "secondary":
			return 1
		}
		return 2
	}
	out := append([]string(nil), names...)
	// stable insertion sort on rank
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && rank(out[j]) < rank(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
