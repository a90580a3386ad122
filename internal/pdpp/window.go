package pdpp

import (
	"encoding/json"
	"fmt"

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
