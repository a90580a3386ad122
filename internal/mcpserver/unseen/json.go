package unseen

import (
	"bytes"
	"errors"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
)

// EscapeJSON returns the JSON text b with every hidden rune written as a
// \u escape (a surrogate pair past U+FFFF), and b itself when it holds
// none. In valid JSON a raw hidden rune stands only inside a string, so
// the decoded value is unchanged. The walk is bounded by len(b).
func EscapeJSON(b []byte) []byte {
	s := view(b)
	i := first(s, 0)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+escapeGrowth(s, i))
	done := 0
	for i >= 0 {
		r, n := utf8.DecodeRuneInString(s[i:])
		out = appendEscape(append(out, s[done:i]...), r)
		done = i + n
		i = first(s, done)
	}
	return append(out, s[done:]...)
}

// EscapedLen returns the length of EscapeJSON(b) without building it: one
// walk that finds the hidden runes and counts their escapes (6 bytes, 12
// past U+FFFF), so a caller can refuse or reserve the copy first. It is
// len(b) when b holds none. The walk is bounded by len(b).
func EscapedLen(b []byte) int {
	s := view(b)
	i := first(s, 0)
	if i < 0 {
		return len(b)
	}
	return len(b) + escapeGrowth(s, i)
}

// escapeGrowth is how many bytes escaping the hidden runes of s from its
// first one, at i, adds.
func escapeGrowth(s string, i int) int {
	n := 0
	for i >= 0 {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r > 0xFFFF {
			n += 12 - size
		} else {
			n += 6 - size
		}
		i = first(s, i+size)
	}
	return n
}

// appendEscape appends r as one JSON escape, or two for a rune past U+FFFF.
func appendEscape(dst []byte, r rune) []byte {
	if r > 0xFFFF {
		r1, r2 := utf16.EncodeRune(r)
		return appendEscape(appendEscape(dst, r1), r2)
	}
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}

// HasJSON reports whether the JSON text b may decode to a string that
// holds a hidden rune: a raw one, or a \u escape of one (counted wherever
// it stands, so an escaped joiner of an emoji sequence counts too). It
// errs only towards true, and reads b once.
func HasJSON(b []byte) bool {
	s := view(b)
	if first(s, 0) >= 0 {
		return true
	}
	for i := 0; i+5 < len(b); i++ {
		k := bytes.IndexByte(b[i:], '\\')
		if k < 0 {
			break
		}
		if i += k; i+5 >= len(b) {
			break
		}
		if b[i+1] != 'u' {
			i++ // an escape of one character: "\\" must not start another
			continue
		}
		r := hex4(b[i+2:])
		if r < 0 {
			continue
		}
		if utf16.IsSurrogate(r) && i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			r = utf16.DecodeRune(r, hex4(b[i+8:]))
		}
		if base(r) && r != '\t' && r != '\n' && r != '\r' {
			return true
		}
		i += 5
	}
	return false
}

// Keep tells ShowJSON which members hold identity (ids, cursors, names,
// calls to make): their strings, and every string nested in them, are
// spelled (Spell) rather than shown, so a client can hand them back and
// what it decodes shows every hidden character.
type Keep func(key string) bool

// HasOpenJSON reports whether the JSON text b may hold SpellOpen, raw or
// as a \u escape (so a spelled value: see Spell); it errs only towards
// true.
func HasOpenJSON(b []byte) bool {
	return bytes.Contains(b, []byte(SpellOpen)) || bytes.Contains(b, []byte(`\u27`))
}

// maxDepth bounds the nesting ShowJSON walks; a deeper document is
// escaped instead (EscapeJSON).
const maxDepth = 256

var errJSON = errors.New("unseen: not valid JSON")

// ShowJSON returns the valid JSON text b with every string that holds a
// hidden rune rewritten: with markers (Show), or, under a member that keep
// names, spelled (Spell, which also spells SpellOpen). Keys are shown. It
// also returns how many hidden runes it replaced by markers. b comes back
// as it is when it holds neither a hidden rune (HasJSON) nor SpellOpen; a
// document it cannot walk is escaped whole (EscapeJSON). The walk is one
// pass of a pooled jsontext.Decoder (jsonpool) over b, read as encoding/json
// reads it, copying every value but the strings it
// rewrites as b spells it (white space between tokens left out).
func ShowJSON(b []byte, keep Keep) ([]byte, int) {
	if !HasJSON(b) && (keep == nil || !HasOpenJSON(b)) {
		return b, 0
	}
	d := jsonpool.Get(b)
	defer jsonpool.Put(d)
	w := walker{dec: d, keep: keep, out: make([]byte, 0, len(b)+256)}
	if err := w.value(false); err != nil {
		return EscapeJSON(b), 0
	}
	if _, err := w.dec.ReadToken(); err != io.EOF { // nothing but white space may follow
		return EscapeJSON(b), 0
	}
	return w.out, w.shown
}

type walker struct {
	dec   *jsonpool.Reader
	out   []byte
	keep  Keep
	shown int
}

// value copies the next value of w.dec, rewriting its strings. The
// recursion is bounded by maxDepth.
func (w *walker) value(kept bool) error {
	d := w.dec
	switch kind := d.PeekKind(); kind {
	case '"':
		q, err := d.ReadValue()
		if err != nil {
			return errJSON
		}
		return w.str(q, kept)
	case '{', '[':
		if d.StackDepth() >= maxDepth {
			return errJSON
		}
		if _, err := d.ReadToken(); err != nil {
			return errJSON
		}
		closer := jsontext.Kind('}')
		if kind == '[' {
			closer = ']'
		}
		w.out = append(w.out, byte(kind))
		for n := 0; d.PeekKind() != closer; n++ { // each turn reads a value: bounded by len(b)
			if n > 0 {
				w.out = append(w.out, ',')
			}
			inner := kept
			if kind == '{' {
				q, err := d.ReadValue()
				if err != nil {
					return errJSON
				}
				key, _ := jsontext.AppendUnquote(nil, q) // U+FFFD for invalid UTF-8, as encoding/json
				if err := w.str(q, kept); err != nil {
					return err
				}
				inner = kept || (w.keep != nil && w.keep(string(key)))
				w.out = append(w.out, ':')
			}
			if err := w.value(inner); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return errJSON
		}
		w.out = append(w.out, byte(closer))
		return nil
	}
	v, err := d.ReadValue()
	if err != nil {
		return errJSON
	}
	w.out = append(w.out, v...)
	return nil
}

// str copies the quoted string q: as it is when it holds no hidden rune
// (nor, kept, SpellOpen), else decoded and written again, spelled (kept)
// or shown.
func (w *walker) str(q []byte, kept bool) error {
	if !HasJSON(q) && !(kept && HasOpenJSON(q)) {
		w.out = append(w.out, q...)
		return nil
	}
	b, _ := jsontext.AppendUnquote(nil, q) // U+FFFD for invalid UTF-8, as encoding/json
	s := string(b)
	if kept {
		w.out = AppendJSONString(w.out, view(AppendSpell(nil, s)))
		return nil
	}
	shown, n := AppendShow(nil, s)
	w.shown += n
	w.out = AppendJSONString(w.out, view(shown))
	return nil
}

// AppendJSONString appends s as a JSON string: ", \ and controls escaped
// as encoding/json escapes them, every other hidden rune as a \u escape,
// invalid UTF-8 as \ufffd, everything else as it is (no HTML escaping).
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	done := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= space && c < utf8.RuneSelf && c != '"' && c != '\\' && c != 0x7F {
			i++
			continue
		}
		dst = append(dst, s[done:i]...)
		n := 1
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			var r rune
			r, n = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				dst = append(dst, `\ufffd`...)
			case hiddenHere(s, i):
				dst = appendEscape(dst, r)
			default:
				dst = append(dst, s[i:i+n]...)
			}
		}
		i += n
		done = i
	}
	return append(append(dst, s[done:]...), '"')
}

// hex4 is the rune the four hex digits at the start of s spell, -1 when
// they are not four hex digits. HasJSON reads a \u escape with it where it
// stands, without unquoting the string around it, to stay one cheap read of
// a document that mostly holds no escape (jsontext unquotes whole strings
// only).
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
