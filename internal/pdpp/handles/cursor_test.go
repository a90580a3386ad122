package handles

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
)

// rawCursor wraps hand-written JSON the way EncodeCursor would.
func rawCursor(js string) string {
	return CursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(js))
}

// referenceWindowURI builds the reference adapter's field-window handle
// around js.
func referenceWindowURI(js string) string {
	return FieldWindowURIPrefix + base64.RawURLEncoding.EncodeToString([]byte(js))
}

func TestReferenceFieldWindowHandle(t *testing.T) {
	full := WindowRef{Record: RecordRef{"cin_a", "transcripts", "tr-5"}, Field: "text", Offset: 4096, Limit: 300}
	tests := []struct {
		name     string
		js       string
		want     WindowRef
		wantCode string
		wantMsg  string
	}{
		{name: "full", js: `{"v":1,"kind":"field-window","connection_id":"cin_a","stream":"transcripts","record_id":"tr-5","field_path":"text","offset_chars":4096,"limit_chars":300}`, want: full},
		{name: "keys reordered", js: `{"stream":"transcripts","record_id":"tr-5","field_path":"text","offset_chars":4096,"limit_chars":300,"connection_id":"cin_a","kind":"field-window","v":1}`, want: full},
		{name: "null connection, no range", js: `{"v":1,"kind":"field-window","connection_id":null,"stream":"s","record_id":"a:b","field_path":"body"}`,
			want: WindowRef{Record: RecordRef{Stream: "s", RecordID: "a:b"}, Field: "body"}},
		{name: "version 2", js: `{"v":2,"kind":"field-window","stream":"s","record_id":"r","field_path":"f"}`, wantCode: CodeInvalidCursor, wantMsg: "version"},
		{name: "record kind", js: `{"v":1,"kind":"record","stream":"s","record_id":"r","field_path":"f"}`, wantCode: CodeInvalidCursor, wantMsg: "kind"},
		{name: "unknown key", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"f","x":1}`, wantCode: CodeInvalidCursor, wantMsg: "selector"},
		{name: "two objects", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"f"}{}`, wantCode: CodeInvalidCursor, wantMsg: "selector"},
		{name: "no field", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r"}`, wantCode: CodeInvalidCursor, wantMsg: "field_path"},
		{name: "traversal", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"..","field_path":"f"}`, wantCode: CodeInvalidCursor, wantMsg: "traversal"},
		{name: "bad field path", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"a b"}`, wantCode: CodeInvalidCursor, wantMsg: "field path"},
		{name: "negative offset", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"f","offset_chars":-1}`, wantCode: CodeInvalidCursor, wantMsg: "negative"},
		{name: "limit over the RS ceiling", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"f","limit_chars":16385}`, wantCode: CodeInvalidCursor, wantMsg: "outside"},
		{name: "zero limit", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"f","limit_chars":0}`, wantCode: CodeInvalidCursor, wantMsg: "limit_chars is 0"},
		{name: "empty connection", js: `{"v":1,"kind":"field-window","connection_id":"","stream":"s","record_id":"r","field_path":"f"}`, wantCode: CodeInvalidCursor, wantMsg: "empty connection_id"},
		{name: "string offset", js: `{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"f","offset_chars":"1"}`, wantCode: CodeInvalidCursor, wantMsg: "selector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uri := referenceWindowURI(tc.js)
			for _, form := range []struct {
				param string
				parse func(string) (WindowRef, error)
			}{{ParamURI, ParseFieldWindowURI}, {ParamCursor, DecodeCursor}} {
				got, err := form.parse(uri)
				if tc.wantCode == "" {
					if err != nil || got != tc.want {
						t.Fatalf("%s: got %#v, %v; want %#v", form.param, got, err, tc.want)
					}
					continue
				}
				he := wantArgError(t, err, tc.wantCode, form.param)
				if !strings.Contains(he.Message, tc.wantMsg) {
					t.Errorf("%s: message %q does not contain %q", form.param, he.Message, tc.wantMsg)
				}
			}
			ref, err := ParseID(uri)
			if tc.wantCode == "" {
				if err != nil || ref != tc.want.Record {
					t.Fatalf("ParseID = %#v, %v; want %#v", ref, err, tc.want.Record)
				}
				return
			}
			wantArgError(t, err, CodeInvalidID, ParamID)
		})
	}
	t.Run("padding and foreign bytes", func(t *testing.T) {
		for _, in := range []string{
			referenceWindowURI(`{"v":1,"kind":"field-window","stream":"s","record_id":"r","field_path":"f"}`) + "=",
			FieldWindowURIPrefix + "eyJ2IjoxfQ==",
			FieldWindowURIPrefix + "e30/x",
			FieldWindowURIPrefix,
			FieldWindowURIPrefix + strings.Repeat("A", MaxCursorBytes+1),
		} {
			if w, err := DecodeCursor(in); err == nil {
				t.Errorf("DecodeCursor(%q) = %#v, want error", in, w)
			}
		}
	})
}

// TestCursorGolden pins the wire format: cursors in testdata (produced
// independently of this package) decode to the listed windows and
// re-encode byte for byte, so cursors handed out earlier keep working.
func TestCursorGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "cursors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Cursor string `json:"cursor"`
		Window struct {
			ConnectionID string `json:"connection_id"`
			Stream       string `json:"stream"`
			RecordID     string `json:"record_id"`
			Field        string `json:"field"`
			Offset       int    `json:"offset"`
			Limit        int    `json:"limit"`
			Q            string `json:"q"`
			Before       int    `json:"before"`
			After        int    `json:"after"`
		} `json:"window"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no golden cursors")
	}
	for _, tc := range cases {
		t.Run(tc.Cursor, func(t *testing.T) {
			g := tc.Window
			want := WindowRef{
				Record: RecordRef{ConnectionID: g.ConnectionID, Stream: g.Stream, RecordID: g.RecordID},
				Field:  g.Field, Offset: g.Offset, Limit: g.Limit, Q: g.Q, Before: g.Before, After: g.After,
			}
			got, err := DecodeCursor(tc.Cursor)
			if err != nil {
				t.Fatalf("DecodeCursor: %v", err)
			}
			if got != want {
				t.Fatalf("DecodeCursor = %#v, want %#v", got, want)
			}
			if enc := EncodeCursor(want); enc != tc.Cursor {
				t.Fatalf("EncodeCursor = %q, want %q", enc, tc.Cursor)
			}
			uri := FieldWindowURI(want)
			if uri != FieldWindowURIPrefix+tc.Cursor {
				t.Fatalf("FieldWindowURI = %q", uri)
			}
			if back, err := ParseFieldWindowURI(uri); err != nil || back != want {
				t.Fatalf("ParseFieldWindowURI = %#v, %v", back, err)
			}
		})
	}
}

func TestCursorRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		w    WindowRef
	}{
		{"minimal", WindowRef{Record: RecordRef{Stream: "s", RecordID: "r"}, Field: "text"}},
		{"everything", WindowRef{Record: RecordRef{"cin_a", "transcripts", "urn:x"}, Field: "body.text",
			Offset: 12, Limit: MaxWindowChars, Q: `a "quoted" <b> & more`, Before: MaxContextChars, After: 1}},
		{"limit 1", WindowRef{Record: RecordRef{Stream: "s", RecordID: "r"}, Field: "f", Limit: 1}},
		{"unicode", WindowRef{Record: RecordRef{Stream: "notes", RecordID: "日本語"}, Field: "_t", Q: "più ☕"}},
		{"large offset", WindowRef{Record: RecordRef{Stream: "s", RecordID: "r"}, Field: "f", Offset: 1 << 40}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.w.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			c := EncodeCursor(tc.w)
			if !strings.HasPrefix(c, CursorPrefix) || strings.ContainsAny(strings.TrimPrefix(c, CursorPrefix), "=+/.") {
				t.Fatalf("cursor %q is not fw1. + unpadded base64url", c)
			}
			got, err := DecodeCursor(c)
			if err != nil || got != tc.w {
				t.Fatalf("DecodeCursor(EncodeCursor) = %#v, %v; want %#v", got, err, tc.w)
			}
		})
	}
}

func TestDecodeCursorRejects(t *testing.T) {
	good := rawCursor(`{"s":"s","r":"r","f":"f"}`)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "not a field-window cursor"},
		{"prefix only", "fw1.", "empty"},
		{"no prefix", strings.TrimPrefix(good, CursorPrefix), "not a field-window cursor"},
		{"other version", "fw2." + strings.TrimPrefix(good, CursorPrefix), `"fw2." is not supported`},
		{"padding", good + "==", "outside base64url"},
		{"standard alphabet", "fw1.ab+/", "outside base64url"},
		{"newline inside", good[:8] + "\n" + good[8:], "outside base64url"},
		{"URI characters", good + "?x=1", "outside base64url"},
		{"truncated base64", good[:len(good)-1], ""},
		{"not JSON", CursorPrefix + base64.RawURLEncoding.EncodeToString([]byte("hello")), "does not hold"},
		{"JSON array", rawCursor(`[1,2]`), "does not hold"},
		{"unknown key", rawCursor(`{"s":"s","r":"r","f":"f","x":1}`), "does not hold"},
		{"float offset", rawCursor(`{"s":"s","r":"r","f":"f","o":1.5}`), "does not hold"},
		{"exponent offset", rawCursor(`{"s":"s","r":"r","f":"f","o":1e2}`), "does not hold"},
		{"string offset", rawCursor(`{"s":"s","r":"r","f":"f","o":"1"}`), "does not hold"},
		{"missing field", rawCursor(`{"s":"s","r":"r"}`), "not a valid field path"},
		{"bad field", rawCursor(`{"s":"s","r":"r","f":"a b"}`), "not a valid field path"},
		{"bracket field", rawCursor(`{"s":"s","r":"r","f":"data[x]"}`), "not a valid field path"},
		{"long field", rawCursor(`{"s":"s","r":"r","f":"` + strings.Repeat("f", MaxFieldPathBytes+1) + `"}`), "not a valid field path"},
		{"negative offset", rawCursor(`{"s":"s","r":"r","f":"f","o":-1}`), "negative"},
		{"negative limit", rawCursor(`{"s":"s","r":"r","f":"f","l":-1}`), "outside 1..16384"},
		{"limit too large", rawCursor(`{"s":"s","r":"r","f":"f","l":16385}`), "outside 1..16384"},
		{"negative before", rawCursor(`{"s":"s","r":"r","f":"f","b":-5}`), "before_chars"},
		{"after too large", rawCursor(`{"s":"s","r":"r","f":"f","a":16385}`), "after_chars"},
		{"control char in q", rawCursor(`{"s":"s","r":"r","f":"f","q":"a\u0007"}`), "control character"},
		{"long q", rawCursor(`{"s":"s","r":"r","f":"f","q":"` + strings.Repeat("q", MaxQueryTextBytes+1) + `"}`), "over 512 bytes"},
		{"traversal record", rawCursor(`{"s":"s","r":"..","f":"f"}`), "invalid record"},
		{"encoded traversal record", rawCursor(`{"s":"s","r":"%2e%2e","f":"f"}`), "invalid record"},
		{"bad stream", rawCursor(`{"s":"../s","r":"r","f":"f"}`), "invalid record"},
		{"bad connection", rawCursor(`{"c":"a/b","s":"s","r":"r","f":"f"}`), "invalid record"},
		{"missing stream", rawCursor(`{"r":"r","f":"f"}`), "stream is empty"},
		{"whitespace in JSON", rawCursor(`{"s": "s","r":"r","f":"f"}`), "canonical"},
		{"reordered keys", rawCursor(`{"r":"r","s":"s","f":"f"}`), "canonical"},
		{"explicit zero", rawCursor(`{"s":"s","r":"r","f":"f","o":0}`), "canonical"},
		{"duplicate key", rawCursor(`{"s":"x","s":"s","r":"r","f":"f"}`), "canonical"},
		{"upper-case key", rawCursor(`{"S":"s","r":"r","f":"f"}`), "canonical"},
		{"trailing data", rawCursor(`{"s":"s","r":"r","f":"f"} `), "canonical"},
		{"too long", rawCursor(`{"s":"s","r":"r","f":"f","q":"` + strings.Repeat("q", 1600) + `"}`), "over the 2048-byte limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := DecodeCursor(tc.in)
			if err == nil {
				t.Fatalf("DecodeCursor(%q) = %#v, want error", tc.in, w)
			}
			he := wantArgError(t, err, CodeInvalidCursor, ParamCursor)
			if !strings.Contains(he.Message, tc.want) {
				t.Errorf("message %q does not contain %q", he.Message, tc.want)
			}
			if !strings.Contains(he.Message, "read_record_field") {
				t.Errorf("message %q does not name the way forward", he.Message)
			}
		})
	}
}

func TestParseFieldWindowURI(t *testing.T) {
	w := WindowRef{Record: RecordRef{"c", "s", "r"}, Field: "text", Offset: 10, Limit: 20}
	tests := []struct {
		name     string
		in       string
		want     WindowRef
		wantCode string
	}{
		{name: "round trip", in: FieldWindowURI(w), want: w},
		{name: "record URI", in: "pdpp://record/s:r", wantCode: CodeInvalidURI},
		{name: "bare cursor", in: EncodeCursor(w), wantCode: CodeInvalidURI},
		{name: "upper-case host", in: "pdpp://FIELD-WINDOW/" + EncodeCursor(w), wantCode: CodeInvalidURI},
		{name: "query string", in: FieldWindowURI(w) + "?x=1", wantCode: CodeInvalidCursor},
		{name: "extra segment", in: FieldWindowURI(w) + "/x", wantCode: CodeInvalidCursor},
		{name: "bad cursor", in: FieldWindowURIPrefix + "fw1.AAAA", wantCode: CodeInvalidCursor},
		{name: "too long", in: FieldWindowURIPrefix + strings.Repeat("A", MaxCursorBytes+1), wantCode: CodeInvalidURI},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFieldWindowURI(tc.in)
			if tc.wantCode == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseFieldWindowURI = %#v, %v; want %#v", got, err, tc.want)
				}
				return
			}
			wantArgError(t, err, tc.wantCode, ParamURI)
		})
	}
}

// FuzzDecodeCursor: no input panics; an accepted cursor is canonical (it
// re-encodes to itself), valid, and survives the field-window URI.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor(WindowRef{Record: RecordRef{"cin_a", "transcripts", "tr-5"}, Field: "text", Offset: 4096, Limit: 4096}))
	f.Add(EncodeCursor(WindowRef{Record: RecordRef{Stream: "s", RecordID: "a:b"}, Field: "f", Q: "x", Before: 10, After: 20}))
	f.Add(rawCursor(`{"s":"s","r":"..","f":"f"}`))
	f.Add(rawCursor(`{"s":"s","r":"r","f":"f","o":-1}`))
	f.Add(rawCursor(`{"s":"s","r":"r","f":"f","x":1}`))
	f.Add("fw1.")
	f.Add("fw2.e30")
	f.Add("")
	f.Add(referenceWindowURI(`{"v":1,"kind":"field-window","connection_id":"cin_a","stream":"transcripts","record_id":"tr-5","field_path":"text","offset_chars":0,"limit_chars":4096}`))
	f.Add(referenceWindowURI(`{"v":1,"kind":"field-window","connection_id":null,"stream":"s","record_id":"..","field_path":"f"}`))
	f.Add(FieldWindowURI(WindowRef{Record: RecordRef{"c", "s", "r"}, Field: "f", Limit: 10}))
	f.Add(FieldWindowURIPrefix + "e30")
	f.Fuzz(func(t *testing.T, s string) {
		w, err := DecodeCursor(s)
		if err != nil {
			var he *mcpkit.ArgError
			if !errors.As(err, &he) || (he.Code != CodeInvalidCursor && he.Code != CodeInvalidURI) || he.Field != ParamCursor || he.Message == "" {
				t.Fatalf("DecodeCursor(%q): untyped error %v", s, err)
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("accepted cursor %q is invalid: %v", s, err)
		}
		if strings.HasPrefix(s, FieldWindowURIPrefix) {
			// A pasted field-window URI (ours or the reference adapter's)
			// reads as that URI does.
			if back, err := ParseFieldWindowURI(s); err != nil || back != w {
				t.Fatalf("ParseFieldWindowURI(%q) = %#v, %v; DecodeCursor gave %#v", s, back, err, w)
			}
			s = EncodeCursor(w)
		}
		if enc := EncodeCursor(w); enc != s {
			t.Fatalf("accepted cursor %q re-encodes to %q", s, enc)
		}
		again, err := DecodeCursor(EncodeCursor(w))
		if err != nil || again != w {
			t.Fatalf("second decode = %#v, %v; want %#v", again, err, w)
		}
		if back, err := ParseFieldWindowURI(FieldWindowURI(w)); err != nil || back != w {
			t.Fatalf("field-window URI round trip = %#v, %v", back, err)
		}
	})
}

// TestEncodeCursorMatchesMarshal: the appended cursor JSON is the bytes
// json.Marshal writes for the same cursorBody, escapes and omitted members
// included.
func TestEncodeCursorMatchesMarshal(t *testing.T) {
	odd := `a<b>&"c"\é` + "\u2028\x01"
	refs := []WindowRef{
		{Record: RecordRef{Stream: "s", RecordID: "r"}, Field: "f"},
		{Record: RecordRef{ConnectionID: "cin_x", Stream: "transcripts", RecordID: "tr-5"}, Field: "text", Offset: 11863, Limit: 1612},
		{Record: RecordRef{ConnectionID: "c", Stream: "s", RecordID: "r"}, Field: "f", Q: "zephyr marker", Before: 400, After: 1200},
		{Record: RecordRef{ConnectionID: odd, Stream: odd, RecordID: odd}, Field: odd, Offset: -1, Limit: 1 << 40, Q: odd, Before: 1, After: 2},
		{},
	}
	for _, w := range refs {
		body := cursorBody{C: w.Record.ConnectionID, S: w.Record.Stream, R: w.Record.RecordID,
			F: w.Field, O: w.Offset, L: w.Limit, Q: w.Q, B: w.Before, A: w.After}
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := EncodeCursor(w), CursorPrefix+base64.RawURLEncoding.EncodeToString(data); got != want {
			t.Errorf("EncodeCursor(%+v) = %s, want %s (%s)", w, got, want, data)
		}
	}
}
