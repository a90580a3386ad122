package evidence

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// BenchmarkRenderRSBodies renders captured RS bodies as the four read
// tools do, from the body to the compact reply, without the MCP and HTTP
// layers: the adapter's own CPU per call on the RS-body path, to pair
// against another build of this package on the same bodies.
func BenchmarkRenderRSBodies(b *testing.B) {
	full := Continuation{Tool: ToolSearch, Arguments: map[string]any{"detail": DetailFull}}
	ref := handles.RecordRef{Stream: "transcripts", RecordID: "tr-5"}
	cases := []struct {
		name, sample string
		render       func(b *testing.B, body []byte)
	}{
		{"search", "search-lexical.json", func(b *testing.B, body []byte) {
			v, err := RenderSearch(body, SearchRequest{Q: "q"}, "http://rs.example")
			if err != nil {
				b.Fatal(err)
			}
			v.CompactStep(Step{Full: full}, 20000)
		}},
		{"query_records", "records-transcripts-limit2.json", func(b *testing.B, body []byte) {
			v, err := RenderList(body, "transcripts", "", map[string]any{"stream": "transcripts"})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, _, err := v.CompactStep(body, Step{Full: full}, 20000); err != nil {
				b.Fatal(err)
			}
		}},
		{"fetch", "record-transcripts-tr-5.json", func(b *testing.B, body []byte) {
			if _, err := RenderDocumentWithin(body, ref, "http://rs.example", nil, 20000); err != nil {
				b.Fatal(err)
			}
		}},
		{"read_record_field", "field-window-q-match.json", func(b *testing.B, body []byte) {
			if _, err := RenderWindowFrom(body, ref, 0, 0, nil); err != nil {
				b.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		body, err := os.ReadFile(filepath.Join(samplesDir, c.sample))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.render(b, body)
			}
		})
	}
}
