package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// word is what a secret-like member name holds, compared after folding.
const word = "secret"

// IsSecretName reports whether a member name holds "secret" in any case:
// six runes in a row that equal it under Unicode simple case folding
// (strings.EqualFold), so ſ (long s) counts as s.
func IsSecretName(name string) bool {
	for i := range name { // each window is at most six runes: O(len(name))
		j := i
		for n := 0; n < len(word) && j < len(name); n++ {
			_, size := utf8.DecodeRuneInString(name[j:])
			j += size
		}
		if strings.EqualFold(name[i:j], word) {
			return true
		}
	}
	return false
}

// mayMention is a cheap scan that is true whenever body could hold a
// secret-like member name: the letters of "secret" in any ASCII case, a
// long s (ſ, the one non-ASCII letter that folds to one of them), or a \u
// escape of an ASCII letter or of ſ (which no usual encoder writes). False
// means none can be there, so most bodies pass without being decoded.
//
// It never allocates: ſ and backslashes are found by byte searches (in
// assembly), and "secret" by its rarest letter, c (see containsWordFold).
func mayMention(body []byte) bool {
	if bytes.Contains(body, longS) {
		return true
	}
	for rest := body; ; { // one step per backslash
		i := bytes.IndexByte(rest, '\\')
		if i < 0 {
			break
		}
		if i+5 < len(rest) && rest[i+1] == 'u' {
			if v, ok := hex4(rest[i+2 : i+6]); ok && (v < utf8.RuneSelf && unicode.IsLetter(rune(v)) || v == 'ſ') {
				return true
			}
		}
		rest = rest[i+1:]
	}
	return containsWordFold(body)
}

// longS is ſ in UTF-8.
var longS = []byte("ſ")

// wordSkip is the Horspool shift for each byte at the end of a window of
// len(word) bytes: the distance from that byte's last place in word[:5] to
// the end, in either ASCII case, or len(word) for bytes word[:5] lacks.
var wordSkip = func() (t [256]uint8) {
	for i := range t {
		t[i] = uint8(len(word))
	}
	for i := 0; i < len(word)-1; i++ {
		c := word[i]
		t[c] = uint8(len(word) - 1 - i)
		t[c-'a'+'A'] = uint8(len(word) - 1 - i)
	}
	return t
}()

// containsWordFold reports whether b holds word in any ASCII letter case.
// It looks for each c and C with a byte search (in assembly) and compares
// the six bytes around it. A body dense in c's would make that a call per
// byte, so after len(b)/16+8 candidates it hands over to wordFoldScan, which
// is linear whatever the body.
func containsWordFold(b []byte) bool {
	const at = 2 // word[at] == 'c'
	end := len(b) - (len(word) - 1 - at)
	budget := len(b)/16 + 8
	for _, c := range [2]byte{'c', 'C'} {
		for i := at; i < end; {
			j := bytes.IndexByte(b[i:end], c)
			if j < 0 {
				break
			}
			p := i + j
			if asciiEqualFold(b[p-at:p-at+len(word)], word) {
				return true
			}
			if budget--; budget < 0 {
				return wordFoldScan(b)
			}
			i = p + 1
		}
	}
	return false
}

// wordFoldScan is containsWordFold as a Horspool search: each step moves
// the window by one to six bytes, so it takes at most len(b) steps.
func wordFoldScan(b []byte) bool {
	const last = len(word) - 1
	for i := last; i < len(b); i += int(wordSkip[b[i]]) {
		if b[i]|0x20 == word[last] && asciiEqualFold(b[i-last:i+1], word) {
			return true
		}
	}
	return false
}

// asciiEqualFold reports whether b is w (lower-case ASCII letters) in any
// ASCII case.
func asciiEqualFold(b []byte, w string) bool {
	for i := 0; i < len(w); i++ {
		if b[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// hex4 decodes four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	var v rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// Has reports whether a decoded JSON value holds a secret-like member at any
// depth: whether JSON would take one out of its encoding.
func Has(v any) bool {
	raw, err := json.Marshal(v)
	_, changed := Strip(raw)
	return err == nil && changed
}

// JSON returns body without secret-like members, or body itself when it
// holds none or is not one JSON value (see Strip).
func JSON(body []byte) []byte {
	out, _ := Strip(body)
	return out
}

// Strip is JSON that also reports whether a member was taken out. Only a
// body that may name one (see mayMention) is decoded; one that does is
// re-encoded token by token, so member order and numbers stay as the RS
// wrote them.
func Strip(body []byte) ([]byte, bool) {
	if !mayMention(body) {
		return body, false
	}
	out, changed, err := filter(body)
	if err != nil || !changed {
		return body, false
	}
	return out, true
}

// errNotOneValue is filter's error for input that is not exactly one JSON
// value.
var errNotOneValue = errors.New("redact: not one JSON value")

// frame is one open container of filter's walk.
type frame struct {
	object  bool
	wantKey bool // object: the next token is a member name (or its end)
	n       int  // members or items written
}

// filter copies the JSON value in body token by token, leaving out every
// member whose name is secret-like. Its stack holds one frame per open
// container, so it is bounded by the body's nesting, never by recursion.
func filter(body []byte) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(body))
	var stack []frame
	changed, skipDepth, skipping, done := false, 0, false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil || done {
			return nil, false, errNotOneValue
		}
		if skipping {
			// The value of a dropped member: scalars end at once,
			// containers at their matching close.
			switch tok {
			case json.Delim('{'), json.Delim('['):
				skipDepth++
			case json.Delim('}'), json.Delim(']'):
				skipDepth--
			}
			if skipDepth == 0 {
				skipping = false
				if len(stack) == 0 {
					done = true
				}
			}
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if tok == json.Delim('}') {
				out.WriteByte('}')
				stack = stack[:len(stack)-1]
				done = endValue(stack)
				continue
			}
			key, _ := tok.(string)
			if IsSecretName(key) {
				changed, skipping = true, true
				continue
			}
			if top.n > 0 {
				out.WriteByte(',')
			}
			top.n++
			writeString(&out, key)
			out.WriteByte(':')
			top.wantKey = false
			continue
		}
		if top != nil && !top.object {
			if tok == json.Delim(']') {
				out.WriteByte(']')
				stack = stack[:len(stack)-1]
				done = endValue(stack)
				continue
			}
			if top.n > 0 {
				out.WriteByte(',')
			}
			top.n++
		}
		switch t := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(t))
			stack = append(stack, frame{object: t == '{', wantKey: t == '{'})
			continue
		case string:
			writeString(&out, t)
		case json.Number:
			out.WriteString(string(t))
		case bool:
			out.WriteString(strconv.FormatBool(t))
		case nil:
			out.WriteString("null")
		}
		done = endValue(stack)
	}
	if !done {
		return nil, false, errNotOneValue
	}
	return out.Bytes(), changed, nil
}

// endValue marks the innermost open object as waiting for its next member
// name after one of its values ended; it reports whether the whole document
// ended (no container open).
func endValue(stack []frame) bool {
	if len(stack) == 0 {
		return true
	}
	if top := &stack[len(stack)-1]; top.object {
		top.wantKey = true
	}
	return false
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out.Truncate(out.Len() - 1) // Encode's newline
}
