package unseen

import (
	"bytes"
	"errors"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
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
		r, n := decodeAt(s, i)
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
		r, size := decodeAt(s, i)
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
		r := jsonwalk.Hex4(b[i+2:])
		if r < 0 {
			continue
		}
		if utf16.IsSurrogate(r) && i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			r = utf16.DecodeRune(r, jsonwalk.Hex4(b[i+8:]))
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
// document it cannot walk is escaped whole (EscapeJSON).
func ShowJSON(b []byte, keep Keep) ([]byte, int) {
	if !HasJSON(b) && (keep == nil || !HasOpenJSON(b)) {
		return b, 0
	}
	w := walker{in: b, keep: keep, out: make([]byte, 0, len(b)+256)}
	i, err := w.value(jsonwalk.SkipSpace(b, 0), false, 0)
	if err != nil || jsonwalk.SkipSpace(b, i) != len(b) {
		return EscapeJSON(b), 0
	}
	return w.out, w.shown
}

type walker struct {
	in    []byte
	out   []byte
	keep  Keep
	shown int
}

// value copies the value at w.in[i], rewriting its strings, and returns the
// index past it. Each byte is read a bounded number of times; the
// recursion is bounded by maxDepth.
func (w *walker) value(i int, kept bool, depth int) (int, error) {
	b := w.in
	if i >= len(b) || depth > maxDepth {
		return i, errJSON
	}
	switch b[i] {
	case '"':
		return w.str(i, kept)
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		obj := b[i] == '{'
		w.out = append(w.out, b[i])
		i = jsonwalk.SkipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			w.out = append(w.out, closer)
			return i + 1, nil
		}
		for {
			inner := kept
			if obj {
				if i >= len(b) || b[i] != '"' {
					return i, errJSON
				}
				end := jsonwalk.SkipString(b, i)
				key, err := jsonwalk.DecodeString(b[i:end])
				if err != nil {
					return i, errJSON
				}
				if _, err := w.str(i, kept); err != nil {
					return i, err
				}
				inner = kept || (w.keep != nil && w.keep(key))
				i = jsonwalk.SkipSpace(b, end)
				if i >= len(b) || b[i] != ':' {
					return i, errJSON
				}
				w.out = append(w.out, ':')
				i = jsonwalk.SkipSpace(b, i+1)
			}
			var err error
			if i, err = w.value(i, inner, depth+1); err != nil {
				return i, err
			}
			i = jsonwalk.SkipSpace(b, i)
			if i >= len(b) {
				return i, errJSON
			}
			if b[i] == closer {
				w.out = append(w.out, closer)
				return i + 1, nil
			}
			if b[i] != ',' {
				return i, errJSON
			}
			w.out = append(w.out, ',')
			i = jsonwalk.SkipSpace(b, i+1)
		}
	}
	end := jsonwalk.SkipValue(b, i)
	if end == i {
		return i, errJSON
	}
	w.out = append(w.out, b[i:end]...)
	return end, nil
}

// str copies the string at w.in[i]: as it is when it holds no hidden rune
// (nor, kept, SpellOpen), else decoded and written again, spelled (kept)
// or shown.
func (w *walker) str(i int, kept bool) (int, error) {
	end := jsonwalk.SkipString(w.in, i)
	q := w.in[i:end]
	if !HasJSON(q) && !(kept && HasOpenJSON(q)) {
		w.out = append(w.out, q...)
		return end, nil
	}
	s, err := jsonwalk.DecodeString(q)
	if err != nil {
		return end, errJSON
	}
	if kept {
		w.out = AppendJSONString(w.out, view(AppendSpell(nil, s)))
		return end, nil
	}
	shown, n := AppendShow(nil, s)
	w.shown += n
	w.out = AppendJSONString(w.out, view(shown))
	return end, nil
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
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
			i++
		case '\n':
			dst = append(dst, '\\', 'n')
			i++
		case '\r':
			dst = append(dst, '\\', 'r')
			i++
		case '\t':
			dst = append(dst, '\\', 't')
			i++
		default:
			r, n := decodeAt(s, i)
			switch {
			case r == utf8.RuneError && n == 1:
				dst = append(dst, `\ufffd`...)
			case hiddenHere(s, i):
				dst = appendEscape(dst, r)
			default:
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
		done = i
	}
	return append(append(dst, s[done:]...), '"')
}
