package main

import (
	"fmt"
	"regexp"
	"strings"
)

// maxFormatBytes bounds a format's max_bytes, so no declared format admits
// values larger than any id or URI the parsers take.
const maxFormatBytes = 4096

// lintFormats checks the formats map and every argument's format: each
// named format exists, applies to a string or string_array argument, and
// each declared format is well formed and used.
func lintFormats(p *problems, c *Catalog) {
	used := map[string]bool{}
	// use marks format name as used at where, or reports it undeclared.
	use := func(where, name string) bool {
		if _, ok := c.Formats[name]; !ok {
			p.addf("%s: format %q is not declared in formats (declared: %s)", where, name, strings.Join(sortedKeys(c.Formats), ", "))
			return false
		}
		used[name] = true
		return true
	}
	for _, t := range c.Tools {
		for _, a := range t.Args {
			if a.Format == "" {
				continue
			}
			where := fmt.Sprintf("tool %q arg %q", t.Name, a.Name)
			if !use(where, a.Format) {
				continue
			}
			if a.Type != typeString && a.Type != typeStringArray && !(a.Type == "" && a.unresolved) {
				p.addf("%s: format is only allowed on string and string_array arguments", where)
			}
			if len(a.Enum) > 0 {
				p.addf("%s: give either enum or format, not both", where)
			}
		}
	}
	for _, r := range c.Resources {
		for _, v := range sortedKeys(r.Formats) {
			where := fmt.Sprintf("resource %q variable %q", r.Name, v)
			if !strings.Contains(r.URITemplate, "{"+v+"}") {
				p.addf("%s: the URI template %s has no such variable", where, r.URITemplate)
			}
			use(where, r.Formats[v])
		}
	}
	for _, name := range sortedKeys(c.Formats) {
		f := c.Formats[name]
		where := fmt.Sprintf("format %q", name)
		if !namePattern.MatchString(name) {
			p.addf("%s: name must match %s", where, namePattern)
		}
		if f.MaxBytes <= 0 || f.MaxBytes > maxFormatBytes {
			p.addf("%s: max_bytes must be between 1 and %d", where, maxFormatBytes)
		}
		if strings.TrimSpace(f.Description) == "" {
			p.addf("%s: description is missing (it ends every refusal message)", where)
		}
		if f.Pattern != "" {
			if _, err := regexp.Compile(f.Pattern); err != nil {
				p.addf("%s: pattern does not compile: %v", where, err)
			} else if !strings.HasPrefix(f.Pattern, "^") || !strings.HasSuffix(f.Pattern, "$") {
				p.addf("%s: pattern must be anchored with ^ and $", where)
			}
		}
		if !used[name] {
			p.addf("%s: no argument or resource variable uses it", where)
		}
	}
}

// formatGoName is the generated variable that holds format name (the
// args template names it the same way).
func formatGoName(name string) string { return "Format" + camel(name) }
