package evidence

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// TestWindowAppendJSONMatchesMarshal holds AppendJSON, HTML-escaped as the
// reply's encoder escapes it, to the bytes json.Marshal writes for the same
// view, over the sampled windows at both details and over values that need
// escaping.
func TestWindowAppendJSONMatchesMarshal(t *testing.T) {
	refs := []handles.RecordRef{
		{ConnectionID: "cin_x", Stream: "transcripts", RecordID: "tr-5"},
		{Stream: "notes", RecordID: `a<b>&"c"\é` + "\u2028"},
	}
	cursor := func(offset, limit int) string { return "fw1.cursor-" + string(rune('a'+offset%26)) }
	samples := []string{"field-window-q-match.json", "field-window-default.json", "field-window-offset.json", "field-window-short-field-complete.json"}
	for _, name := range samples {
		for _, ref := range refs {
			for _, limit := range []int{0, 1000} {
				v, err := RenderWindowFrom(sample(t, name), ref, 0, limit, cursor)
				if err != nil {
					t.Fatal(err)
				}
				full := v
				full.FullText()
				compact := v
				call := ReadFieldCall(v.ID, v.FieldPath, v.Window.StartChars, 7, "q<&>")
				call.Arguments["detail"] = DetailFull
				call.Arguments["fields"] = []string{"a", "<b>"}
				compact.CompactText(call)
				bare := v
				bare.Next, bare.Previous, bare.NextCursor = nil, nil, ""
				bare.Full = &Continuation{Tool: "x"}
				for _, tc := range []struct {
					label string
					view  WindowView
				}{{"rendered", v}, {"full", full}, {"compact", compact}, {"bare", bare}} {
					t.Run(name+"/"+ref.RecordID+"/"+tc.label, func(t *testing.T) {
						want, err := json.Marshal(tc.view)
						if err != nil {
							t.Fatal(err)
						}
						var got bytes.Buffer
						json.HTMLEscape(&got, tc.view.AppendJSON(nil))
						if got.String() != string(want) {
							t.Errorf("AppendJSON, HTML-escaped:\n%s\njson.Marshal:\n%s", got.String(), want)
						}
					})
				}
			}
		}
	}
}

// BenchmarkWindowReply builds read_record_field's compact reply as the
// adapter does (compactWindowParts), from the RS body to the structured
// bytes weighed: the cost AppendJSON's hand-writing is kept for.
func BenchmarkWindowReply(b *testing.B) {
	ref := handles.RecordRef{Stream: "transcripts", RecordID: "tr-5"}
	body, err := os.ReadFile(filepath.Join(samplesDir, "field-window-q-match.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v, err := RenderWindowFrom(body, ref, 0, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		call := ReadFieldCall(v.ID, v.FieldPath, v.Window.StartChars, v.Window.EndChars-v.Window.StartChars, "")
		call.Arguments["detail"] = DetailFull
		v.CompactText(call)
		if JSONStringLen(v.Rendered)+WireLen(v.AppendJSON(make([]byte, 0, 1024))) == 0 {
			b.Fatal("empty reply")
		}
	}
}
