package evidence

// The byte-parallel tests below serve JSONStringLen, which weighs every
// text of a reply against its budget as encoding/json (HTML-escaped, as
// the MCP library encodes content[] text) writes it, and plainString,
// which finds the strings of an RS body that read as themselves. json v2
// measures nothing: jsontext.AppendQuote and an Encoder write the string
// (a copy the size of each text per weighing), and neither writes
// encoding/json's bytes for invalid UTF-8 (U+FFFD itself, three bytes,
// where encoding/json writes the six of \ufffd), which a text may hold.
// FuzzJSONStringLen holds JSONStringLen to encoding/json.

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
