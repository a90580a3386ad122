package handles

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
)

// Field-window cursor limits.
const (
	CursorPrefix       = "fw1."
	MaxCursorBytes     = 2048
	MaxFieldPathBytes  = 128
	MaxWindowChars     = 16384 // RS ceiling for limit_chars
	MaxContextChars    = 16384 // bound for before_chars / after_chars
	MaxQueryTextBytes  = 512
	fieldPathRuleShort = `field paths start with a letter or "_" and contain only letters, digits, "_", "." and "-"`
)

// WindowRef selects one bounded window of one text field of one record:
// the arguments of a field-window read. Zero values mean "not set" (the RS
// default applies) and are left out of the encoding.
type WindowRef struct {
	Record RecordRef
	Field  string
	Offset int // offset_chars, >= 0
	Limit  int // limit_chars, 0 (RS default) or 1..MaxWindowChars
	Q      string
	Before int // before_chars, 0..MaxContextChars
	After  int // after_chars, 0..MaxContextChars
}

// cursorBody is the JSON inside a cursor, with short keys.
type cursorBody struct {
	C string `json:"c,omitempty"`
	S string `json:"s"`
	R string `json:"r"`
	F string `json:"f"`
	O int    `json:"o,omitempty"`
	L int    `json:"l,omitempty"`
	Q string `json:"q,omitempty"`
	B int    `json:"b,omitempty"`
	A int    `json:"a,omitempty"`
}

// validFieldPath reports whether p is a field path the RS accepts: the
// catalog format "field" (mcptools.FormatField), the rule field_path
// arguments are validated with.
func validFieldPath(p string) bool {
	return mcptools.FormatField.Valid(p)
}

// Validate checks the record reference and every window parameter of a
// window carried by a cursor; the error's Param is "cursor".
func (w WindowRef) Validate() error {
	if p := w.Record.problem(); p != "" {
		return cursorErr(ParamCursor, "cursor names an invalid record: %s", p)
	}
	if _, msg := w.paramProblem(); msg != "" {
		return cursorErr(ParamCursor, "cursor %s", msg)
	}
	return nil
}

// ValidateArgs checks the window parameters of a window built from
// explicit read_record_field arguments. The error is *Error with Code
// CodeInvalidArgument and Param naming the argument at fault (field_path,
// offset_chars, limit_chars, q, before_chars or after_chars), never
// "cursor". The record reference is checked where it was parsed.
func (w WindowRef) ValidateArgs() error {
	if param, msg := w.paramProblem(); msg != "" {
		return &Error{Code: CodeInvalidArgument, Param: param, Message: msg}
	}
	return nil
}

// paramProblem names the first invalid window parameter and says what is
// wrong with it, or returns "", "".
func (w WindowRef) paramProblem() (param, msg string) {
	switch {
	case !validFieldPath(w.Field):
		return ParamFieldPath, fmt.Sprintf("field_path %s is not a valid field path (%s, at most %d bytes)", quote(w.Field), fieldPathRuleShort, MaxFieldPathBytes)
	case w.Offset < 0:
		return ParamOffsetChars, fmt.Sprintf("offset_chars %d is negative", w.Offset)
	case w.Limit < 0 || w.Limit > MaxWindowChars:
		return ParamLimitChars, fmt.Sprintf("limit_chars %d is outside 1..%d", w.Limit, MaxWindowChars)
	case w.Before < 0 || w.Before > MaxContextChars:
		return ParamBeforeChars, fmt.Sprintf("before_chars %d is outside 0..%d", w.Before, MaxContextChars)
	case w.After < 0 || w.After > MaxContextChars:
		return ParamAfterChars, fmt.Sprintf("after_chars %d is outside 0..%d", w.After, MaxContextChars)
	case len(w.Q) > MaxQueryTextBytes:
		return ParamQ, fmt.Sprintf("q is over %d bytes", MaxQueryTextBytes)
	case !utf8.ValidString(w.Q):
		return ParamQ, "q is not valid UTF-8"
	}
	for _, r := range w.Q {
		if unicode.IsControl(r) {
			return ParamQ, "q contains a control character"
		}
	}
	return "", ""
}

// EncodeCursor returns "fw1." followed by the unpadded base64url encoding
// of the window's compact JSON. It does not validate: call w.Validate
// first; DecodeCursor rejects the cursor of an invalid WindowRef.
func EncodeCursor(w WindowRef) string {
	body := cursorBody{
		C: w.Record.ConnectionID, S: w.Record.Stream, R: w.Record.RecordID,
		F: w.Field, O: w.Offset, L: w.Limit, Q: w.Q, B: w.Before, A: w.After,
	}
	data, err := json.Marshal(body)
	if err != nil { // cannot happen: strings and ints only
		panic(fmt.Sprintf("handles: marshal cursor: %v", err))
	}
	return CursorPrefix + base64.RawURLEncoding.EncodeToString(data)
}

// DecodeCursor parses a cursor made by EncodeCursor. It is strict: the
// prefix and version must match, the cursor is at most MaxCursorBytes, the
// payload must be canonical unpadded base64url of the exact JSON that
// EncodeCursor writes (no unknown keys, no reordering, no whitespace), and
// every field is validated again. Errors are *Error with Code
// CodeInvalidCursor and Param "cursor".
func DecodeCursor(s string) (WindowRef, error) {
	return decodeCursor(s, ParamCursor)
}

func decodeCursor(s, param string) (WindowRef, error) {
	if len(s) > MaxCursorBytes {
		return WindowRef{}, cursorErr(param, "cursor is %d bytes, over the %d-byte limit", len(s), MaxCursorBytes)
	}
	payload, ok := strings.CutPrefix(s, CursorPrefix)
	if !ok {
		if strings.HasPrefix(s, "fw") && strings.Contains(s, ".") {
			return WindowRef{}, cursorErr(param, "cursor version %s is not supported (expected %q)", quote(s[:strings.IndexByte(s, '.')+1]), CursorPrefix)
		}
		return WindowRef{}, cursorErr(param, "%s is not a field-window cursor (they start with %q)", quote(s), CursorPrefix)
	}
	if payload == "" {
		return WindowRef{}, cursorErr(param, "cursor is empty after %q", CursorPrefix)
	}
	for i := 0; i < len(payload); i++ {
		c := payload[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return WindowRef{}, cursorErr(param, "cursor contains a character outside base64url")
		}
	}
	data, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return WindowRef{}, cursorErr(param, "cursor is not valid base64url")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var body cursorBody
	if err := dec.Decode(&body); err != nil {
		return WindowRef{}, cursorErr(param, "cursor does not hold a field-window selector")
	}
	w := WindowRef{
		Record: RecordRef{ConnectionID: body.C, Stream: body.S, RecordID: body.R},
		Field:  body.F, Offset: body.O, Limit: body.L, Q: body.Q, Before: body.B, After: body.A,
	}
	if err := w.Validate(); err != nil {
		if e, ok := err.(*Error); ok {
			e.Param = param
		}
		return WindowRef{}, err
	}
	if EncodeCursor(w) != s {
		return WindowRef{}, cursorErr(param, "cursor is not in canonical form (it was altered)")
	}
	return w, nil
}

// FieldWindowURI returns "pdpp://field-window/" followed by the window's
// cursor. It belongs in hidden _meta only, never in model-visible output.
func FieldWindowURI(w WindowRef) string {
	return FieldWindowURIPrefix + EncodeCursor(w)
}

// ParseFieldWindowURI is the inverse of FieldWindowURI. A wrong prefix is
// CodeInvalidURI; a bad cursor is CodeInvalidCursor; both with Param "uri".
func ParseFieldWindowURI(uri string) (WindowRef, error) {
	if len(uri) > len(FieldWindowURIPrefix)+MaxCursorBytes {
		return WindowRef{}, uriErr("field-window URI is over the %d-byte limit", len(FieldWindowURIPrefix)+MaxCursorBytes)
	}
	cursor, ok := strings.CutPrefix(uri, FieldWindowURIPrefix)
	if !ok {
		return WindowRef{}, uriErr("%s is not a pdpp://field-window/ URI; read the field with read_record_field instead", quote(uri))
	}
	return decodeCursor(cursor, ParamURI)
}
