package evidence

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Tool names a continuation may point at. They are the catalog names.
const (
	ToolFetch     = "fetch"
	ToolReadField = "read_record_field"
	ToolSearch    = "search"
	ToolQuery     = "query_records"
	ToolSchema    = "schema"
)

// Continuation is a model-callable next step: a tool and its exact arguments.
type Continuation struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// Call renders the continuation as `tool {"arg":...}` with arguments in a fixed
// order (id first, then field_path, then the rest sorted), so text is stable.
func (c Continuation) Call() string {
	return c.Tool + " " + orderedJSON(c.Arguments)
}

var argOrder = map[string]int{"id": 0, "stream": 1, "field_path": 2, "q": 3, "cursor": 4}

func orderedJSON(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		oi, iok := argOrder[keys[i]]
		oj, jok := argOrder[keys[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok:
			return true
		case jok:
			return false
		}
		return keys[i] < keys[j]
	})
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshalNoEscape(m[k])
		if err != nil {
			vb = []byte("null")
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.String()
}

// marshalNoEscape encodes v as JSON without HTML escaping, so `<mark>` and `&`
// stay readable in model-visible text.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// FetchCall is the continuation that fetches a whole record by id.
func FetchCall(id string) Continuation {
	return Continuation{Tool: ToolFetch, Arguments: map[string]any{"id": id}}
}

// fetchFieldFullCall is the continuation that fetches one field of a record
// whole, at detail "full" (for a large JSON value).
func fetchFieldFullCall(id, field string) Continuation {
	return Continuation{Tool: ToolFetch, Arguments: map[string]any{"id": id, "fields": []string{field}, "detail": DetailFull}}
}

// ReadFieldCall is the continuation that reads one bounded window of a field.
// Zero offset and limit are left out; q selects the first match window.
func ReadFieldCall(id, field string, offset, limit int, q string) Continuation {
	args := map[string]any{"id": id, "field_path": field}
	if offset > 0 {
		args["offset_chars"] = offset
	}
	if limit > 0 {
		args["limit_chars"] = limit
	}
	if q != "" {
		args["q"] = q
	}
	return Continuation{Tool: ToolReadField, Arguments: args}
}

// firstMark returns the text of the first <mark>…</mark> in s, if any.
func firstMark(s string) string {
	i := strings.Index(s, markOpen)
	if i < 0 {
		return ""
	}
	rest := s[i+len(markOpen):]
	j := strings.Index(rest, markClose)
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(rest[:j])
}
