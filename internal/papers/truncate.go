package papers

import (
	"fmt"
	"unicode/utf8"
)

// DefaultMaxChars is the character budget of summary and source text when
// max_chars is not given, and of every resource read.
const DefaultMaxChars = 50000

// cut is text after truncation.
type cut struct {
	Text      string // what is returned, marker included
	Total     int    // characters of the whole text
	Returned  int    // characters of it kept (marker excluded)
	Truncated bool
}

// truncate keeps the first max characters (runes) of s. When it cuts, it
// appends a marker line saying how many characters were shown and cut,
// followed by hint.
func truncate(s string, max int, hint string) cut {
	total := utf8.RuneCountInString(s)
	if max <= 0 || total <= max {
		return cut{Text: s, Total: total, Returned: total}
	}
	end := 0
	for range max { // total > max: every step reads a rune
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	return cut{Text: s[:end] + truncationMarker(max, total, hint), Total: total, Returned: max, Truncated: true}
}

// truncationMarker is the line appended to a text cut after max of its
// total characters.
func truncationMarker(max, total int, hint string) string {
	return fmt.Sprintf("\n\n[truncated: showing the first %d of %d characters; %d characters cut. %s]", max, total, total-max, hint)
}
