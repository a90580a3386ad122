package evidence

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/handles"
)

// Result detail levels, the values of the data tools' `detail` argument.
const (
	DetailCompact = "compact"
	DetailFull    = "full"
)

// Preview stands in, in compact structured output, for a value that would
// break the reply budget: its kind, its total size, the shown part (text
// and JSON only; never binary), a truncation flag and the exact call that
// reads the rest.
type Preview struct {
	Truncated bool   `json:"truncated"`
	Kind      string `json:"kind"` // text, binary or json
	Preview   string `json:"preview,omitempty"`
	Chars     int    `json:"chars,omitempty"`
	Bytes     int    `json:"bytes,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	// Items counts the members or elements of a JSON value over
	// HugeJSONBytes, up to MaxCountedItems (ItemsCapped: more).
	Items       int          `json:"items,omitempty"`
	ItemsCapped bool         `json:"items_capped,omitempty"`
	Next        Continuation `json:"next"`
}

// compactValue returns raw itself when it is small enough to keep, else a
// Preview of it. id and field name the record field raw is, for the
// continuation: a read_record_field window for text and binary-like text, a
// full-detail fetch of the field for large JSON. Blob references are small
// objects and stay as they are: they never carry the bytes. cache is the
// record's field summaries (nil: none kept).
func compactValue(id, field string, raw json.RawMessage, maxChars int, cache fieldSummaries) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return raw, false
	}
	switch raw[0] {
	case '"':
		// A string of at most maxChars characters needs no decoding to keep.
		if len(raw) <= maxChars && !looksBinaryRaw(raw) {
			return raw, false
		}
		switch s := cache.text(field, raw, maxChars); {
		case s.binaryLike:
			return mustMarshal(s.preview(ReadFieldCall(id, field, 0, 0, ""))), true
		case s.cut:
			return mustMarshal(s.preview(ReadFieldCall(id, field, maxChars, 0, ""))), true
		}
		return raw, false
	case '{', '[':
		if len(raw) <= InlineJSONBytes {
			return raw, false
		}
		if raw[0] == '{' {
			if _, ok := blobRef(raw); ok {
				return raw, false
			}
		}
		return jsonPreview(raw, maxChars, fetchFieldFullCall(id, field)), true
	}
	return raw, false
}

// jsonPreview is the Preview of the large JSON value raw: its size, its
// first maxChars bytes and next, the call that reads it whole; over
// HugeJSONBytes, an object's or array's member or element count too. Only
// the shown bytes are copied.
func jsonPreview(raw []byte, maxChars int, next Continuation) json.RawMessage {
	p := Preview{Truncated: true, Kind: "json", Preview: clipBytes(string(raw[:min(len(raw), maxChars+utf8.UTFMax)]), maxChars), Bytes: len(raw), Next: next}
	if t := bytes.TrimSpace(raw); len(t) > HugeJSONBytes && (t[0] == '{' || t[0] == '[') {
		p.Items, p.ItemsCapped = countItems(t, MaxCountedItems)
	}
	return mustMarshal(p)
}

// StringPreview is the Preview standing in for the long string s, whose
// whole value next shows: binary-like text (a data: URI or a long run of
// base64 alphabet) keeps only its size and media type, never a piece of
// the encoding; other text keeps its first maxChars characters.
func StringPreview(s string, maxChars int, next Continuation) Preview {
	return summarizeText(s, maxChars).preview(next)
}

// preview is the Preview of the string s summarizes, whose whole value
// next shows.
func (s stringSummary) preview(next Continuation) Preview {
	if s.binaryLike {
		return Preview{Truncated: true, Kind: "binary", Chars: s.chars, Bytes: s.bytes, MediaType: s.mediaType, Next: next}
	}
	return Preview{Truncated: true, Kind: "text", Preview: s.prefix, Chars: s.chars, Next: next}
}

// looksBinaryRaw is a cheap pre-check on an encoded string: a data: URI or
// a long run with no space is decoded and classified; other text is not.
func looksBinaryRaw(raw []byte) bool {
	return bytes.HasPrefix(raw, []byte(`"data:`)) ||
		(len(raw) >= BinaryLikeMinChars && bytes.IndexByte(raw, ' ') < 0)
}

// clipBytes cuts s to at most n bytes on a character boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutBytes(s, n) + Ellipsis
}

func mustMarshal(v any) json.RawMessage {
	b, err := MarshalNoEscape(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// objectWriter builds a JSON object member by member into one buffer,
// each name as encoding/json writes it (appendName).
type objectWriter struct{ buf []byte }

func (w *objectWriter) member(key string, val []byte) {
	sep := byte(',')
	if len(w.buf) == 0 {
		sep = '{'
		if w.buf == nil {
			w.buf = make([]byte, 0, 256) // about a compact record; grown from empty it cost query_records 40 allocations more per call (BenchmarkServerCalls)
		}
	}
	w.buf = appendName(append(w.buf, sep), key, true)
	w.buf = append(append(w.buf, ':'), val...)
}

func (w *objectWriter) bytes() []byte {
	if len(w.buf) == 0 {
		return []byte("{}")
	}
	return append(w.buf, '}')
}

// joinArray encodes already-encoded JSON values as one array.
func joinArray(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// requireObject refuses an RS body that is not a JSON object: `null`, an
// empty body, a bare value or a list.
func requireObject(body []byte, what string) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return fmt.Errorf("%s response is not a JSON object (%s)", what, clipBytes(string(body), 40))
	}
	return nil
}

// compactRecord rewrites one RS record object raw, decoded as rec, for
// compact output: every member kept in order, each value of `data` kept or
// replaced by a Preview. It returns the record, its self-contained id, how
// many values it cut and the `data` fields it replaced, in order (for
// previewedEntry).
func compactRecord(raw []byte, rec Record, stream, connectionID string, maxChars int) (json.RawMessage, string, int, []string, error) {
	ref := recordRef(rec, stream, connectionID)
	id := ref.ID()
	cut := 0
	var previewed []string
	var w objectWriter
	if rec.Data.end > 0 && rec.Data.end <= len(raw) {
		// The record's other members are walked without its data, whose
		// fields were split when it was decoded.
		raw = slices.Concat(raw[:rec.Data.start], []byte("{}"), raw[rec.Data.end:])
	}
	err := eachMember(raw, func(key string, val []byte) error {
		if key != "data" || string(bytes.TrimSpace(val)) == "null" {
			if len(val) > InlineJSONBytes {
				val = jsonPreview(val, maxChars, Continuation{Tool: ToolFetch, Arguments: map[string]any{"id": id, "detail": DetailFull}})
				cut++
			}
			w.member(key, val)
			return nil
		}
		var dw objectWriter
		for _, name := range rec.Data.order {
			v, c := compactValue(id, name, rec.Data.fields[name], maxChars, rec.summaries)
			if c {
				cut++
				previewed = append(previewed, name)
			}
			dw.member(name, v)
		}
		w.member(key, dw.bytes())
		return nil
	})
	if err != nil {
		return nil, "", 0, nil, fmt.Errorf("not a record: %w", err)
	}
	return w.bytes(), id, cut, previewed, nil
}

// JSONStringLen is the length of s encoded as a JSON string the way
// encoding/json writes it (HTML-escaped), quotes included.
func JSONStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if i+8 <= len(s) && asIsHTML(load8(s, i)) {
			n += 8
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			n += int(asciiJSONLen[c])
			i++
			continue
		}
		w, size := encodedCharLen(s, i)
		n += w
		i += size
	}
	return n
}

// encodedCharLen returns how many bytes encoding/json writes for the
// character of s at byte i, and how many bytes of s it takes.
func encodedCharLen(s string, i int) (w, size int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return int(asciiJSONLen[c]), 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		return 6, 1 // written as \ufffd
	case r == '\u2028' || r == '\u2029':
		return 6, size
	}
	return size, size
}

// cutEncoded returns the longest prefix of s, ending on a character
// boundary, whose JSON string encoding takes at most n bytes besides its
// quotes.
func cutEncoded(s string, n int) string {
	used := 0
	for i := 0; i < len(s); {
		w, size := encodedCharLen(s, i)
		if used+w > n {
			return s[:i]
		}
		used += w
		i += size
	}
	return s
}

// WireLen is the length of the JSON text raw once encoding/json writes it
// inside a reply, as mcp-go does for structuredContent: it compacts a
// json.RawMessage with HTML-safe escaping, so each <, > and & (found only
// in strings) becomes six bytes and each raw U+2028 or U+2029 six instead
// of three. raw is assumed compact.
func WireLen(raw []byte) int {
	// Counted with bytes.Count, which scans many bytes at a step; the
	// separators cannot overlap, so each occurrence is counted once.
	return len(raw) +
		5*(bytes.Count(raw, lessThan)+bytes.Count(raw, greaterThan)+bytes.Count(raw, ampersand)) +
		3*(bytes.Count(raw, lineSep)+bytes.Count(raw, paraSep))
}

// The bytes WireLen counts.
var (
	lessThan, greaterThan, ampersand = []byte("<"), []byte(">"), []byte("&")
	lineSep, paraSep                 = []byte("\u2028"), []byte("\u2029")
)

// asciiJSONLen is the encoded length of each ASCII byte in a JSON string
// as encoding/json writes it: two for the short escapes, six for \u00XX
// (other control bytes and the HTML-escaped <, >, &), one otherwise.
var asciiJSONLen = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			t[c] = 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// CapText bounds a content[] text block to max bytes as a reply carries
// it (JSON string escapes, HTML-safe ones included, quotes left out),
// saying so when it cuts, on a line of its own: what a caller appends
// starts a new line. The note promises no paging, which not every tool has.
func CapText(s string, max int) string {
	if JSONStringLen(s)-2 <= max {
		return s
	}
	note := fmt.Sprintf("\n[text cut at %d bytes to fit the reply budget; structured output carries the rest or names the call that reads it]\n", max)
	return cutEncoded(s, max-(JSONStringLen(note)-2)) + note
}

// recordRef is the identity of a listed record, with the stream and
// connection of the request filling in what the RS leaves out.
func recordRef(rec Record, stream, connectionID string) handles.RecordRef {
	return handles.RecordRef{ConnectionID: cmp.Or(rec.ConnectionId, connectionID), Stream: cmp.Or(rec.Stream, stream), RecordID: rec.Id}
}

// envelopeMembers writes the members of the records page body (decoded
// by RenderList) other than data to w, in order, each as it is or, when
// over InlineJSONBytes, as a Preview naming full; cut counts the previews.
// The walk is bounded by the size of body.
func envelopeMembers(w *objectWriter, body []byte, full Continuation) (cut int, err error) {
	err = eachMember(body, func(key string, val []byte) error {
		if key == "data" {
			return nil
		}
		if len(val) > InlineJSONBytes {
			val = jsonPreview(val, FieldValueChars, full)
			cut++
		}
		w.member(key, val)
		return nil
	})
	return cut, err
}

// SmallMembers returns the leading members of the JSON object raw whose
// encoded value is at most max bytes (cursors, flags, counts), for a
// truncation report that keeps them, as long as they take at most total
// bytes together (keys included); nil when raw is not a valid object. The
// first member of each key is kept.
func SmallMembers(raw []byte, max, total int) map[string]json.RawMessage {
	if !validJSON(raw) {
		return nil
	}
	out := map[string]json.RawMessage{}
	used := 0
	_ = eachMember(raw, func(key string, val []byte) error {
		if _, seen := out[key]; seen || len(val) > max {
			return nil
		}
		n := memberBytes(key, val)
		if used+n > total {
			return errStop
		}
		used += n
		out[key] = val
		return nil
	})
	return out
}

// Member returns the value of member key of the JSON object raw, still
// encoded, and whether raw is a valid object that has it. The walk is
// bounded by the size of raw.
func Member(raw []byte, key string) (json.RawMessage, bool) {
	if !validJSON(raw) {
		return nil, false
	}
	var out json.RawMessage
	_ = eachMember(raw, func(k string, val []byte) error {
		if k == key && out == nil {
			out = val
		}
		return nil
	})
	return out, out != nil
}
