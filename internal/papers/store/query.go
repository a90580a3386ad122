package store

import (
	"strings"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/textnorm"
)

// keptPunct are the punctuation characters kept inside a search term; the
// tokenizer splits there, so "gpt-4" becomes the phrase "gpt 4".
const keptPunct = "._+-"

// RewriteQuery turns user text into an FTS5 MATCH expression that cannot
// be a syntax error: every term is a quoted string, AND and OR (any case)
// stay operators between terms, other punctuation separates terms, and a
// run of CJK characters becomes a phrase of single characters, the way
// the snapshot indexed it. It returns "" when no term is left.
func RewriteQuery(q string) string {
	var out []string
	pendingOp := ""
	addTerm := func(term string) {
		if len(out) > 0 && pendingOp != "" {
			out = append(out, pendingOp)
		}
		pendingOp = ""
		out = append(out, `"`+term+`"`)
	}
	for _, raw := range strings.FieldsFunc(q, separates) {
		if up := strings.ToUpper(raw); up == "AND" || up == "OR" {
			if len(out) > 0 {
				pendingOp = up
			}
			continue
		}
		for _, seg := range splitCJK(raw) {
			if textnorm.IsCJK([]rune(seg)[0]) {
				addTerm(textnorm.SpaceCJK(seg))
				continue
			}
			seg = strings.Trim(seg, keptPunct)
			if seg != "" {
				addTerm(strings.ToLower(seg))
			}
		}
	}
	return strings.Join(out, " ")
}

// separates reports whether r ends a term.
func separates(r rune) bool {
	if textnorm.IsWordRune(r) {
		return false
	}
	return !strings.ContainsRune(keptPunct, r)
}

// splitCJK cuts a term where it switches between CJK and other characters.
func splitCJK(s string) []string {
	var parts []string
	start, prev := 0, false
	for i, r := range s {
		cur := textnorm.IsCJK(r)
		if i > start && cur != prev {
			parts = append(parts, s[start:i])
			start = i
		}
		prev = cur
	}
	if start < len(s) {
		parts = append(parts, s[start:])
	}
	return parts
}

// Match markers put around matches by snippet(); private-use characters
// that never occur in snapshot text.
const (
	markOpen  = '\uE000'
	markClose = '\uE001'
)

func isMark(r rune) bool { return r == markOpen || r == markClose }

// SnippetMarkdown turns a raw FTS5 snippet (matches between markOpen and
// markClose, CJK characters spaced) into markdown: CJK spacing removed,
// neighbouring matches merged into one, matches in **bold**, and the
// asterisks of the text itself escaped so only matches are bold.
func SnippetMarkdown(raw string) string {
	return snippetMarks.Replace(textnorm.JoinCJK(textnorm.CollapseSpace(raw), isMark))
}

// snippetMarks merges adjacent matches into one marked run, escapes the
// text's asterisks and bolds the runs, in one pass (so the bold markers it
// writes are not escaped).
var snippetMarks = strings.NewReplacer(
	string(markClose)+" "+string(markOpen), " ", string(markClose)+string(markOpen), "",
	"*", `\*`, string(markOpen), "**", string(markClose), "**")
