package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
)

// View is one HTML view a host renders a tool's result in (MCP Apps,
// extension io.modelcontextprotocol/ui): a ui:// resource whose document is
// assembled from Source at generate time and embedded in the generated
// package.
type View struct {
	Name        string `yaml:"name"`
	URI         string `yaml:"uri"`
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	// Source is the view's HTML document, relative to the catalog's folder.
	Source string `yaml:"source"`
	// MaxBytes bounds the assembled document; the generator refuses one
	// that leaves less than viewHeadroomPercent of it unused.
	MaxBytes      int   `yaml:"max_bytes"`
	PrefersBorder *bool `yaml:"prefers_border"`
}

// Facts of MCP Apps (specification 2026-01-26) the generated code states.
const (
	uiExtension  = "io.modelcontextprotocol/ui"
	viewMIMEType = "text/html;profile=mcp-app"
	viewScheme   = "ui://"
)

// viewHeadroomPercent is the share of a view's byte budget the assembled
// document must leave unused: a budget is a ceiling with headroom.
const viewHeadroomPercent = 5

// Placeholders a view source may hold. tablesMark, inside the one inline
// script, becomes the hidden-character tables (hiddenTablesJS); cspMark,
// the content of the document's Content-Security-Policy meta element,
// becomes a policy that allows nothing external and only the document's
// own inline script and style, by hash.
const (
	tablesMark = "/*@unseen-tables@*/"
	cspMark    = "@csp@"
)

var viewNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// builtView is a view with its assembled document.
type builtView struct {
	View
	HTML []byte
}

// File is the generated file that holds the assembled document.
func (v builtView) File() string { return "view_" + v.Name + ".html" }

// loadViews assembles every view of c, reading sources relative to dir.
// Problems (a bad name or URI, a source that cannot be read or assembled,
// a document over its budget's headroom) are returned as lint lines.
func loadViews(c *Catalog, dir string) ([]builtView, []string) {
	var p problems
	var out []builtView
	names := map[string]bool{}
	var tables string
	for _, v := range c.Views {
		where := fmt.Sprintf("view %q", v.Name)
		if !viewNamePattern.MatchString(v.Name) || names[v.Name] {
			p.addf("%s: name must be a unique lower-case name", where)
			continue
		}
		names[v.Name] = true
		if !strings.HasPrefix(v.URI, viewScheme) || len(v.URI) == len(viewScheme) || strings.ContainsAny(v.URI, " {}") {
			p.addf("%s: uri %q must be a fixed ui:// URI", where, v.URI)
		}
		if strings.TrimSpace(v.Title) == "" || strings.TrimSpace(v.Description) == "" {
			p.addf("%s: title and description are required", where)
		}
		if v.MaxBytes <= 0 {
			p.addf("%s: max_bytes is required", where)
		}
		if v.PrefersBorder == nil {
			p.addf("%s: prefers_border must be set explicitly (hosts' defaults differ)", where)
		}
		if v.Source == "" || filepath.IsAbs(v.Source) {
			p.addf("%s: source must be a path relative to the catalog", where)
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(v.Source)))
		if err != nil {
			p.addf("%s: read source: %v", where, err)
			continue
		}
		if tables == "" {
			tables = hiddenTablesJS()
		}
		doc, err := assembleView(src, tables, displayPath(filepath.Join(dir, v.Source)))
		if err != nil {
			p.addf("%s: %v", where, err)
			continue
		}
		if limit := v.MaxBytes * (100 - viewHeadroomPercent) / 100; v.MaxBytes > 0 && len(doc) > limit {
			p.addf("%s: the document is %d bytes, over %d (max_bytes %d less %d%% headroom): make it smaller",
				where, len(doc), limit, v.MaxBytes, viewHeadroomPercent)
		}
		out = append(out, builtView{View: v, HTML: doc})
	}
	for _, t := range c.Tools {
		if t.View != "" && !names[t.View] {
			p.addf("tool %q: view %q is not declared under views", t.Name, t.View)
		}
	}
	return out, p.list
}

var (
	scriptPattern = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	stylePattern  = regexp.MustCompile(`(?s)<style>(.*?)</style>`)
)

// assembleView fills a view source's placeholders. The source must be one
// UTF-8 HTML document starting with <!DOCTYPE html>, with exactly one
// inline <script> (holding tablesMark) and one <style>, no attribute on
// either, and cspMark once; the generated notice follows the doctype.
func assembleView(src []byte, tables, from string) ([]byte, error) {
	const doctype = "<!DOCTYPE html>\n"
	if !utf8.Valid(src) || !bytes.HasPrefix(src, []byte(doctype)) {
		return nil, fmt.Errorf("source must be UTF-8 and start with %q", strings.TrimSpace(doctype))
	}
	if bytes.Count(src, []byte(tablesMark)) != 1 || bytes.Count(src, []byte(cspMark)) != 1 {
		return nil, fmt.Errorf("source must hold %s and %s once each", tablesMark, cspMark)
	}
	if len(scriptPattern.FindAll(src, -1)) != 1 || bytes.Count(src, []byte("<script")) != 1 ||
		len(stylePattern.FindAll(src, -1)) != 1 || bytes.Count(src, []byte("<style")) != 1 {
		return nil, fmt.Errorf("source must hold exactly one <script> and one <style>, without attributes")
	}
	doc := bytes.Replace(src, []byte(tablesMark), []byte(tables), 1)
	script := scriptPattern.FindSubmatch(doc)[1]
	style := stylePattern.FindSubmatch(doc)[1]
	if !bytes.Contains(scriptPattern.FindSubmatch(doc)[0], []byte(tables)) {
		return nil, fmt.Errorf("%s must stand inside the <script>", tablesMark)
	}
	csp := "default-src 'none'; script-src '" + hashSource(script) + "'; style-src '" + hashSource(style) +
		"'; img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'"
	doc = bytes.Replace(doc, []byte(cspMark), []byte(csp), 1)
	notice := "<!-- Code generated by mcpgen from " + from + "; DO NOT EDIT. -->\n"
	return append([]byte(doctype+notice), doc[len(doctype):]...), nil
}

// hashSource is the CSP source expression of an inline element's text.
func hashSource(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Probes the table builder classifies code points beside: a visible letter
// and a visible symbol of category So.
const (
	probeVisible = "a"
	probeSymbol  = "\u00A9"
)

// hiddenTablesJS returns JavaScript constants that let a view show hidden
// characters exactly as package unseen does, derived by asking unseen's
// classifier (unseen.Has) about every code point, never by copying its
// ranges:
//   - HIDDEN: runes hidden standing alone (unseen.Hidden);
//   - KEEP_AFTER_VISIBLE: hidden alone, kept right after a rune not in
//     HIDDEN (presentation selectors) unless that rune is in KEEP_BLOCKERS;
//   - JOINERS: hidden alone, kept between a JOIN_LEAD and a JOIN_NEXT rune;
//   - JOIN_LEAD, JOIN_NEXT: the runes that may stand before and after a
//     kept joiner.
//
// Each range table is a flat array [first0, last0, first1, last1, …]. The
// walk is bounded: at most six probes per code point, 0x110000 code points.
func hiddenTablesJS() string {
	var hidden, keep, blockers, joiners, lead, next ranges
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue // surrogates: UTF-8 cannot carry them
		}
		s := string(r)
		if unseen.Hidden(r) {
			hidden.add(r)
			if !unseen.Has(probeVisible + s) {
				keep.add(r)
			}
			if !keep.has(r) && !unseen.Has(probeSymbol+s+probeSymbol) {
				joiners.add(r)
			}
		}
	}
	joiner, selector := "", ""
	if len(joiners) > 0 {
		joiner = string(joiners[0][0])
	}
	if len(keep) > 0 {
		selector = string(keep[0][0])
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		if joiner != "" && !unseen.Has(probeVisible+s+joiner+probeSymbol) {
			lead.add(r)
		}
		if joiner != "" && !unseen.Has(probeSymbol+joiner+s) {
			next.add(r)
		}
		if selector != "" && !unseen.Hidden(r) && unseen.Has(s+selector) {
			blockers.add(r)
		}
	}
	var b strings.Builder
	b.WriteString("// Generated by mcpgen from package unseen's classifier.\n")
	fmt.Fprintf(&b, "const MARK_OPEN = %s, MARK_CLOSE = %s;\n", strconv.Quote(unseen.MarkerOpen), strconv.Quote(unseen.MarkerClose))
	for _, t := range []struct {
		name string
		r    ranges
	}{{"HIDDEN", hidden}, {"KEEP_AFTER_VISIBLE", keep}, {"KEEP_BLOCKERS", blockers}, {"JOINERS", joiners}, {"JOIN_LEAD", lead}, {"JOIN_NEXT", next}} {
		fmt.Fprintf(&b, "const %s = [%s];\n", t.name, t.r.js())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ranges are sorted, disjoint, inclusive code point ranges.
type ranges [][2]rune

// add appends r, which must be above every rune added before.
func (rs *ranges) add(r rune) {
	if n := len(*rs); n > 0 && (*rs)[n-1][1] == r-1 {
		(*rs)[n-1][1] = r
		return
	}
	*rs = append(*rs, [2]rune{r, r})
}

func (rs ranges) js() string {
	parts := make([]string, 0, 2*len(rs))
	for _, r := range rs {
		parts = append(parts, strconv.Itoa(int(r[0])), strconv.Itoa(int(r[1])))
	}
	return strings.Join(parts, ",")
}

// toolViewMeta is the _meta of a tool that names a view.
func toolViewMeta(uri string) *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": uri}}}
}

// has reports whether r is the last rune added.
func (rs ranges) has(r rune) bool {
	n := len(rs)
	return n > 0 && rs[n-1][0] <= r && r <= rs[n-1][1]
}
