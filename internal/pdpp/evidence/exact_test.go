package evidence

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// unmarshalString is the JSON string q as encoding/json decodes it.
func unmarshalString(q []byte) (string, error) {
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}

// readBack is what a reader takes a ShowValue rendering to mean: a JSON
// string literal decoded, anything else as it is.
func readBack(t *testing.T, shown string) string {
	t.Helper()
	if !strings.HasPrefix(shown, `"`) {
		return shown
	}
	var s string
	if err := json.Unmarshal([]byte(shown), &s); err != nil {
		t.Fatalf("quoted rendering %q is not a JSON string: %v", shown, err)
	}
	return s
}

func TestShowValueIsExact(t *testing.T) {
	cases := []struct {
		name   string
		value  string
		quoted bool
	}{
		{"plain", "Line one. Line two.", false},
		{"inner double space", "a  b", false},
		{"multi-byte", "naïve café — 東京 🙂", false},
		{"html", `<p class="x">a & b</p>`, false},
		{"crlf", "Line one.\r\nLine two.", true},
		{"blank lines", "Para one.\n\n\nPara two.", true},
		{"trailing spaces", "Line two ends with spaces.   ", true},
		{"leading spaces", "  indented", true},
		{"tabs", "\tindented tail\t", true},
		{"inner tab", "a\tb", true},
		{"lone space", " ", true},
		{"empty", "", true},
		{"no-break space at the edge", "word\u00a0", true},
		{"line separator", "a\u2028b", true},
		{"other control", "a\x07b", true},
		{"leading quote", `"quoted" start`, true},
		{"ends like a preview", "to be continued…", true},
		{"the reference RS's record", "Line one.\r\n\r\nLine two ends with spaces.   \n\tindented tail", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shown := ShowValue(tc.value)
			if quoted := strings.HasPrefix(shown, `"`) && shown != tc.value; quoted != tc.quoted {
				t.Errorf("ShowValue(%q) = %q, quoted %v, want %v", tc.value, shown, quoted, tc.quoted)
			}
			if got := readBack(t, shown); got != tc.value {
				t.Errorf("ShowValue(%q) = %q reads back as %q", tc.value, shown, got)
			}
			if strings.ContainsAny(shown, "\r\n") {
				t.Errorf("ShowValue(%q) = %q breaks the line", tc.value, shown)
			}
		})
	}
}

func TestDescribeFieldShowsWholeValuesExactly(t *testing.T) {
	values := []string{
		"Line one.\r\n\r\nLine two ends with spaces.   \n\tindented tail",
		"  edges  ", " ", "", "naïve café — 東京 🙂", "plain words",
	}
	for _, v := range values {
		raw, _ := json.Marshal(v)
		fv := describeField("cin_a/notes:n1", "body", raw, 200, nil)
		if !fv.Complete || fv.Value != v || readBack(t, fv.Line) != v {
			t.Errorf("%q: complete %v, value %q, line %q", v, fv.Complete, fv.Value, fv.Line)
		}
	}
	t.Run("a preview is the exact start, marked as cut", func(t *testing.T) {
		v := "Line one.\r\n\r\n" + strings.Repeat("x ", 300)
		raw, _ := json.Marshal(v)
		fv := describeField("cin_a/notes:n1", "body", raw, 20, nil)
		want, _ := Cut(v, 20)
		if fv.Complete || fv.Value != want {
			t.Fatalf("preview value %q, want the exact first 20 characters %q", fv.Value, want)
		}
		prefix := ShowValue(want) + Ellipsis + " ["
		if !strings.HasPrefix(fv.Line, prefix) || !strings.Contains(fv.Line, "chars in all; read on: read_record_field") {
			t.Fatalf("preview line %q does not start with %q and name its continuation", fv.Line, prefix)
		}
	})
}

// TestSummarizeStringAgreesWithWholeDecoding checks the walk that keeps
// only a long value's first characters against decoding it whole.
func TestSummarizeStringAgreesWithWholeDecoding(t *testing.T) {
	long := strings.Repeat("Line one.\r\n\r\nLine two ends with spaces.   \n\tindented tail — 東京 🙂 <p>&amp;</p> ", 40)
	b64 := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", 40)
	cases := []struct {
		name string
		q    string // a JSON string literal
	}{
		{"escaped text", jsonLiteral(long)},
		{"raw multi-byte, no escapes", `"` + strings.Repeat("naïve café 東京 ", 200) + `"`},
		{"unicode escapes and surrogate pairs", `"` + strings.Repeat(`caf\u00e9 \ud83d\ude42 \/ \"q\" `, 200) + `"`},
		{"lone surrogate", `"` + strings.Repeat(`a\ud800b `, 300) + `"`},
		{"invalid UTF-8", "\"" + strings.Repeat("a\xffb ", 400) + "\""},
		{"base64", jsonLiteral(b64)},
		{"base64 with line breaks", jsonLiteral(strings.Repeat(b64[:76]+"\n", 30))},
		{"data URI", jsonLiteral("data:image/png;base64," + b64)},
	}
	for _, tc := range cases {
		for _, max := range []int{1, 20, 200, 5000} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, max), func(t *testing.T) {
				s, err := unmarshalString([]byte(tc.q))
				if err != nil {
					t.Fatal(err)
				}
				shown, cut := Cut(s, max)
				want := stringSummary{prefix: shown, cut: cut, chars: CountChars(s), bytes: len(s), binaryLike: IsBinaryLike(s)}
				if want.binaryLike {
					want.mediaType = dataURIMediaType(s)
				}
				if got := summarizeString([]byte(tc.q), max); got != want {
					t.Errorf("summarizeString = %+v\nwant             %+v", brief(got), brief(want))
				}
			})
		}
	}
}

func jsonLiteral(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// brief shortens a summary's prefix for a failure message.
func brief(s stringSummary) stringSummary {
	s.prefix, _ = Cut(s.prefix, 40)
	return s
}

func TestSummarizeStringLeavesNonJSONToDecodeString(t *testing.T) {
	for _, q := range []string{"\"" + strings.Repeat("a\nb", 400) + "\"", "\"" + strings.Repeat(`a\qb`, 400) + "\""} {
		s, _ := unmarshalString([]byte(q))
		want, _ := Cut(s, 10)
		if got := summarizeString([]byte(q), 10); got.chars != CountChars(s) || got.prefix != want {
			t.Errorf("%.20q: summary %+v differs from encoding/json's %q of %d chars", q, brief(got), want, CountChars(s))
		}
	}
}

// plainValueByRune is plainValue judged rune by rune, as it first was.
func plainValueByRune(s string) bool {
	if s == "" || s[0] == '"' || strings.HasSuffix(s, Ellipsis) {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// FuzzPlainValue: the byte-wise plainValue agrees with the rune-wise one.
func FuzzPlainValue(f *testing.F) {
	for _, s := range []string{"", "a", " a", "a b", "é", "\u0085x", "x\u2028", "a\x7fb", "\xff", "a\u00a0", "…", "\"x", "tab\there",
		"eight by eight bytes", "12345678\x7f12345678", "1234567\x1f12345678", "12345678é\u2028345678", "12345678 abcdefg "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := plainValue(s), plainValueByRune(s); got != want {
			t.Errorf("plainValue(%q) = %t, rune by rune %t", s, got, want)
		}
	})
}
