package textnorm

import (
	"strings"
	"unicode"
)

// IsCJK reports whether r is a CJK ideograph, kana or Hangul syllable: the
// characters a snapshot separates with spaces before full-text indexing.
func IsCJK(r rune) bool {
	switch {
	case r >= 0x3400 && r <= 0x4DBF: // CJK Unified Ideographs Extension A
	case r >= 0x4E00 && r <= 0x9FFF: // CJK Unified Ideographs
	case r >= 0xF900 && r <= 0xFAFF: // CJK Compatibility Ideographs
	case r >= 0x3040 && r <= 0x309F: // Hiragana
	case r >= 0x30A0 && r <= 0x30FF: // Katakana
	case r >= 0xAC00 && r <= 0xD7AF: // Hangul syllables
	default:
		return false
	}
	return true
}

// SpaceCJK puts one space between every two adjacent CJK characters, so
// the unicode61 tokenizer indexes each of them as its own token.
func SpaceCJK(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	prev := false
	for _, r := range s {
		cur := IsCJK(r)
		if prev && cur {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = cur
	}
	return b.String()
}

// JoinCJK removes the single spaces that SpaceCJK put between CJK
// characters. Runes for which skip reports true (such as match markers) are
// looked through when deciding whether a space sits between two CJK
// characters, and are kept. A nil skip skips nothing.
func JoinCJK(s string, skip func(rune) bool) string {
	if !strings.Contains(s, " ") {
		return s
	}
	rs := []rune(s)
	neighbour := func(i, step int) rune {
		for ; i >= 0 && i < len(rs); i += step {
			if skip == nil || !skip(rs[i]) {
				return rs[i]
			}
		}
		return 0
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range rs {
		if r == ' ' && IsCJK(neighbour(i-1, -1)) && IsCJK(neighbour(i+1, 1)) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CollapseSpace trims s and turns every run of white space into one space.
func CollapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// FacetValue normalizes an author, keyword, institution, tag or venue the
// way a snapshot stores it: trimmed, lower-cased, white space collapsed.
func FacetValue(s string) string {
	return CollapseSpace(strings.ToLower(s))
}

// IsWordRune reports whether r can be part of a search term: a letter, a
// digit or a combining mark.
func IsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}
