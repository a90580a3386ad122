package mcpkit

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// fastMatcher returns a function that reports exactly what
// regexp.MustCompile(expr).MatchString reports, for the pattern shapes the
// catalogs use, or nil for any other pattern (the regexp is used then).
// Every call's arguments and ids are checked against these patterns, and a
// class-table walk costs a fraction of the regexp machine. The shapes:
//
//	^[A][B]*$            A and B ASCII classes: a table per class
//	^[^\p{Z}](.*[^\p{Z}])?$  no separator at either end, no line break
//	                     inside (the record_id rule)
//
// FuzzFastMatcher holds each to its regexp.
func fastMatcher(expr string) func(string) bool {
	if expr == noEdgeSeparatorPattern {
		return noEdgeSeparator
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) != 4 ||
		re.Sub[0].Op != syntax.OpBeginText || re.Sub[3].Op != syntax.OpEndText ||
		re.Sub[2].Op != syntax.OpStar || len(re.Sub[2].Sub) != 1 {
		return nil
	}
	first, ok1 := asciiClass(re.Sub[1])
	rest, ok2 := asciiClass(re.Sub[2].Sub[0])
	if !ok1 || !ok2 {
		return nil
	}
	return func(s string) bool {
		// A byte past ASCII (part of a rune, or not UTF-8) is in no
		// ASCII class. One step per byte of s.
		if s == "" || s[0] >= utf8.RuneSelf || !first[s[0]] {
			return false
		}
		for i := 1; i < len(s); i++ {
			if c := s[i]; c >= utf8.RuneSelf || !rest[c] {
				return false
			}
		}
		return true
	}
}

// asciiClass returns the table of a character class or literal whose runes
// are all ASCII.
func asciiClass(re *syntax.Regexp) (t [utf8.RuneSelf]bool, ok bool) {
	var ranges []rune
	switch re.Op {
	case syntax.OpCharClass:
		ranges = re.Rune
	case syntax.OpLiteral:
		if len(re.Rune) != 1 || re.Flags&syntax.FoldCase != 0 {
			return t, false
		}
		ranges = []rune{re.Rune[0], re.Rune[0]}
	default:
		return t, false
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo < 0 || hi >= utf8.RuneSelf {
			return t, false
		}
		for r := lo; r <= hi; r++ {
			t[r] = true
		}
	}
	return t, true
}

// noEdgeSeparatorPattern is the record_id rule's pattern.
const noEdgeSeparatorPattern = `^[^\p{Z}](.*[^\p{Z}])?$`

// noEdgeSeparator is noEdgeSeparatorPattern by hand: s's first and last
// runes are not separators (Unicode Z), and no line break lies between
// them ("." does not match one; a negated class does). Bytes that are not
// UTF-8 read as U+FFFD, as the regexp reads them.
func noEdgeSeparator(s string) bool {
	if s == "" {
		return false
	}
	r, n := utf8.DecodeRuneInString(s)
	if unicode.Is(unicode.Z, r) {
		return false
	}
	if n == len(s) {
		return true
	}
	last, m := utf8.DecodeLastRuneInString(s[n:])
	if unicode.Is(unicode.Z, last) {
		return false
	}
	return !strings.Contains(s[n:len(s)-m], "\n")
}
