package evidence

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// Document is fetch's structured output: {id, title, text, url, metadata}.
type Document struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	URL      string         `json:"url,omitempty"`
	Metadata map[string]any `json:"metadata"`
	// Detail is the detail level the document was rendered at.
	Detail string `json:"detail,omitempty"`
	// Truncated says a field of the structured text was cut or left out
	// (binary, blob); metadata.fields names each with its continuation.
	Truncated bool `json:"truncated"`
	// Full is the same fetch with detail "full", when something was cut.
	Full *Continuation `json:"full,omitempty"`
	// Rendered is the bounded content[] text.
	Rendered string `json:"-"`
	// textBytes caches the encoded size of Text once measured.
	textBytes int
}

// documentOverhead is what a fetch result adds around the document's
// strings and metadata: keys, the id, title and url members, the envelope.
const documentOverhead = 512

// RenderDocumentWithin renders one RS record as a fetch document. ref is
// the record the caller asked for (its connection fills in when the RS
// names one). The structured text cuts each field at StructuredTextChars
// and, with a budget above 0, the per-field cut shrinks until the whole
// result (content[] text, structured text and metadata) fits budget bytes,
// each cut field keeping its descriptor and read_record_field continuation
// in metadata.fields.
func RenderDocumentWithin(body []byte, ref handles.RecordRef, providerBase string, roles Roles, budget int) (Document, error) {
	rec, err := decodeDocument(body)
	if err != nil {
		return Document{}, err
	}
	chars := StructuredTextChars
	// Every pass reads each field's one summary (walked at the first
	// pass's limit, the largest).
	doc := renderDocument(rec, ref, providerBase, roles, chars)
	// Each pass shrinks the per-field cut in proportion to the excess; at
	// most 12 passes, and never below FieldValueChars.
	for pass := 0; pass < 12 && budget > 0; pass++ {
		doc.textBytes = JSONStringLen(doc.Text)
		size := JSONStringLen(doc.Rendered) + DocumentStructuredBytes(doc)
		if size <= budget || chars <= FieldValueChars {
			break
		}
		chars = max(FieldValueChars, chars*budget/size*9/10)
		doc = renderDocument(rec, ref, providerBase, roles, chars)
	}
	return doc, nil
}

// RenderDocumentFull renders one RS record for detail "full": the id,
// title, url, metadata and content[] preview that compact shows, and a
// text that points at data, where the caller puts the RS record verbatim,
// so no value is paid for twice. Nothing is cut: metadata names no cut
// field and truncated is false.
func RenderDocumentFull(body []byte, ref handles.RecordRef, providerBase string, roles Roles) (Document, error) {
	rec, err := decodeDocument(body)
	if err != nil {
		return Document{}, err
	}
	doc := renderDocument(rec, ref, providerBase, roles, FieldValueChars)
	doc.Text = fmt.Sprintf("the whole record is in data: the RS record verbatim, %d bytes, %d fields", len(body), len(rec.Data.fields)+rec.Data.more)
	delete(doc.Metadata, "fields")
	doc.Truncated = false
	return doc, nil
}

// decodeDocument decodes the RS record body fetch renders, refusing one
// that names no record.
func decodeDocument(body []byte) (Record, error) {
	if err := requireObject(body, "record"); err != nil {
		return Record{}, err
	}
	rec, err := DecodeRecord(body)
	if err == nil && rec.Id == "" && len(rec.Data.fields) == 0 {
		err = fmt.Errorf("record response names no record: it has neither id nor data")
	}
	return rec, err
}

// DocumentStructuredBytes estimates, from above, doc encoded as
// structuredContent: its strings as JSON encodes them, its metadata, and
// documentOverhead for keys, flags and the full-detail call.
func DocumentStructuredBytes(doc Document) int {
	meta := WireLen(mustMarshal(doc.Metadata))
	text := doc.textBytes
	if text == 0 {
		text = JSONStringLen(doc.Text)
	}
	n := documentOverhead + text + meta +
		JSONStringLen(doc.Title) + JSONStringLen(doc.URL) + JSONStringLen(doc.ID)
	if doc.Full != nil {
		n += JSONStringLen(doc.ID) // the full call names the id again
	}
	return n
}

// renderDocument renders rec with each field's structured text cut at
// fieldChars; the record keeps the summaries of its fields across calls.
func renderDocument(rec Record, ref handles.RecordRef, providerBase string, roles Roles, fieldChars int) Document {
	ref.ConnectionID = cmp.Or(rec.ConnectionId, ref.ConnectionID)
	ref.RecordID = cmp.Or(rec.Id, ref.RecordID)
	ref.Stream = cmp.Or(rec.Stream, ref.Stream)
	id := ref.ID()
	doc := Document{ID: id, Title: neutralTitle(ref), URL: recordURL(providerBase, "", ref)}
	if tf := roles.titleField(); tf != "" {
		if s, ok := titleText(rec.Data.fields[tf]); ok && strings.TrimSpace(s) != "" {
			doc.Title = Clip(oneLine(s), FieldValueChars)
		}
	}

	names := orderByRole(rec.Data.order, roles)
	fields := map[string]any{}
	var text, shown strings.Builder
	fmt.Fprintf(&shown, "id=%s title=%q\n", unseen.Spell(id), doc.Title)
	cutFields := 0
	for i, name := range names {
		raw := rec.Data.fields[name]
		whole := describeField(id, name, raw, fieldChars, rec.summaries)
		// Written piece by piece: the line can be a whole long text, which
		// fmt would copy through its own buffer first.
		text.WriteString(name)
		text.WriteString(": ")
		text.WriteString(whole.Line)
		text.WriteByte('\n')
		if !whole.Complete || whole.Kind == "blob" || whole.Kind == "binary" {
			fields[name] = whole
		}
		if i < FieldsPerRecordShown {
			brief := whole.within(id, raw, FetchTextChars/4, rec.summaries)
			fmt.Fprintf(&shown, "%s: %s\n", name, brief.Line)
			if !brief.Complete {
				cutFields++
			}
		}
	}
	if rec.Data.more > 0 {
		// Past MaxRecordFields: counted, never rendered.
		line := fmt.Sprintf("(%d more %s not rendered; narrow with fetch {\"id\":%q,\"fields\":[...]})\n", rec.Data.more, noun(rec.Data.more, "field", "fields"), id)
		text.WriteString(line)
		shown.WriteString(line)
	}
	if len(names) > FieldsPerRecordShown {
		fmt.Fprintf(&shown, "(%d more %s in structured text; narrow with fetch {\"id\":%q,\"fields\":[...]})\n",
			len(names)-FieldsPerRecordShown, noun(len(names)-FieldsPerRecordShown, "field", "fields"), id)
	}
	if cutFields == 0 && len(names) <= FieldsPerRecordShown {
		shown.WriteString("(whole record shown)\n")
	}
	doc.Text = text.String()
	doc.Metadata = map[string]any{
		"stream":    ref.Stream,
		"record_id": ref.RecordID,
	}
	for _, m := range [...]struct{ key, val string }{
		{"connection_id", ref.ConnectionID}, {"connector_key", rec.ConnectorKey}, {"emitted_at", rec.EmittedAt},
	} {
		if m.val != "" {
			doc.Metadata[m.key] = m.val
		}
	}
	if rec.RecordJsonBytes > 0 {
		doc.Metadata["record_json_bytes"] = rec.RecordJsonBytes
	}
	if len(fields) > 0 {
		doc.Metadata["fields"] = fields
		doc.Truncated = true
	}
	if rec.Data.more > 0 {
		doc.Metadata["fields_not_rendered"] = rec.Data.more
		doc.Truncated = true
	}
	doc.Rendered = capBytes(shown.String())
	return doc
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
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// titleText is the text of a title field's value raw, as json.Unmarshal
// into a string reads it (ok false for a value that is not a string); a
// value over HugeJSONBytes is read only as far as its first
// HugeJSONBytes/4 characters, which a title clipped to FieldValueChars
// after folding white space needs.
func titleText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if len(raw) <= HugeJSONBytes {
		s, err := decodeString(raw)
		return s, err == nil
	}
	return summarizeString(raw, HugeJSONBytes/4).prefix, true
}
