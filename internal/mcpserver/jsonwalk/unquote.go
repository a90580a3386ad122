package jsonwalk

import (
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeString decodes q, one JSON string value with its quotes taken from a
// body already checked with json.Valid, exactly as json.Unmarshal into a
// string does (escapes resolved, invalid UTF-8 and lone surrogates become
// U+FFFD), without encoding/json's second validating scan. Anything it does
// not expect goes to json.Unmarshal. The walk is bounded by len(q).
func DecodeString(q []byte) (string, error) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return unmarshalString(q)
	}
	inner := q[1 : len(q)-1]
	if PlainString(inner) {
		return string(inner), nil
	}
	b := make([]byte, 0, len(inner)+2*utf8.UTFMax)
	r := 0
	for r < len(inner) {
		c := inner[r]
		switch {
		case c == '\\':
			if r+1 >= len(inner) {
				return unmarshalString(q)
			}
			switch inner[r+1] {
			case '"', '\\', '/':
				b = append(b, inner[r+1])
				r += 2
			case 'b':
				b, r = append(b, '\b'), r+2
			case 'f':
				b, r = append(b, '\f'), r+2
			case 'n':
				b, r = append(b, '\n'), r+2
			case 'r':
				b, r = append(b, '\r'), r+2
			case 't':
				b, r = append(b, '\t'), r+2
			case 'u':
				rr := Hex4(inner[r+2:])
				if rr < 0 {
					return unmarshalString(q)
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := rune(-1)
					if r+1 < len(inner) && inner[r] == '\\' && inner[r+1] == 'u' {
						rr1 = Hex4(inner[r+2:])
					}
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default:
				return unmarshalString(q)
			}
		case c == '"' || c < ' ':
			return unmarshalString(q)
		default:
			// A run up to the next escape is copied whole when it is
			// valid UTF-8, else rune by rune (invalid bytes become
			// U+FFFD, as encoding/json writes them).
			end := skipPlain(inner, r)
			if run := inner[r:end]; utf8.Valid(run) {
				b = append(b, run...)
			} else {
				for k := 0; k < len(run); {
					rr, size := utf8.DecodeRune(run[k:])
					k += size
					b = utf8.AppendRune(b, rr)
				}
			}
			r = end
		}
	}
	return string(b), nil
}

// PlainString reports whether s, a JSON string's content, needs no
// decoding: no escape, quote or control byte, and valid UTF-8.
func PlainString(s []byte) bool {
	return skipPlain(s, 0) == len(s) && utf8.Valid(s)
}

// Hex4 reads four hex digits as a rune, or returns -1.
func Hex4(s []byte) rune {
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

func unmarshalString(q []byte) (string, error) {
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}
