package evidence

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/handles"
)

// FieldWindow is the RS `field_window` body.
type FieldWindow struct {
	Object       string `json:"object"`
	RecordID     string `json:"record_id"`
	ConnectionID string `json:"connection_id"`
	Stream       string `json:"stream"`
	Field        struct {
		Path string `json:"path"`
		Type string `json:"type"`
	} `json:"field"`
	Window struct {
		Text                string `json:"text"`
		StartChars          int    `json:"start_chars"`
		EndChars            int    `json:"end_chars"`
		TotalChars          int    `json:"total_chars"`
		LimitChars          int    `json:"limit_chars"`
		Complete            bool   `json:"complete"`
		HasMore             bool   `json:"has_more"`
		NextOffsetChars     *int   `json:"next_offset_chars"`
		PreviousOffsetChars *int   `json:"previous_offset_chars"`
		MatchStartChars     *int   `json:"match_start_chars"`
		MatchEndChars       *int   `json:"match_end_chars"`
	} `json:"window"`
}

// WindowView is a rendered field window.
type WindowView struct {
	ID         string        `json:"id"`
	FieldPath  string        `json:"field_path"`
	Text       string        `json:"text"`
	Window     WindowState   `json:"window"`
	Next       *Continuation `json:"next,omitempty"`
	Previous   *Continuation `json:"previous,omitempty"`
	NextCursor string        `json:"next_cursor,omitempty"`
	// Rendered is the content[] text; it is not part of structured output.
	Rendered string `json:"-"`
}

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

// RenderWindow renders an RS field window of the record ref (whose connection
// is taken from the RS answer when the caller named none). limit is the window
// size the caller asked for (0 = RS default); it is carried into next/previous
// so paging keeps the same size. cursorFor, when set, encodes the next window as
// an opaque cursor for structured output.
func RenderWindow(body []byte, ref handles.RecordRef, limit int, cursorFor func(offset, limit int) string) (WindowView, error) {
	var fw FieldWindow
	if err := json.Unmarshal(body, &fw); err != nil {
		return WindowView{}, fmt.Errorf("field-window response is not a field window: %w", err)
	}
	if ref.ConnectionID == "" {
		ref.ConnectionID = fw.ConnectionID
	}
	id := ref.ID()
	w := fw.Window
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
	v.Rendered = windowText(v)
	return v, nil
}

func windowText(v WindowView) string {
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
	b.WriteString("\n---\n")
	b.WriteString(v.Text)
	b.WriteString("\n---\n")
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
