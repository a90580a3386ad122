package evidence

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// fieldWindowBody is the members of the RS `field_window` model that
// RenderWindowFrom reads, the window a pointer to tell a body without one
// (or null) from an empty window. The others (links, meta, ...) are
// skipped: building the whole model cost 8% more instructions per window.
type fieldWindowBody struct {
	ConnectionId string `json:"connection_id"`
	Field        struct {
		Path string `json:"path"`
	} `json:"field"`
	Window *rsclient.TextWindow `json:"window"`
}

// The members above stand for the model's: renamed in the spec, these
// lines stop the build.
var _ = [...]string{rsclient.FieldWindow{}.ConnectionId, rsclient.FieldWindow{}.Field.Path}
var _ rsclient.TextWindow = rsclient.FieldWindow{}.Window

// WindowView is a rendered field window.
type WindowView struct {
	ID         string        `json:"id"`
	FieldPath  string        `json:"field_path"`
	Text       string        `json:"text,omitempty"`
	Window     WindowState   `json:"window"`
	Next       *Continuation `json:"next,omitempty"`
	Previous   *Continuation `json:"previous,omitempty"`
	NextCursor string        `json:"next_cursor,omitempty"`
	// Detail, TextAt and Full are set by compact results, whose window
	// text lives once, in content[]: TextAt locates it there and Full is
	// the same window with detail "full", which carries it here too.
	Detail string        `json:"detail,omitempty"`
	TextAt *TextSpan     `json:"text_at,omitempty"`
	Full   *Continuation `json:"full,omitempty"`
	// RSBodyBytes is the size of the RS body the view renders.
	RSBodyBytes int `json:"-"`
	// Rendered is the content[] text; it is not part of structured output.
	Rendered string `json:"-"`
}

// TextSpan locates a text inside content[]: block Content, bytes
// [StartByte, EndByte) of its text, Chars characters.
type TextSpan struct {
	Content   int `json:"content"`
	StartByte int `json:"start_byte"`
	EndByte   int `json:"end_byte"`
	Chars     int `json:"chars"`
}

// CompactText moves the window text out of structured output, leaving a
// pointer to it in content[0] and the full-detail call of the same window.
func (v *WindowView) CompactText(full Continuation) {
	start := strings.Index(v.Rendered, windowRule)
	if start < 0 {
		return
	}
	start += len(windowRule)
	shown := v.Text
	if unseen.Has(v.Rendered) {
		// Characters a person cannot see are shown as markers (package
		// unseen) here, where the span is measured, piece by piece so the
		// span covers the window's shown form; Chars still counts the
		// RS's characters, as offsets do.
		head, tail := unseen.Show(v.Rendered[:start]), unseen.Show(v.Rendered[start+len(v.Text):])
		shown = unseen.Show(v.Text)
		v.Rendered, start = head+shown+tail, len(head)
	}
	v.TextAt = &TextSpan{StartByte: start, EndByte: start + len(shown), Chars: CountChars(v.Text)}
	v.Text = ""
	v.Detail = DetailCompact
	v.Full = &full
}

// CutTo keeps the first chars characters of the window text, fewer than
// it holds: the window then ends right after them, is partial, and its
// next read (page size limit, 0: the default) starts exactly there, so
// reading on from next skips nothing. A reply uses it when the window's
// shown form (hidden characters as markers) does not fit its budget.
func (v *WindowView) CutTo(chars, limit int) {
	v.Text, _ = Cut(v.Text, chars)
	v.Window.EndChars = v.Window.StartChars + CountChars(v.Text)
	v.Window.Complete = false
	v.Window.HasMore = true
	next := ReadFieldCall(v.ID, v.FieldPath, v.Window.EndChars, limit, "")
	v.Next = &next
	v.NextCursor = ""
	v.Rendered = renderWindow(*v, true)
}

// FullText is CompactText's counterpart for detail "full": the text stays
// in structured output, content[] keeping the range, the continuations and
// a line saying where the text is, so it is paid for once here too.
func (v *WindowView) FullText() {
	v.Detail = DetailFull
	v.Rendered = renderWindow(*v, false)
}

// windowRule delimits the window text in content[].
const windowRule = "\n---\n"

// WindowState is the served range and completeness of a window.
type WindowState struct {
	StartChars      int  `json:"start_chars"`
	EndChars        int  `json:"end_chars"`
	TotalChars      int  `json:"total_chars"`
	Complete        bool `json:"complete"`
	HasMore         bool `json:"has_more"`
	MatchStartChars *int `json:"match_start_chars,omitempty"`
	MatchEndChars   *int `json:"match_end_chars,omitempty"`
}

// PastEndError is a window read whose offset lies past the end of its
// field: the caller's mistake, not the RS's.
type PastEndError struct {
	Offset, Total int
}

func (e *PastEndError) Error() string {
	return fmt.Sprintf("offset_chars %d is past the end of the field, which has %d characters", e.Offset, e.Total)
}

// RenderWindowFrom renders an RS field window of the record ref (whose
// connection is taken from the RS answer when the caller named none), read
// at offset: when the field turns out shorter than offset, it returns a
// *PastEndError naming the field's size instead of a window. limit is the
// window size the caller asked for (0 = RS default); it is carried into
// next/previous so paging keeps the same size. cursorFor, when set,
// encodes the next window as an opaque cursor for structured output.
func RenderWindowFrom(body []byte, ref handles.RecordRef, offset, limit int, cursorFor func(offset, limit int) string) (WindowView, error) {
	if err := requireObject(body, "field-window"); err != nil {
		return WindowView{}, err
	}
	var fw fieldWindowBody
	if err := json.Unmarshal(body, &fw, rsDecodeOptions); err != nil {
		return WindowView{}, fmt.Errorf("field-window response is not a field window: %w", err)
	}
	if fw.Window == nil {
		return WindowView{}, fmt.Errorf("field-window response has no window")
	}
	if fw.Field.Path == "" {
		return WindowView{}, fmt.Errorf("field-window response names no field")
	}
	ref.ConnectionID = cmp.Or(ref.ConnectionID, fw.ConnectionId)
	id := ref.ID()
	w := *fw.Window
	if offset > 0 && w.TotalChars >= 0 && offset > w.TotalChars {
		return WindowView{}, &PastEndError{Offset: offset, Total: w.TotalChars}
	}
	if err := checkWindow(&w, limit); err != nil {
		return WindowView{}, err
	}
	if limit <= 0 {
		limit = w.LimitChars
	}
	pageLimit := limit
	if w.MatchStartChars != nil || pageLimit == DefaultWindowChars {
		// A q window's size came from before/after: page on with the default
		// size, which needs no argument.
		pageLimit = 0
	}
	v := WindowView{
		ID:        id,
		FieldPath: fw.Field.Path,
		Text:      w.Text,
		Window: WindowState{
			StartChars: w.StartChars, EndChars: w.EndChars, TotalChars: w.TotalChars,
			Complete: w.Complete, HasMore: w.HasMore,
			MatchStartChars: w.MatchStartChars, MatchEndChars: w.MatchEndChars,
		},
	}
	if w.HasMore && w.NextOffsetChars != nil {
		c := ReadFieldCall(id, fw.Field.Path, *w.NextOffsetChars, pageLimit, "")
		v.Next = &c
		if cursorFor != nil {
			v.NextCursor = cursorFor(*w.NextOffsetChars, pageLimit)
		}
	}
	if w.StartChars > 0 {
		// The previous window ends exactly where this one starts.
		size := pageLimit
		if size <= 0 {
			size = DefaultWindowChars
		}
		offset := max(0, w.StartChars-size)
		limit := 0
		if w.StartChars-offset != DefaultWindowChars {
			limit = w.StartChars - offset
		}
		c := ReadFieldCall(id, fw.Field.Path, offset, limit, "")
		c.Arguments["offset_chars"] = offset
		v.Previous = &c
	}
	v.Rendered = renderWindow(v, true)
	v.RSBodyBytes = len(body)
	return v, nil
}

// renderWindow is the content[] text of a window: its range, the window
// text between rules (withText) or a line saying it is in structured
// output, then the continuations.
func renderWindow(v WindowView, withText bool) string {
	state := "partial"
	if v.Window.Complete {
		state = "complete: whole field shown"
	}
	var next, previous string
	if v.Next != nil {
		next = v.Next.Call()
	}
	if v.Previous != nil {
		previous = v.Previous.Call()
	}
	// The header's numbers and fixed words fit in 200 bytes; the builder
	// is sized once.
	var b strings.Builder
	b.Grow(200 + len(v.ID) + len(v.FieldPath) + len(v.Text) + len(next) + len(previous))
	b.WriteString("id=")
	b.WriteString(unseen.Spell(v.ID))
	b.WriteString(" field=")
	b.WriteString(v.FieldPath)
	b.WriteString(" chars ")
	writeInt(&b, v.Window.StartChars)
	b.WriteByte('-')
	writeInt(&b, v.Window.EndChars)
	b.WriteString(" of ")
	writeInt(&b, v.Window.TotalChars)
	b.WriteString(" (")
	b.WriteString(state)
	b.WriteByte(')')
	if v.Window.MatchStartChars != nil && v.Window.MatchEndChars != nil {
		b.WriteString("; match at ")
		writeInt(&b, *v.Window.MatchStartChars)
		b.WriteByte('-')
		writeInt(&b, *v.Window.MatchEndChars)
	}
	if withText {
		b.WriteString(windowRule)
		b.WriteString(v.Text)
		b.WriteString(windowRule)
	} else {
		b.WriteString("\nthe window's ")
		writeInt(&b, CountChars(v.Text))
		b.WriteString(" characters are in structuredContent.text\n")
	}
	if v.Next != nil {
		b.WriteString("next: ")
		b.WriteString(next)
		b.WriteByte('\n')
	}
	if v.Previous != nil {
		b.WriteString("previous: ")
		b.WriteString(previous)
		b.WriteByte('\n')
	}
	if v.Next == nil && !v.Window.Complete {
		b.WriteString("end of field reached\n")
	}
	return b.String()
}

// writeInt writes n in decimal, as fmt's %d does.
func writeInt(b *strings.Builder, n int) {
	var buf [20]byte
	b.Write(strconv.AppendInt(buf[:0], int64(n), 10))
}

// checkWindow refuses a window whose offsets cannot be true (negative,
// inverted, starting past the field's end, or beyond MaxOffsetChars), and
// clamps one that ends past the field's end, or is longer than limit (0:
// DefaultWindowChars; a q window, sized by before/after, MaxWindowChars).
// The next read starts where the (kept) window ends, or there is none at
// the field's end, whatever next offset the RS gave: no continuation names
// an offset past the field's end.
func checkWindow(w *rsclient.TextWindow, limit int) error {
	switch {
	case w.StartChars < 0 || w.EndChars < 0 || w.TotalChars < 0:
		return fmt.Errorf("field window has a negative offset (%d-%d of %d)", w.StartChars, w.EndChars, w.TotalChars)
	case w.EndChars < w.StartChars:
		return fmt.Errorf("field window offsets are inverted (%d-%d)", w.StartChars, w.EndChars)
	case w.StartChars > w.TotalChars:
		return fmt.Errorf("field window starts at %d, past the field's %d characters", w.StartChars, w.TotalChars)
	case w.StartChars > MaxOffsetChars:
		return fmt.Errorf("field window starts at %d, past the largest offset a read can name (%d)", w.StartChars, MaxOffsetChars)
	case w.MatchStartChars != nil && w.MatchEndChars != nil &&
		(*w.MatchStartChars < 0 || *w.MatchEndChars < *w.MatchStartChars || *w.MatchEndChars > w.TotalChars):
		return fmt.Errorf("field window match offsets are invalid")
	}
	if w.EndChars > w.TotalChars {
		// The window cannot hold more than the field has left.
		w.Text, _ = Cut(w.Text, w.TotalChars-w.StartChars)
		w.EndChars = w.TotalChars
	}
	switch {
	case w.MatchStartChars != nil:
		limit = MaxWindowChars
	case limit <= 0:
		limit = DefaultWindowChars
	}
	limit = min(limit, MaxWindowChars)
	if kept, cut := Cut(w.Text, limit); cut {
		w.Text = kept
		w.EndChars = w.StartChars + limit
	}
	// The next read starts where this window ends; there is none at the
	// field's end, nor past the largest offset a read can name.
	if w.EndChars < w.TotalChars && w.EndChars <= MaxOffsetChars {
		next := w.EndChars
		w.NextOffsetChars, w.HasMore = &next, true
	} else {
		w.NextOffsetChars, w.HasMore = nil, false
	}
	w.Complete = w.StartChars == 0 && w.EndChars == w.TotalChars
	return nil
}
