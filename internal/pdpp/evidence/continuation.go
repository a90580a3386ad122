package evidence

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
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
	b := make([]byte, 0, len(c.Tool)+1+32*len(c.Arguments)+2)
	b = append(append(b, c.Tool...), ' ')
	start := len(b)
	b = appendArgs(b, c.Arguments, compareArgs, true)
	// An id or cursor may hold a character a person cannot see: the call
	// spells it out (unseen.Spell; a text shows an id spelled too), the
	// form the tools accept back as it was, where a marker would not be:
	// every member is kept, never shown as markers (unseen.ShowJSON).
	if args := b[start:]; unseen.HasJSON(args) || unseen.HasOpenJSON(args) {
		spelled, _ := unseen.ShowJSON(args, func(string) bool { return true })
		b = append(b[:start], spelled...)
	}
	return string(b)
}

// argRank places the argument names that lead a call: id, stream,
// field_path, q, cursor, in that order, before any other name (5).
func argRank(name string) int {
	switch name {
	case "id":
		return 0
	case "stream":
		return 1
	case "field_path":
		return 2
	case "q":
		return 3
	case "cursor":
		return 4
	}
	return 5
}

// compareArgs orders argument names by argRank, then by name.
func compareArgs(a, b string) int {
	if d := argRank(a) - argRank(b); d != 0 {
		return d
	}
	return strings.Compare(a, b)
}

// appendArgs appends a call's arguments m as one JSON object, names in
// cmp's order written by appendName, each value as appendJSON writes it.
// A call has a handful of arguments, sorted in a fixed-size array (a
// longer list grows it).
func appendArgs(b []byte, m map[string]any, cmp func(a, b string) int, html bool) []byte {
	var room [8]string
	keys := room[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSON(append(appendName(b, k, html), ':'), m[k])
	}
	return append(b, '}')
}

// appendName appends the member name k as appendString writes it or,
// with html, as encoding/json writes it (HTML escaped).
func appendName(b []byte, k string, html bool) []byte {
	switch {
	case plainJSONString(k): // written as itself, either way
		return append(append(append(b, '"'), k...), '"')
	case html:
		kb, _ := json.Marshal(k)
		return append(b, kb...)
	}
	return appendString(b, k)
}

// encoded is c as MarshalNoEscape writes it.
func (c *Continuation) encoded() []byte { return c.appendTo(make([]byte, 0, 128)) }

// plainJSONString reports whether s is written as itself between quotes
// by encoding/json with or without HTML escaping: printable ASCII other
// than the quote, the backslash and the three HTML characters.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// MarshalNoEscape encodes v as compact JSON without HTML escaping, so
// `<mark>` and `&` stay readable in model-visible text.
func MarshalNoEscape(v any) ([]byte, error) {
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
	_, rest, open := strings.Cut(s, markOpen)
	mark, _, closed := strings.Cut(rest, markClose)
	if !open || !closed {
		return ""
	}
	return strings.TrimSpace(mark)
}
