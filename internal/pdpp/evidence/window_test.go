package evidence

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// renderWindowFmt is renderWindow written with fmt: the text must not
// depend on how it is assembled.
func renderWindowFmt(v WindowView, withText bool) string {
	var b strings.Builder
	state := "partial"
	if v.Window.Complete {
		state = "complete: whole field shown"
	}
	fmt.Fprintf(&b, "id=%s field=%s chars %d-%d of %d (%s)", v.ID, v.FieldPath,
		v.Window.StartChars, v.Window.EndChars, v.Window.TotalChars, state)
	if v.Window.MatchStartChars != nil && v.Window.MatchEndChars != nil {
		fmt.Fprintf(&b, "; match at %d-%d", *v.Window.MatchStartChars, *v.Window.MatchEndChars)
	}
	if withText {
		b.WriteString(windowRule + v.Text + windowRule)
	} else {
		fmt.Fprintf(&b, "\nthe window's %d characters are in structuredContent.text\n", CountChars(v.Text))
	}
	if v.Next != nil {
		fmt.Fprintf(&b, "next: %s\n", v.Next.Call())
	}
	if v.Previous != nil {
		fmt.Fprintf(&b, "previous: %s\n", v.Previous.Call())
	}
	if v.Next == nil && !v.Window.Complete {
		b.WriteString("end of field reached\n")
	}
	return b.String()
}

func TestRenderWindowText(t *testing.T) {
	ref := handles.RecordRef{ConnectionID: "cin_x", Stream: "transcripts", RecordID: "tr-5"}
	tests := []struct {
		name, sample string
		limit        int
		want         []string
	}{
		{"q match", "field-window-q-match.json", 0,
			[]string{"id=cin_x/transcripts:tr-5 field=text chars 11174-11381 of 22500 (partial); match at 11254-11261\n---\n", "\n---\nnext: read_record_field {", "previous: read_record_field {"}},
		{"default window", "field-window-default.json", 0, []string{" (partial)\n---\n", "next: read_record_field {"}},
		{"offset window", "field-window-offset.json", 0, []string{"previous: read_record_field {"}},
		{"short field", "field-window-short-field-complete.json", 0, []string{" (complete: whole field shown)\n---\n"}},
		{"asked size", "field-window-default.json", 1000, []string{`"limit_chars":1000`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := RenderWindowFrom(sample(t, tc.sample), ref, 0, tc.limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ref := renderWindowFmt(v, true); v.Rendered != ref {
				t.Fatalf("rendered\n%q\nwant\n%q", v.Rendered, ref)
			}
			for _, w := range tc.want {
				if !strings.Contains(v.Rendered, w) {
					t.Errorf("missing %q in\n%s", w, v.Rendered)
				}
			}
			v.FullText()
			if ref := renderWindowFmt(v, false); v.Rendered != ref {
				t.Fatalf("full-detail text\n%q\nwant\n%q", v.Rendered, ref)
			}
			if !strings.Contains(v.Rendered, fmt.Sprintf("\nthe window's %d characters are in structuredContent.text\n", CountChars(v.Text))) {
				t.Errorf("full-detail text does not say where the window is:\n%s", v.Rendered)
			}
		})
	}
	t.Run("past the last window", func(t *testing.T) {
		v := WindowView{ID: "c/s:r", FieldPath: "f", Text: "tail", Window: WindowState{StartChars: 5, EndChars: 9, TotalChars: 12}}
		got := renderWindow(v, true)
		if got != renderWindowFmt(v, true) || !strings.HasSuffix(got, "end of field reached\n") {
			t.Fatalf("rendered %q", got)
		}
	})
}
