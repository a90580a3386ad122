package evidence

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis marks a cut in a preview.
const Ellipsis = "…"

// CountChars returns the number of code points in s.
func CountChars(s string) int { return utf8.RuneCountInString(s) }

// Cut returns at most n code points of s and whether anything was cut.
func Cut(s string, n int) (string, bool) {
	if n <= 0 {
		return "", s != ""
	}
	if len(s) <= n { // fast path: byte length bounds rune count
		return s, false
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i], true
		}
		count++
	}
	return s, false
}

// Clip cuts s to n code points and appends an ellipsis when it was cut.
func Clip(s string, n int) string {
	out, cut := Cut(s, n)
	if cut {
		return out + Ellipsis
	}
	return out
}

// ShowValue renders a text value in a line of model-visible text, exactly:
// as it is when that reads unambiguously, else as a JSON string literal,
// which keeps every character and shows the invisible ones. A value is
// quoted when it is empty, holds a line break, tab or other control
// character (or U+2028/U+2029), begins or ends with white space, begins
// with a double quote (it would read as the start of a literal) or ends
// with Ellipsis (it would read as a cut preview). s must be valid UTF-8,
// as every string decoded from JSON is.
func ShowValue(s string) string {
	if plainValue(s) {
		return s
	}
	return string(appendString(nil, s))
}

// plainValue reports whether ShowValue shows s as it is.
func plainValue(s string) bool {
	if s == "" || s[0] == '"' || strings.HasSuffix(s, Ellipsis) {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return false
	}
	// ASCII, most of any text, is judged eight bytes at a time (a
	// 4,500-byte ASCII text in a fifth to a seventh of the time byte by
	// byte took; plainValue was 3.4% of the server's CPU on fetch) or by
	// the byte; the rest by the rune. The walk is bounded by len(s).
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			if x := load8(s, i); x&tops == 0 {
				if bytesBelow(x, 0x20)|zeroBytes(x^(0x7f*ones)) != 0 {
					return false
				}
				i += 8
				continue
			}
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r < 0xa0 || r == '\u2028' || r == '\u2029' || r == utf8.RuneError {
			return false
		}
		i += n
	}
	return true
}

// oneLine folds whitespace runs (newlines included) into single spaces so a
// preview stays on one line of the text block.
func oneLine(s string) string {
	if isOneLine(s) {
		return s
	}
	return foldLine(s)
}

// foldLine is oneLine without its fast path: it always rebuilds s.
func foldLine(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch r {
		case '\n', '\r', '\t', ' ', '\v', '\f':
			space = true
			continue
		}
		if r < 0x20 || r == 0x7f {
			continue // drop other control characters
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// isOneLine reports whether oneLine would return s unchanged: valid UTF-8,
// no control character, no white space other than single spaces between
// words. It reads bytes; oneLine folds only ASCII white space.
func isOneLine(s string) bool {
	if s == "" {
		return true
	}
	// A leading or trailing space is folded away, a double one folded to
	// one; control bytes are dropped or folded.
	if s[0] == ' ' || s[len(s)-1] == ' ' || strings.Contains(s, "  ") {
		return false
	}
	i := 0
	for ; i+8 <= len(s); i += 8 {
		// Any of the eight bytes an ASCII control byte (below 0x20, or 0x7f).
		if x := load8(s, i); bytesBelow(x, 0x20)|zeroBytes(x^(0x7f*ones)) != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	// Invalid UTF-8 is rewritten by oneLine (as U+FFFD).
	return utf8.ValidString(s)
}

// markOpen and markClose are the match markers the RS puts in snippets.
const (
	markOpen  = "<mark>"
	markClose = "</mark>"
)

// CenterOnMark bounds a snippet to n visible code points while keeping the first
// marked match and text on both sides of it. The markers themselves are kept and
// not counted. It reports whether text was cut on either side.
func CenterOnMark(s string, n int) (string, bool) {
	s = oneLine(s)
	start := strings.Index(s, markOpen)
	if start < 0 {
		out, cut := Cut(s, n)
		if cut {
			out += Ellipsis
		}
		return out, cut
	}
	end := strings.Index(s[start:], markClose)
	if end < 0 {
		end = len(s)
	} else {
		end += start + len(markClose)
	}
	before, match, after := s[:start], s[start:end], s[end:]
	budget := max(0, n-visibleChars(match))
	beforeChars, afterChars := CountChars(before), CountChars(after)
	keepBefore := budget / 2
	keepAfter := budget - keepBefore
	if beforeChars < keepBefore {
		keepAfter += keepBefore - beforeChars
		keepBefore = beforeChars
	}
	if afterChars < keepAfter {
		keepBefore = min(beforeChars, keepBefore+keepAfter-afterChars)
		keepAfter = afterChars
	}
	cutBefore := keepBefore < beforeChars
	cutAfter := keepAfter < afterChars
	before = tailChars(before, keepBefore)
	after, _ = Cut(after, keepAfter)
	after = trimBrokenMark(after)
	var b strings.Builder
	if cutBefore {
		b.WriteString(Ellipsis)
	}
	b.WriteString(before)
	b.WriteString(match)
	b.WriteString(after)
	if cutAfter {
		b.WriteString(Ellipsis)
	}
	return b.String(), cutBefore || cutAfter
}

// visibleChars counts the code points of s, a valid UTF-8 string (as
// oneLine leaves it), that are not match markers. The markers are ASCII and
// cannot overlap one another, so taking them out takes exactly their bytes
// from the count; no string is built (FuzzVisibleChars holds it to the
// count after removing them).
func visibleChars(s string) int {
	return CountChars(s) - strings.Count(s, markOpen)*len(markOpen) - strings.Count(s, markClose)*len(markClose)
}

// tailChars returns the last n code points of s.
func tailChars(s string, n int) string {
	total := CountChars(s)
	if total <= n {
		return s
	}
	rest, _ := Cut(s, total-n)
	return s[len(rest):]
}

// trimBrokenMark removes a dangling partial or unclosed marker at the end of a cut.
func trimBrokenMark(s string) string {
	if i := strings.LastIndex(s, "<"); i >= 0 && !strings.Contains(s[i:], ">") {
		s = s[:i]
	}
	if strings.Count(s, markOpen) > strings.Count(s, markClose) {
		s += markClose
	}
	return s
}

// capBytes enforces MaxTextBytes on a rendered block, saying so when it cuts.
func capBytes(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	return cutBytes(s, MaxTextBytes) + "\n[output cut at " + strconv.Itoa(MaxTextBytes) + " bytes; page or narrow the request to see the rest]"
}

// cutBytes returns the first n bytes of s (all of s when it is shorter),
// ending on a character boundary: a character split by the cut is left out
// whole. It backs off at most utf8.UTFMax-1 bytes; bytes that are not valid
// UTF-8 before the cut stay as they are (JSON encoding replaces them).
func cutBytes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	// Back off from the cut to the start of the character it splits.
	i := n
	for i > 0 && n-i < utf8.UTFMax-1 && !utf8.RuneStart(s[i]) {
		i--
	}
	if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
		// s[i:] starts a valid character: cut before it if it does not
		// end by n.
		if i+size > n {
			return s[:i]
		}
	}
	return s[:n]
}

// noun is one when n is 1 and many otherwise, so rendered counts read
// "1 hit", "2 hits", "0 hits", never "1 hits".
func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
