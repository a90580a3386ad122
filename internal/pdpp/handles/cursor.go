package handles

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
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
// explicit read_record_field arguments. The error is *mcpkit.ArgError with Code
// CodeInvalidArgument and Param naming the argument at fault (field_path,
// offset_chars, limit_chars, q, before_chars or after_chars), never
// "cursor". The record reference is checked where it was parsed.
func (w WindowRef) ValidateArgs() error {
	if param, msg := w.paramProblem(); msg != "" {
		return argErr(CodeInvalidArgument, param, msg)
	}
	return nil
}

// paramProblem names the first invalid window parameter and says what is
// wrong with it, or returns "", "".
func (w WindowRef) paramProblem() (param, msg string) {
	switch {
	case !mcptools.FormatField.Valid(w.Field): // the rule field_path arguments are validated with
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
	case strings.ContainsFunc(w.Q, unicode.IsControl):
		return ParamQ, "q contains a control character"
	}
	return "", ""
}

// EncodeCursor returns "fw1." followed by the unpadded base64url encoding
// of the window's compact JSON. It does not validate: call w.Validate
// first; DecodeCursor rejects the cursor of an invalid WindowRef.
func EncodeCursor(w WindowRef) string {
	data, _ := json.Marshal(cursorBody{C: w.Record.ConnectionID, S: w.Record.Stream, R: w.Record.RecordID,
		F: w.Field, O: w.Offset, L: w.Limit, Q: w.Q, B: w.Before, A: w.After}) // strings and ints always encode
	return CursorPrefix + base64.RawURLEncoding.EncodeToString(data)
}

// DecodeCursor parses a cursor made by EncodeCursor. It is strict: the
// prefix and version must match, the cursor is at most MaxCursorBytes, the
// payload must be canonical unpadded base64url of the exact JSON that
// EncodeCursor writes (no unknown keys, no reordering, no whitespace), and
// every field is validated again. Errors are *mcpkit.ArgError with Code
// CodeInvalidCursor and Param "cursor".
func DecodeCursor(s string) (WindowRef, error) {
	return decodeCursor(s, ParamCursor)
}

func decodeCursor(s, param string) (WindowRef, error) {
	if rest, ok := strings.CutPrefix(s, FieldWindowURIPrefix); ok {
		// A field-window URI pasted as a cursor: read it as the URI.
		w, err := parseFieldWindowPayload(rest)
		return w, withParam(err, param)
	}
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
	// Strict: a cursor is only ever the canonical encoding EncodeCursor
	// wrote. The payload is within MaxCursorBytes (s was checked above).
	data, err := decodeBase64URL(payload, MaxCursorBytes, true)
	switch {
	case errors.Is(err, errBase64Alphabet):
		return WindowRef{}, cursorErr(param, "cursor contains a character outside base64url")
	case err != nil:
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
		return WindowRef{}, withParam(err, param)
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

// ParseFieldWindowURI is the inverse of FieldWindowURI. It also accepts
// the field-window handle of the reference PDPP adapter (see
// decodeReferenceWindow). A wrong prefix is CodeInvalidURI; a bad cursor
// is CodeInvalidCursor; both with Param "uri".
func ParseFieldWindowURI(uri string) (WindowRef, error) {
	if len(uri) > len(FieldWindowURIPrefix)+MaxCursorBytes {
		return WindowRef{}, uriErr("field-window URI is over the %d-byte limit", len(FieldWindowURIPrefix)+MaxCursorBytes)
	}
	cursor, ok := strings.CutPrefix(uri, FieldWindowURIPrefix)
	if !ok {
		return WindowRef{}, uriErr("%s is not a pdpp://field-window/ URI; read the field with read_record_field instead", quote(uri))
	}
	return parseFieldWindowPayload(cursor)
}

// parseFieldWindowPayload reads what follows "pdpp://field-window/": our
// own cursor ("fw1.…") or the reference adapter's base64url JSON. Errors
// carry Param "uri".
func parseFieldWindowPayload(payload string) (WindowRef, error) {
	if strings.HasPrefix(payload, "fw") && strings.Contains(payload, ".") {
		return decodeCursor(payload, ParamURI)
	}
	return decodeReferenceWindow(payload)
}

// referenceWindow is the JSON inside the reference adapter's field-window
// handle. Pointers tell a missing key from a zero value.
type referenceWindow struct {
	V            *int    `json:"v"`
	Kind         *string `json:"kind"`
	ConnectionID *string `json:"connection_id"`
	Stream       *string `json:"stream"`
	RecordID     *string `json:"record_id"`
	FieldPath    *string `json:"field_path"`
	OffsetChars  *int    `json:"offset_chars"`
	LimitChars   *int    `json:"limit_chars"`
}

// decodeReferenceWindow decodes base64url (no padding) of
// {"v":1,"kind":"field-window","connection_id","stream","record_id",
// "field_path","offset_chars","limit_chars"}: at most MaxCursorBytes, no
// unknown keys, one JSON object, every field validated as for our own
// cursors. connection_id may be null or absent; offset_chars and
// limit_chars may be absent (RS defaults).
func decodeReferenceWindow(payload string) (WindowRef, error) {
	const what = "field-window handle"
	if payload == "" {
		return WindowRef{}, cursorErr(ParamURI, "%s is empty", what)
	}
	// Not strict: the reference adapter's handles were always read with
	// leftover bits ignored.
	data, err := decodeBase64URL(payload, MaxCursorBytes, false)
	switch {
	case errors.Is(err, errBase64TooLong):
		return WindowRef{}, cursorErr(ParamURI, "%s is %d bytes, over the %d-byte limit", what, len(payload), MaxCursorBytes)
	case errors.Is(err, errBase64Alphabet):
		return WindowRef{}, cursorErr(ParamURI, "%s contains a character outside base64url (no padding)", what)
	case err != nil:
		return WindowRef{}, cursorErr(ParamURI, "%s is not valid base64url", what)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var body referenceWindow
	if err := dec.Decode(&body); err != nil || dec.More() {
		return WindowRef{}, cursorErr(ParamURI, "%s does not hold a field-window selector", what)
	}
	switch {
	case body.V == nil || *body.V != 1:
		return WindowRef{}, cursorErr(ParamURI, "%s version is not 1", what)
	case body.Kind == nil || *body.Kind != "field-window":
		return WindowRef{}, cursorErr(ParamURI, "%s kind is not \"field-window\"", what)
	case body.Stream == nil || body.RecordID == nil || body.FieldPath == nil:
		return WindowRef{}, cursorErr(ParamURI, "%s lacks stream, record_id or field_path", what)
	}
	w := WindowRef{Record: RecordRef{Stream: *body.Stream, RecordID: *body.RecordID}, Field: *body.FieldPath}
	if body.ConnectionID != nil {
		if *body.ConnectionID == "" {
			return WindowRef{}, cursorErr(ParamURI, "%s has an empty connection_id", what)
		}
		w.Record.ConnectionID = *body.ConnectionID
	}
	if body.OffsetChars != nil {
		w.Offset = *body.OffsetChars
	}
	if body.LimitChars != nil {
		if *body.LimitChars == 0 {
			return WindowRef{}, cursorErr(ParamURI, "%s limit_chars is 0", what)
		}
		w.Limit = *body.LimitChars
	}
	if err := w.Validate(); err != nil {
		return WindowRef{}, withParam(err, ParamURI)
	}
	return w, nil
}

// Why decodeBase64URL refused a value, in the order it checks.
var (
	errBase64TooLong  = errors.New("over the size bound")
	errBase64Alphabet = errors.New("a character outside base64url (no padding)")
	errBase64Corrupt  = errors.New("not valid base64url")
)

// decodeBase64URL decodes s, unpadded base64url (RFC 4648 section 5), the
// encoding of every opaque handle this package reads: cursors, field-window
// handles and encoded record references. Before anything is decoded, s is
// refused when over maxBytes bytes (errBase64TooLong) or when it holds a
// byte outside the alphabet (errBase64Alphabet), "=" padding included: the
// stdlib decoder alone would skip "\r" and "\n". With strict, bits left over
// after the last full byte must be zero (base64.Encoding.Strict), so only
// the canonical encoding of the bytes decodes; otherwise they are ignored.
// A value the decoder still refuses is errBase64Corrupt.
func decodeBase64URL(s string, maxBytes int, strict bool) ([]byte, error) {
	if len(s) > maxBytes {
		return nil, errBase64TooLong
	}
	if !isBase64URL(s) {
		return nil, errBase64Alphabet
	}
	enc := base64.RawURLEncoding
	if strict {
		enc = enc.Strict()
	}
	data, err := enc.DecodeString(s)
	if err != nil {
		return nil, errBase64Corrupt
	}
	return data, nil
}

// isBase64URL reports whether s holds only the base64url alphabet, without
// "=" padding. One pass over s, which callers have bounded.
func isBase64URL(s string) bool {
	return !strings.ContainsFunc(s, func(c rune) bool {
		return !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	})
}
