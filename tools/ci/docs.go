package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// docLineBudgets caps the pages a newcomer reads first, in lines, so that
// flags, tables and past measurements go to the pages they link to.
var docLineBudgets = map[string]int{
	"README.md":          300,
	"docs/benchmarks.md": 300,
}

// checkDocs fails when a page in docLineBudgets is over its line budget, or
// when a relative link in README.md or docs/*.md names a file that does not
// exist or a heading its page does not have.
func checkDocs(root string) error {
	var problems []string
	for page, max := range docLineBudgets {
		raw, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			return err
		}
		n := 0
		for range bytes.Lines(raw) {
			n++
		}
		if n > max {
			problems = append(problems, fmt.Sprintf("%s is %d lines, over its budget of %d: move detail to a docs/ page and link it", page, n, max))
		}
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return err
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	anchors := map[string]map[string]bool{} // page path -> heading anchors, read once each
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, page)
		for _, target := range links(raw) {
			file, frag, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				p, err := url.PathUnescape(file)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: link %q is not a valid path", rel, target))
					continue
				}
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(p))
			}
			st, err := os.Stat(dest)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: link %q names a file that does not exist", rel, target))
				continue
			}
			if frag == "" || st.IsDir() || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if anchors[dest] == nil {
				b, err := os.ReadFile(dest)
				if err != nil {
					return err
				}
				anchors[dest] = headingAnchors(b)
			}
			if !anchors[dest][frag] {
				problems = append(problems, fmt.Sprintf("%s: link %q names a heading its page does not have", rel, target))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("docs:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// linkRE matches the target of an inline Markdown link or image.
var linkRE = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// links returns the relative link targets of a Markdown page outside fenced
// code blocks and inline code; absolute URLs are not followed.
func links(page []byte) []string {
	var out []string
	eachProseLine(page, func(line string) {
		for _, m := range linkRE.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			out = append(out, t)
		}
	})
	return out
}

// headingAnchors returns the anchors a Markdown renderer gives the page's
// headings: lower case, spaces to hyphens, punctuation and symbols dropped
// (letters, digits, '-' and '_' kept), a repeated anchor numbered -1, -2, ….
func headingAnchors(page []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	eachProseLine(page, func(line string) {
		text := strings.TrimLeft(line, "#")
		if len(text) == len(line) || len(line)-len(text) > 6 || text != "" && text[0] != ' ' {
			return
		}
		var b strings.Builder
		for _, r := range strings.TrimSpace(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
				b.WriteRune(unicode.ToLower(r))
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_':
				b.WriteRune(r)
			}
		}
		a := b.String()
		n := seen[a]
		seen[a]++
		if n > 0 {
			a = fmt.Sprintf("%s-%d", a, n)
		}
		out[a] = true
	})
	return out
}

// eachProseLine calls fn with each line of page outside fenced code blocks.
func eachProseLine(page []byte, fn func(string)) {
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(nil, 1<<20) // bound: one line of a docs page, 1 MiB
	fence := ""
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		fn(line)
	}
}

// codeSpan matches an inline code span, whose text is not Markdown (links
// strips them): from a backtick to the next one, or to the end of the line.
var codeSpan = regexp.MustCompile("`[^`]*(`|$)")
