package evidence

import "unicode/utf8"

// The string writing and measuring of this file stays hand-written: every
// reply is weighed against its budget before it is encoded, by the length
// encoding/json (HTML-escaped, as the MCP libraries encode) gives each
// string; jsontext.AppendQuote writes the string instead of measuring it
// (a copy the size of each text per weighing) and escapes otherwise
// (neither <, >, & nor U+2028/U+2029; an error on invalid UTF-8).
// FuzzAppendJSONString and TestJSONStringLenMatchesMarshal hold both to
// encoding/json.

// ones and tops are the byte-parallel constants: every byte 0x01, and
// every byte's top bit; eight bytes packed in a word are tested at once.
const (
	ones = 0x0101010101010101
	tops = 0x8080808080808080
)

// zeroBytes marks, in their top bits, the zero bytes of v: nonzero exactly
// when v has one.
func zeroBytes(v uint64) uint64 { return (v - ones) &^ v & tops }

// bytesBelow marks, in their top bits, the bytes of x below n (n at most
// 0x80): nonzero exactly when x has one.
func bytesBelow(x uint64, n byte) uint64 { return (x - uint64(n)*ones) &^ x & tops }

// asIs reports whether all eight bytes packed in x are written as
// themselves inside a JSON string without HTML escaping: ASCII (top bit
// clear), not a control byte, not a quote, not a backslash.
func asIs(x uint64) bool {
	return x&tops|zeroBytes(x^('"'*ones))|zeroBytes(x^('\\'*ones))|bytesBelow(x, 0x20) == 0
}

// asIsHTML is asIs for a string written with HTML-safe escaping: none of
// the eight bytes is <, > or & either (" and & differ only in 0x04, < and >
// in 0x02, so each pair is one test).
func asIsHTML(x uint64) bool {
	qa := (x ^ ('"' * ones)) &^ (0x04 * ones)
	lg := (x ^ ('<' * ones)) &^ (0x02 * ones)
	return x&tops|zeroBytes(qa)|zeroBytes(lg)|zeroBytes(x^('\\'*ones))|bytesBelow(x, 0x20) == 0
}

// load8 packs s[i:i+8] into a word, s[i] lowest (one load once compiled).
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hexDigits are the digits encoding/json writes in \u escapes.
const hexDigits = "0123456789abcdef"

// appendNoEscapeString appends s quoted as encoding/json writes a string
// with HTML escaping off (MarshalNoEscape): quote, backslash and control bytes
// escaped (\b \f \n \r \t, else \u00xx), invalid UTF-8 as \ufffd, U+2028
// and U+2029 as \u2028 and \u2029, everything else as itself. Runs that
// need nothing are copied whole, found eight bytes at a time. Bounded by
// len(s); FuzzAppendJSONString holds it to MarshalNoEscape.
func appendNoEscapeString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && asIs(load8(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
