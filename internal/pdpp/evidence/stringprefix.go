package evidence

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
)

// decodeString decodes the JSON string q (quotes included) as
// encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD. A
// string with nothing to unescape (most field values) is copied as it
// stands, its bytes checked eight at a time; json v2 reads a string a byte
// at a time, which cost a fifth of fetch's CPU on a record of long texts
// (BenchmarkRenderRSBodies).
func decodeString(q []byte) (string, error) {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' && plainString(q[1:len(q)-1]) {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	err := jsonv2.Unmarshal(q, &s, rsDecodeOptions)
	return s, err
}

// plainString reports whether b, a JSON string's content, reads as itself:
// no quote, backslash or control byte, and valid UTF-8.
func plainString(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if bytesBelow(x, 0x20)|zeroBytes(x^('"'*ones))|zeroBytes(x^('\\'*ones)) != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

// hex4 is the value of the four hex digits that start s, -1 when they are
// not four hex digits.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(s[:4]), 16, 32)
	if err != nil {
		return -1
	}
	return rune(n)
}

// stringSummary is what DescribeField needs of a JSON string value: its
// first characters, its length, and whether it looks like encoded binary.
type stringSummary struct {
	prefix     string // the first max characters, decoded
	cut        bool   // the value has more than max characters
	chars      int    // characters (code points) of the decoded value
	bytes      int    // bytes of the decoded value
	binaryLike bool   // as IsBinaryLike of the decoded value
	mediaType  string // of a data: URI, as dataURIMediaType
}

// summarizeText is the summary of the decoded string s for its first max
// characters.
func summarizeText(s string, max int) stringSummary {
	shown, cut := Cut(s, max)
	sum := stringSummary{prefix: shown, cut: cut, chars: CountChars(s), bytes: len(s), binaryLike: IsBinaryLike(s)}
	if sum.binaryLike {
		sum.mediaType = dataURIMediaType(s)
	}
	return sum
}

// summarizeWhole is summarizeString by decoding the whole value q.
func summarizeWhole(q []byte, max int) stringSummary {
	s, _ := decodeString(q)
	return summarizeText(s, max)
}

// summarizeString reads the JSON string q (quotes included, from a body
// already checked as JSON) as decodeString would, keeping only its first
// max characters: a long value is walked once, never held decoded whole.
// json v2 cannot: jsontext decodes a string token whole, so a stranger's
// 50 MB text field would cost 50 MB more to show its first 240 characters
// (TestHostileValuesAreDescribedNotDecoded and the full-fetch bounds hold
// the difference); TestSummarizeStringAgreesWithWholeDecoding holds the
// answers to encoding/json's. Runs without escapes are counted in bulk;
// anything unexpected (invalid UTF-8, a raw quote or control byte, a bad
// escape) falls back to decoding the whole value. The walk is bounded by
// len(q).
func summarizeString(q []byte, max int) stringSummary {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' || len(q) <= 4*max+2 {
		return summarizeWhole(q, max) // short enough to decode whole
	}
	inner := q[1 : len(q)-1]
	if !utf8.Valid(inner) {
		return summarizeWhole(q, max)
	}
	var sum stringSummary
	var pre []byte   // the decoded prefix, up to max characters
	var head []byte  // the first 100 decoded bytes, for the data: URI check
	alphabet := true // every decoded byte is in the base64-like alphabet
	// add takes a run of decoded, valid UTF-8 text.
	add := func(run []byte) bool {
		for _, c := range run {
			if c < ' ' {
				return false // a raw control byte: not JSON, left to decodeString
			}
			if alphabet && !base64Like(c) {
				alphabet = false
			}
		}
		if len(head) < 100 {
			head = append(head, run[:min(len(run), 100-len(head))]...)
		}
		if sum.chars < max {
			i := 0
			for n := sum.chars; n < max && i < len(run); n++ {
				_, size := utf8.DecodeRune(run[i:])
				i += size
			}
			pre = append(pre, run[:i]...)
		}
		sum.chars += utf8.RuneCount(run)
		sum.bytes += len(run)
		return true
	}
	var buf [utf8.UTFMax]byte
	r := 0
	for r < len(inner) {
		next := bytes.IndexByte(inner[r:], '\\')
		if next < 0 {
			next = len(inner) - r
		}
		if next > 0 {
			run := inner[r : r+next]
			if bytes.IndexByte(run, '"') >= 0 || !add(run) {
				return summarizeWhole(q, max)
			}
			r += next
			continue
		}
		// An escape at r.
		if r+1 >= len(inner) {
			return summarizeWhole(q, max)
		}
		var dec rune
		switch inner[r+1] {
		case '"', '\\', '/':
			dec = rune(inner[r+1])
		case 'b':
			dec = '\b'
		case 'f':
			dec = '\f'
		case 'n':
			dec = '\n'
		case 'r':
			dec = '\r'
		case 't':
			dec = '\t'
		case 'u':
			rr := hex4(inner[r+2:])
			if rr < 0 {
				return summarizeWhole(q, max)
			}
			r += 4 // past the hex digits; the 2 of the escape are added below
			if utf16.IsSurrogate(rr) {
				rr1 := rune(-1)
				if r+3 < len(inner) && inner[r+2] == '\\' && inner[r+3] == 'u' {
					rr1 = hex4(inner[r+4:])
				}
				if d := utf16.DecodeRune(rr, rr1); d != unicode.ReplacementChar {
					r += 6
					rr = d
				} else {
					rr = unicode.ReplacementChar
				}
			}
			dec = rr
		default:
			return summarizeWhole(q, max)
		}
		r += 2
		enc := buf[:utf8.EncodeRune(buf[:], dec)]
		for _, c := range enc {
			if alphabet && !base64Like(c) {
				alphabet = false
			}
		}
		if len(head) < 100 {
			head = append(head, enc[:min(len(enc), 100-len(head))]...)
		}
		if sum.chars < max {
			pre = append(pre, enc...)
		}
		sum.chars++
		sum.bytes += len(enc)
	}
	sum.cut = sum.chars > max
	sum.prefix = string(pre)
	hs := string(head)
	sum.binaryLike = (strings.HasPrefix(hs, "data:") && strings.Contains(hs, ";base64,")) ||
		(sum.bytes >= BinaryLikeMinChars && alphabet)
	if sum.binaryLike {
		sum.mediaType = dataURIMediaType(hs)
	}
	return sum
}

// base64Like reports whether c is in the alphabet IsBinaryLike accepts.
func base64Like(c byte) bool {
	switch {
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9',
		c == '+', c == '/', c == '=', c == '-', c == '_', c == '\n', c == '\r':
		return true
	}
	return false
}

// The byte-parallel tests below serve JSONStringLen, which weighs every
// text of a reply as encoding/json (HTML-escaped, as the MCP library
// encodes content[] text) writes it, and plainString. json v2 measures
// nothing: jsontext.AppendQuote and an Encoder write the string (a copy
// the size of each text per weighing), and neither writes encoding/json's
// bytes for invalid UTF-8 (U+FFFD itself, three bytes, not the six of
// \ufffd), which a text may hold. FuzzJSONStringLen holds JSONStringLen
// to encoding/json.

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

// asIsHTML reports whether all eight bytes packed in x are written as
// themselves inside a JSON string with HTML-safe escaping: ASCII (top bit
// clear), not a control byte, not a quote, not a backslash, not <, > or &
// (" and & differ only in 0x04, < and > in 0x02, so each pair is one
// test).
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
