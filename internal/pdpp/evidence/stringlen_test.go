package evidence

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var lenSeeds = []string{
	"", "plain ascii text that is longer than eight bytes",
	"12345678", "1234567\"", "a<b>c&d", "\u2028\u2029 lines", "tab\tand\nnew", "café résumé 😀",
	"\xff\xfe bad", "abcdefg&hijklmno<>", strings.Repeat("x", 7) + "\x01", strings.Repeat("y", 15) + "\\", "\xe2\x80", "ab\xe2\x80\xa8cd",
}

// FuzzJSONStringLen: the measured length of any string is what
// encoding/json writes for it.
func FuzzJSONStringLen(f *testing.F) {
	for _, s := range lenSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := JSONStringLen(s); got != len(want) {
			t.Fatalf("JSONStringLen(%q) = %d, encoding/json writes %d bytes (valid UTF-8: %t)", s, got, len(want), utf8.ValidString(s))
		}
	})
}

// FuzzAppendJSONString holds the string writer of a reply's values
// (appendJSON, appendString) to the bytes MarshalNoEscape (encoding/json,
// HTML escaping off) writes for any string, valid UTF-8 or not.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text", "<mark>é</mark> & \"q\" \\", "\x00\x01\x1f\x7f\t\n\r\b\f", "\u2028\u2029…😀", "\xff\xfe\xe2\x80", "12345678\"12345678\\", strings.Repeat("abcdefgh", 5) + "\xe2\x80\xa8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := MarshalNoEscape(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSON([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: appended %s, encoding/json %s", s, got[1:], want)
		}
	})
}
