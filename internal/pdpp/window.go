package pdpp

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// codeOutOfRange is the code of an argument outside what it may name; the
// generated Validate uses it for bounds known before the call.
const codeOutOfRange = "out_of_range"

// offsetPastEnd is the typed error of a read of w whose offset lies past
// the end of its field (known once the RS answered): it names
// offset_chars, the field's size and, as next, the call that reads the
// field's last window, which stays within the field.
func offsetPastEnd(w handles.WindowRef, e *evidence.PastEndError) *rs.Error {
	size := w.Limit
	if size <= 0 {
		size = evidence.DefaultWindowChars
	}
	next := evidence.ReadFieldCall(w.Record.ID(), w.Field, max(0, e.Total-size), w.Limit, "")
	obj := map[string]any{
		"type": "adapter_error",
		"code": codeOutOfRange,
		"message": fmt.Sprintf("offset_chars %d is past the end of field %q, which has %d characters; read at offsets 0 to %d",
			e.Offset, w.Field, e.Total, max(0, e.Total-1)),
		"param":       "offset_chars",
		"total_chars": e.Total,
		"next":        next,
	}
	b, err := json.Marshal(map[string]any{"error": obj})
	if err != nil {
		return rs.AdapterError(codeOutOfRange, e.Error(), "offset_chars")
	}
	return &rs.Error{Envelope: b}
}

// compactWindow is the compact result of a field window within limit
// bytes. The window text is paid for once: it lives in content[], and
// structured output points at it and names the full-detail call of the
// same range. Hidden characters are shown as markers, longer than what
// they stand for: when the shown window does not fit, it is cut to the
// longest prefix (in characters, found by binary search, at most
// log2(MaxWindowChars)+1 renderings) whose reply fits, and its next read
// starts right after that prefix, so walking next shows every character
// of the field once. A window that fits as it is is rendered once.
func compactWindow(view evidence.WindowView, limit, pageLimit int) *mcp.CallToolResult {
	text, structured, size := compactWindowParts(view)
	if limit > 0 && size > limit {
		total := evidence.CountChars(view.Text)
		// The prefixes that fit are the 1..keep characters; at least one
		// is kept, so next moves on.
		keep := sort.Search(total-1, func(i int) bool {
			cut := view
			cut.CutTo(i+1, pageLimit)
			_, _, n := compactWindowParts(cut)
			return n > limit
		})
		if total > 1 {
			view.CutTo(max(keep, 1), pageLimit)
			text, structured, _ = compactWindowParts(view)
		}
	}
	return compactResult(limit, text, json.RawMessage(structured), len(structured), view.Full)
}

// compactWindowParts renders view as a compact reply does: the text with
// hidden characters shown and the structured output, and the reply's size
// as compactResult measures it.
func compactWindowParts(view evidence.WindowView) (string, []byte, int) {
	call := evidence.ReadFieldCall(view.ID, view.FieldPath, view.Window.StartChars, view.Window.EndChars-view.Window.StartChars, "")
	call.Arguments["detail"] = evidence.DetailFull
	// The window is shown by CompactText (its span in content[] must
	// hold): the reply says so here.
	hidden := unseen.Has(view.Rendered)
	view.CompactText(call)
	if hidden {
		view.Rendered += hiddenNote
	}
	// The window's few members cost less to append than to marshal.
	structured := view.AppendJSON(make([]byte, 0, 1024))
	shown, _ := showStructured(structured)
	return view.Rendered, structured, resultOverhead + evidence.JSONStringLen(view.Rendered) + evidence.WireLen(shown)
}

// pageLimit is the page size of the reads that continue view, read as w
// asked: the one its next call names, else what w asked for (0: the
// default), none for a q window, which pages on with the default.
func pageLimit(view evidence.WindowView, w handles.WindowRef) int {
	if view.Next != nil {
		l, _ := view.Next.Arguments["limit_chars"].(int)
		return l
	}
	if w.Q != "" || w.Limit == evidence.DefaultWindowChars {
		return 0
	}
	return w.Limit
}
