package unseen

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// SpellOpen and SpellClose enclose the code points Spell writes out, e.g.
// "n⟦U+200B⟧1" for "n", U+200B, "1". SpellOpen is itself spelled
// (⟦U+27E6⟧) where a value holds it, so a spelled value has exactly one
// reading.
const (
	SpellOpen  = "⟦"
	SpellClose = "⟧"
	spellOpenR = '⟦'
)

// Spell returns s with each run of hidden runes (in their context, as Has
// finds them) and each SpellOpen written out as their code points between
// SpellOpen and SpellClose, e.g. "n⟦U+200B⟧1"; s itself when it holds
// neither. Unlike a marker, the form is exact: Unspell(Spell(s)) == s for
// every valid UTF-8 s. It is the form of an id, cursor, name or URL a
// model or person reads and hands back. The walk is bounded by len(s).
func Spell(s string) string {
	if !strings.Contains(s, SpellOpen) && !Has(s) {
		return s
	}
	return string(AppendSpell(make([]byte, 0, len(s)+32), s))
}

// spelledHere reports whether the rune at s[i] is written out by Spell.
func spelledHere(s string, i int) bool {
	return strings.HasPrefix(s[i:], SpellOpen) || hiddenHere(s, i)
}

// AppendSpell appends Spell(s) to dst.
func AppendSpell(dst []byte, s string) []byte {
	done := 0
	for i := 0; i < len(s); {
		if !spelledHere(s, i) {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			continue
		}
		dst = append(append(dst, s[done:i]...), SpellOpen...)
		for k := 0; i < len(s) && spelledHere(s, i); k++ {
			r, n := utf8.DecodeRuneInString(s[i:])
			if k > 0 {
				dst = append(dst, ' ')
			}
			dst = appendCodePoint(dst, r)
			i += n
		}
		dst = append(dst, SpellClose...)
		done = i
	}
	return append(dst, s[done:]...)
}

// Unspell returns s with each spelled run (SpellOpen, code points written
// U+XXXX separated by single spaces, SpellClose) replaced by those code
// points: the inverse of Spell. A run is read only when every code point
// in it is one Spell writes out (Hidden, or SpellOpen itself); any other
// text, markers included, stays as it is. s itself when it holds no
// SpellOpen; the walk is bounded by len(s).
func Unspell(s string) string {
	i := strings.Index(s, SpellOpen)
	if i < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	done := 0
	for i >= 0 {
		runes, end, ok := readSpelled(s, i+len(SpellOpen))
		if ok {
			out = append(out, s[done:i]...)
			for _, r := range runes {
				out = utf8.AppendRune(out, r)
			}
			done = end
		} else {
			end = i + len(SpellOpen)
		}
		k := strings.Index(s[end:], SpellOpen)
		if k < 0 {
			break
		}
		i = end + k
	}
	return string(append(out, s[done:]...))
}

// readSpelled reads the code points of a spelled run from s[i] (just past
// SpellOpen) and returns them and the index past SpellClose; ok is false
// when s[i:] is not such a run. Each round reads at least three bytes, so
// the walk is bounded by len(s).
func readSpelled(s string, i int) (runes []rune, end int, ok bool) {
	for {
		if !strings.HasPrefix(s[i:], "U+") {
			return nil, 0, false
		}
		i += 2
		var r rune
		n := 0
		for ; i < len(s) && n < 6; i, n = i+1, n+1 {
			d := hexDigit(s[i])
			if d < 0 {
				break
			}
			r = r<<4 | rune(d)
		}
		// appendCodePoint writes at least four upper-case digits and no
		// leading zero past them: only that form is read.
		if n < 4 || n > 4 && s[i-n] == '0' || !(Hidden(r) || r == spellOpenR) {
			return nil, 0, false
		}
		runes = append(runes, r)
		switch {
		case strings.HasPrefix(s[i:], SpellClose):
			return runes, i + len(SpellClose), true
		case i < len(s) && s[i] == ' ':
			i++
		default:
			return nil, 0, false
		}
	}
}

// hexDigit is the value of an upper-case hex digit, or -1.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// UnspellJSON returns the valid JSON text b with every string value
// unspelled (Unspell; keys stay as they are), and b itself when it holds
// no SpellOpen or is not valid JSON. Numbers keep their text.
func UnspellJSON(b []byte) []byte {
	if !HasOpenJSON(b) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return b
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(unspellValue(v)) != nil {
		return b
	}
	return bytes.TrimRight(out.Bytes(), "\n")
}

// unspellValue unspells the strings of a decoded JSON value in place; the
// recursion is as deep as the value, which encoding/json bounds (10,000
// levels) and the caller's byte bound on arguments bounds further.
func unspellValue(v any) any {
	switch t := v.(type) {
	case string:
		return Unspell(t)
	case []any:
		for i := range t {
			t[i] = unspellValue(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = unspellValue(t[k])
		}
	}
	return v
}
