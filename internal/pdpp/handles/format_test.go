package handles

import (
	"errors"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// TestLimitsAgreeWithCatalogFormats checks that the byte limits this
// package states are the ones the catalog formats enforce, so an id that
// passes a tool argument's format is never refused here for its length, and
// the other way round.
func TestLimitsAgreeWithCatalogFormats(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		f     *mcpkit.Format
	}{
		{"MaxNameBytes / name", MaxNameBytes, mcptools.FormatName},
		{"MaxRecordIDBytes / record_id", MaxRecordIDBytes, mcptools.FormatRecordID},
		{"MaxFieldPathBytes / field", MaxFieldPathBytes, mcptools.FormatField},
		{"MaxInputBytes / record_handle", MaxInputBytes, mcptools.FormatRecordHandle},
		{"MaxQueryTextBytes / match_text", MaxQueryTextBytes, mcptools.FormatMatchText},
		{"MaxPageCursorBytes / page_cursor", MaxPageCursorBytes, mcptools.FormatPageCursor},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.limit != tc.f.MaxBytes {
				t.Fatalf("package limit %d, catalog format max_bytes %d", tc.limit, tc.f.MaxBytes)
			}
			if p := tc.f.Problem(strings.Repeat("a", tc.limit)); p != "" {
				t.Errorf("value at the limit refused: %s", p)
			}
			if p := tc.f.Problem(strings.Repeat("a", tc.limit+1)); p == "" {
				t.Errorf("value over the limit accepted")
			}
		})
	}
}

// TestValidateArgsNamesTheArgument checks that a window built from
// explicit arguments reports the argument at fault, never the cursor.
func TestValidateArgsNamesTheArgument(t *testing.T) {
	ok := WindowRef{Record: RecordRef{Stream: "s", RecordID: "r"}, Field: "text"}
	tests := []struct {
		name  string
		edit  func(w *WindowRef)
		param string
	}{
		{"field_path", func(w *WindowRef) { w.Field = "../text" }, ParamFieldPath},
		{"offset_chars", func(w *WindowRef) { w.Offset = -1 }, ParamOffsetChars},
		{"limit_chars", func(w *WindowRef) { w.Limit = MaxWindowChars + 1 }, ParamLimitChars},
		{"before_chars", func(w *WindowRef) { w.Q, w.Before = "x", MaxContextChars+1 }, ParamBeforeChars},
		{"after_chars", func(w *WindowRef) { w.Q, w.After = "x", -1 }, ParamAfterChars},
		{"q length", func(w *WindowRef) { w.Q = strings.Repeat("q", MaxQueryTextBytes+1) }, ParamQ},
		{"q control", func(w *WindowRef) { w.Q = "a\x00" }, ParamQ},
	}
	if err := ok.ValidateArgs(); err != nil {
		t.Fatalf("valid window refused: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := ok
			tc.edit(&w)
			var e *mcpkit.ArgError
			if err := w.ValidateArgs(); !errors.As(err, &e) || e.Field != tc.param || e.Code != CodeInvalidArgument {
				t.Fatalf("ValidateArgs = %v, want %s on %s", err, CodeInvalidArgument, tc.param)
			}
			if !strings.HasPrefix(e.Message, tc.param) {
				t.Errorf("message %q does not start with %s", e.Message, tc.param)
			}
			// The same window inside a cursor is the cursor's fault.
			if err := w.Validate(); !errors.As(err, &e) || e.Field != ParamCursor || e.Code != CodeInvalidCursor {
				t.Errorf("Validate = %v, want invalid_cursor on cursor", err)
			}
		})
	}
}
