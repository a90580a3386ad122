package pdpp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// exactValues are the text fields of the scripted record of
// TestValuesAreShownExactly: each carries what a careless rendering folds,
// trims or drops.
var exactValues = map[string]string{
	"text":  "Line one.\r\n\r\nLine two ends with spaces.   \n\tindented tail",
	"crlf":  "Line one.\r\nLine two.",
	"blank": "Para one.\n\n\nPara two.",
	"edges": "  starts and ends with spaces  ",
	"tabs":  "\tindented tail\t",
	"multi": "naïve café — 東京 🙂",
	"space": " ",
	"empty": "",
	"quote": `"quoted" start`,
	"html":  `<p class="x">Tom & Jerry</p>`,
	"plain": "Plain words.",
}

// exactRS answers the record, a one-record page of it, and whole field
// windows of its text fields.
func exactRS() http.Handler {
	record := map[string]any{"object": "record", "id": "w1", "stream": "notes", "connection_id": "cin_a", "data": exactValues}
	rec, _ := json.Marshal(record)
	page, _ := json.Marshal(map[string]any{"object": "list", "data": []any{record}, "has_more": false})
	return jsonRS(func(path string) string {
		switch {
		case strings.HasSuffix(path, "/field-window"):
			// The handler sees only the path: every window is of "text".
			v := exactValues["text"]
			n := utf8.RuneCountInString(v)
			b, _ := json.Marshal(map[string]any{"object": "field_window", "record_id": "w1", "connection_id": "cin_a", "stream": "notes",
				"field": map[string]any{"path": "text", "type": "string"},
				"window": map[string]any{"text": v, "start_chars": 0, "end_chars": n, "total_chars": n, "limit_chars": 4096,
					"complete": true, "has_more": false, "next_offset_chars": nil, "previous_offset_chars": nil}})
			return string(b)
		case strings.HasSuffix(path, "/records/w1"):
			return string(rec)
		}
		return string(page)
	})
}

// fieldLines reads `name: value` lines of a text block back into values:
// a JSON string literal decoded, anything else as it is.
func fieldLines(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		name, v, ok := strings.Cut(line, ": ")
		if !ok {
			if n, found := strings.CutSuffix(line, ":"); found {
				name, v, ok = n, "", true
			}
		}
		if _, known := exactValues[strings.TrimSpace(name)]; !ok || !known {
			continue
		}
		if strings.HasPrefix(v, `"`) {
			var s string
			if err := json.Unmarshal([]byte(v), &s); err != nil {
				t.Errorf("line %q: quoted value is not a JSON string: %v", line, err)
				continue
			}
			v = s
		}
		out[strings.TrimSpace(name)] = v
	}
	return out
}

func TestValuesAreShownExactly(t *testing.T) {
	url, log := serveAdapterHTTP(t, exactRS(), 0)
	ctx := context.Background()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "exact-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(t *testing.T, tool string, args map[string]any) (string, map[string]any) {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", tool, err, res)
		}
		var text []string
		for _, ct := range res.Content {
			if tc, ok := mcp.AsTextContent(ct); ok {
				text = append(text, tc.Text)
			}
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var sc map[string]any
		_ = json.Unmarshal(raw, &sc)
		return strings.Join(text, "\n"), sc
	}
	same := func(t *testing.T, where string, got map[string]string) {
		t.Helper()
		for name, want := range exactValues {
			if v, ok := got[name]; !ok {
				t.Errorf("%s: no line for %s", where, name)
			} else if v != want {
				t.Errorf("%s: %s reads %q, the RS holds %q", where, name, v, want)
			}
		}
	}

	t.Run("fetch structured text", func(t *testing.T) {
		_, sc := call(t, "fetch", map[string]any{"id": "cin_a/notes:w1"})
		text, _ := sc["text"].(string)
		same(t, "structuredContent.text", fieldLines(t, text))
	})
	t.Run("fetch content text", func(t *testing.T) {
		text, _ := call(t, "fetch", map[string]any{"id": "cin_a/notes:w1"})
		same(t, "content[]", fieldLines(t, text))
	})
	t.Run("fetch full data is the RS body", func(t *testing.T) {
		_, sc := call(t, "fetch", map[string]any{"id": "cin_a/notes:w1", "detail": "full"})
		ex, _ := log.last(isRecordsPath)
		if !jsonEqual(t, mustRaw(sc["data"]), ex.Body) {
			t.Errorf("full data differs from the RS body")
		}
	})
	t.Run("query_records text and structured page", func(t *testing.T) {
		text, sc := call(t, "query_records", map[string]any{"stream": "notes"})
		same(t, "query_records content[]", fieldLines(t, text))
		data, _ := sc["data"].(map[string]any)
		recs, _ := data["data"].([]any)
		if len(recs) != 1 {
			t.Fatalf("structured page has %d records", len(recs))
		}
		fields, _ := recs[0].(map[string]any)["data"].(map[string]any)
		got := map[string]string{}
		for k, v := range fields {
			s, _ := v.(string)
			got[k] = s
		}
		same(t, "query_records structuredContent", got)
	})
	t.Run("read_record_field window, both details", func(t *testing.T) {
		text, sc := call(t, "read_record_field", map[string]any{"id": "cin_a/notes:w1", "field_path": "text"})
		at, _ := sc["text_at"].(map[string]any)
		start, end := int(at["start_byte"].(float64)), int(at["end_byte"].(float64))
		if got := text[start:end]; got != exactValues["text"] {
			t.Errorf("compact window reads %q", got)
		}
		_, sc = call(t, "read_record_field", map[string]any{"id": "cin_a/notes:w1", "field_path": "text", "detail": "full"})
		if got := sc["text"]; got != exactValues["text"] {
			t.Errorf("full window reads %q", got)
		}
	})
}
