package demors

import (
	"strings"
	"unicode"
)

// span is a code-point range [start, end) of a text.
type span struct{ start, end int }

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// foldTable maps the demo data's accented Latin letters to their base letter, as FTS5's
// remove_diacritics does.
var foldTable = map[rune]rune{
	'à': 'a', 'á': 'a', 'â': 'a', 'ä': 'a', 'ã': 'a', 'å': 'a',
	'è': 'e', 'é': 'e', 'ê': 'e', 'ë': 'e',
	'ì': 'i', 'í': 'i', 'î': 'i', 'ï': 'i',
	'ò': 'o', 'ó': 'o', 'ô': 'o', 'ö': 'o', 'õ': 'o',
	'ù': 'u', 'ú': 'u', 'û': 'u', 'ü': 'u',
	'ç': 'c', 'ñ': 'n', 'ý': 'y', 'ÿ': 'y',
}

// fold lower-cases a token and strips the diacritics foldTable knows.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		r = unicode.ToLower(r)
		if b, ok := foldTable[r]; ok {
			return b
		}
		return r
	}, s)
}

// foldedTerms returns the set of folded query tokens.
func foldedTerms(tokens []string) map[string]bool {
	out := map[string]bool{}
	for _, t := range tokens {
		out[fold(t)] = true
	}
	return out
}

// termSpans returns the spans of the words of text whose folded form is a query term.
func termSpans(text []rune, terms map[string]bool) []span {
	var out []span
	for i := 0; i < len(text); {
		if !isWordRune(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isWordRune(text[j]) {
			j++
		}
		if terms[fold(string(text[i:j]))] {
			out = append(out, span{i, j})
		}
		i = j
	}
	return out
}

// markedExcerpt returns the text around the first matched span, with up to before/after
// characters of context snapped to word boundaries, matched words in <mark>…</mark> and an
// ellipsis where the field continues; the bool reports a part of the field left out.
func markedExcerpt(text []rune, spans []span, before, after int) (string, bool) {
	if len(spans) == 0 {
		return "", false
	}
	first := spans[0]
	start := max(0, first.start-before)
	end := min(len(text), first.end+after)
	if start > 0 && isWordRune(text[start-1]) {
		for start < first.start && isWordRune(text[start]) {
			start++
		}
	}
	for start < first.start && unicode.IsSpace(text[start]) {
		start++
	}
	if end < len(text) && isWordRune(text[end]) {
		for end > first.end && isWordRune(text[end-1]) {
			end--
		}
	}
	for end > first.end && unicode.IsSpace(text[end-1]) {
		end--
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	pos := start
	for _, sp := range spans {
		if sp.start < start || sp.end > end {
			continue
		}
		b.WriteString(string(text[pos:sp.start]))
		b.WriteString("<mark>")
		b.WriteString(string(text[sp.start:sp.end]))
		b.WriteString("</mark>")
		pos = sp.end
	}
	b.WriteString(string(text[pos:end]))
	if end < len(text) {
		b.WriteString("…")
	}
	return b.String(), start > 0 || end < len(text)
}

// opening returns text's first n characters cut at a word boundary, "…" if it continues.
func opening(text []rune, n int) string {
	if len(text) <= n {
		return string(text)
	}
	end := n
	for end > 0 && isWordRune(text[end]) && isWordRune(text[end-1]) {
		end--
	}
	if end == 0 {
		end = n
	}
	return strings.TrimRightFunc(string(text[:end]), unicode.IsSpace) + "…"
}
