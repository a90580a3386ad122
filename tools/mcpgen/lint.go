package main

import (
	"fmt"
	"go/token"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

var (
	toolNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	// namePattern is what the name of an argument, output, resource, format
	// (the Go variable Format<Camel>) or view must look like.
	namePattern    = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	toolsetPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// lintCatalog checks everything that can be checked before schemas are
// built, adding one line per problem to p, in catalog order.
func lintCatalog(p *problems, c *Catalog, instructions string) {
	if !token.IsIdentifier(c.Package) || strings.ToLower(c.Package) != c.Package {
		p.addf("package %q must be a lower-case Go identifier", c.Package)
	}
	if strings.TrimSpace(c.ServerName) == "" {
		p.addf("server_name is missing")
	}
	if len(c.Tools) == 0 {
		p.addf("the catalog declares no tools")
	}
	lintInstructions(p, c.Budgets, instructions)

	toolNames := map[string]bool{}
	goNames := map[string]string{}
	for _, t := range c.Tools {
		where := fmt.Sprintf("tool %q", t.Name)
		p.name(where, t.Name, toolNamePattern, toolNames, "duplicate tool name")
		if other, ok := goNames[camel(t.Name)]; ok && other != t.Name {
			p.addf("%s: Go name %s collides with tool %q", where, camel(t.Name), other)
		}
		goNames[camel(t.Name)] = t.Name
		p.missing(where, "title", t.Title)
		lintDescription(p, where, t.Description, c.Budgets.MaxDescriptionBytes)
		if !toolsetPattern.MatchString(t.Toolset) {
			p.addf("%s: toolset %q is missing or not a lower-case name", where, t.Toolset)
		}
		for _, h := range t.Annotations.hints() {
			if h.v == nil {
				p.addf("%s: annotation %s must be set explicitly", where, h.name)
			}
		}
		if ro, d := t.Annotations.ReadOnlyHint, t.Annotations.DestructiveHint; ro != nil && d != nil && *ro && *d {
			p.addf("%s: a read-only tool cannot be destructive", where)
		}
		argNames := map[string]bool{}
		for _, a := range t.Args {
			lintArg(p, c.Budgets, where, a)
			if argNames[a.Name] {
				p.addf("%s arg %q: duplicate argument name", where, a.Name)
			}
			argNames[a.Name] = true
		}
		if len(t.Output) == 0 {
			p.addf("%s: output must declare at least one structuredContent property", where)
		}
		outNames := map[string]bool{}
		for _, o := range t.Output {
			ow := fmt.Sprintf("%s output %q", where, o.Name)
			p.name(ow, o.Name, namePattern, outNames, "duplicate output property")
			if o.Nullable {
				// No portable schema says "this type or null" (see Output).
				p.addf("%s is nullable; omit the key instead of sending null, and drop nullable", ow)
			}
			if !slices.Contains(outputTypes, o.Type) {
				p.addf("%s: type %q must be one of %s", ow, o.Type, strings.Join(outputTypes, ", "))
			}
			lintDescription(p, ow, o.Description, c.Budgets.MaxFieldDescriptionBytes)
		}
		lintResultBudget(p, c.Budgets, where, t)
	}

	resNames := map[string]bool{}
	for _, r := range c.Resources {
		where := fmt.Sprintf("resource %q", r.Name)
		p.name(where, r.Name, namePattern, resNames, "duplicate resource name")
		p.missing(where, "title", r.Title)
		p.missing(where, "description", r.Description)
		if err := checkURITemplate(r.URITemplate); err != nil {
			p.addf("%s: %v", where, err)
		}
	}

	if c.Budgets.MaxResourceURIBytes < 0 {
		p.addf("budgets: max_resource_uri_bytes must not be negative")
	}
	for _, r := range c.Resources {
		if prefix, _, _ := strings.Cut(r.URITemplate, "{"); len(prefix) >= c.Budgets.ResourceURIBytes() {
			p.addf("resource %q: its fixed part alone reaches max_resource_uri_bytes (%d)", r.Name, c.Budgets.ResourceURIBytes())
		}
	}
	lintToolsets(p, c)
	lintToolsetBudgets(p, c)
	lintFormats(p, c)
	lintGuidanceHomes(p, c, instructions)
	lintRepeatedSentences(p, c, instructions)
}

// lintToolsetBudgets checks that every per-toolset budget names a toolset
// of the catalog and is positive, and that budgets at the newest revision
// come with the server identity bounds they are measured with.
func lintToolsetBudgets(p *problems, c *Catalog) {
	sets := toolsetOrder(c)
	b := c.Budgets
	all := map[string]map[string]int{"max_toolset_list_bytes": b.MaxToolsetListBytes, "max_toolset_list_bytes_newest": b.MaxToolsetListBytesNewest}
	for _, key := range sortedKeys(all) {
		budgets := all[key]
		for _, name := range sortedKeys(budgets) {
			if !slices.Contains(sets, name) {
				p.addf("%s: toolset %q has no tools", key, name)
			}
			if budgets[name] <= 0 {
				p.addf("%s: budget of toolset %q must be positive", key, name)
			}
		}
	}
	newest := b.MaxToolsListBytesNewest > 0 || len(b.MaxToolsetListBytesNewest) > 0
	if newest && (b.MaxServerNameBytes <= 0 || b.MaxServerVersionBytes <= 0) {
		p.addf("budgets at the newest revision need max_server_name_bytes and max_server_version_bytes: that revision repeats the server's name and version in every result")
	}
	if b.MaxServerNameBytes < 0 || b.MaxServerVersionBytes < 0 {
		p.addf("max_server_name_bytes and max_server_version_bytes must not be negative")
	}
}

// lintGuidanceHomes checks that each guidance phrase is said at its home
// and nowhere else: not in another tool's description, argument or output
// descriptions, nor in the instructions unless they are the home.
func lintGuidanceHomes(p *problems, c *Catalog, instructions string) {
	places := guidancePlaces(c, instructions)
	for _, phrase := range sortedKeys(c.GuidanceHomes) {
		home := c.GuidanceHomes[phrase]
		where := fmt.Sprintf("guidance %q", phrase)
		if strings.TrimSpace(phrase) == "" {
			p.addf("guidance_homes: a phrase is empty")
			continue
		}
		if home != homeInstructions && !slices.ContainsFunc(c.Tools, func(t Tool) bool { return t.Name == home }) {
			p.addf("%s: home %q is neither %q nor a tool of the catalog", where, home, homeInstructions)
			continue
		}
		atHome := false
		for _, place := range places {
			if !containsFold(place.text, phrase) {
				continue
			}
			if place.owner == home {
				atHome = true
				continue
			}
			p.addf("%s belongs to %s but appears in %s", where, home, place.name)
		}
		if !atHome {
			p.addf("%s does not appear at its home %s", where, home)
		}
	}
}

// guidancePlace is one text a client reads, with the home that owns it: the
// instructions, or the tool whose description or field it is.
type guidancePlace struct{ owner, name, text string }

// guidancePlaces lists every text a client reads, in catalog order (the
// instructions, then each tool's description, argument and output
// descriptions), for the guidance and repeated-sentence rules.
func guidancePlaces(c *Catalog, instructions string) []guidancePlace {
	places := []guidancePlace{{homeInstructions, "the instructions", instructions}}
	for _, t := range c.Tools {
		places = append(places, guidancePlace{t.Name, fmt.Sprintf("tool %q description", t.Name), t.Description})
		for _, a := range t.Args {
			places = append(places, guidancePlace{t.Name, fmt.Sprintf("tool %q arg %q", t.Name, a.Name), a.Description})
		}
		for _, o := range t.Output {
			places = append(places, guidancePlace{t.Name, fmt.Sprintf("tool %q output %q", t.Name, o.Name), o.Description})
		}
	}
	return places
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func lintArg(p *problems, b Budgets, tool string, a Arg) {
	where := fmt.Sprintf("%s arg %q", tool, a.Name)
	if !namePattern.MatchString(a.Name) {
		p.addf("%s: name must match %s", where, namePattern)
	}
	if !slices.Contains(argTypes, a.Type) {
		switch {
		case a.Type == "" && a.unresolved: // the failed reference is already reported
		case a.Type == "":
			p.addf("%s: type is missing (give it, or a param whose schema has one)", where)
		default:
			p.addf("%s: type %q must be one of %s", where, a.Type, strings.Join(argTypes, ", "))
		}
		return
	}
	lintDescription(p, where, a.Description, b.MaxFieldDescriptionBytes)
	if len(a.Enum) > 0 && a.Type != typeString && a.Type != typeStringArray {
		p.addf("%s: enum is only allowed on string and string_array arguments", where)
	}
	seen := map[string]bool{}
	for _, v := range a.Enum {
		if seen[v] {
			p.addf("%s: enum value %q is repeated", where, v)
		}
		seen[v] = true
	}
	numeric := a.Type == typeInteger || a.Type == typeNumber
	if (a.Minimum != nil || a.Maximum != nil) && !numeric {
		p.addf("%s: minimum/maximum are only allowed on integer and number arguments", where)
	}
	for _, bound := range []*float64{a.Minimum, a.Maximum} {
		if bound != nil && a.Type == typeInteger && (*bound != math.Trunc(*bound) || math.Abs(*bound) > 1<<53) {
			p.addf("%s: integer bound %v is not a whole number", where, *bound)
		}
	}
	if a.Minimum != nil && a.Maximum != nil && *a.Minimum > *a.Maximum {
		p.addf("%s: minimum %v is above maximum %v", where, *a.Minimum, *a.Maximum)
	}
	if a.MaxLength != nil {
		if a.Type != typeString && a.Type != typeStringArray {
			p.addf("%s: maxLength is only allowed on string and string_array arguments", where)
		} else if *a.MaxLength <= 0 {
			p.addf("%s: maxLength must be positive", where)
		}
	}
	if a.Default != nil {
		if a.Required {
			p.addf("%s: a required argument cannot have a default", where)
		}
		if err := checkDefault(a); err != nil {
			p.addf("%s: default %v", where, err)
		}
	}
}

// checkDefault checks that a default fits the argument's own rules.
func checkDefault(a Arg) error {
	switch a.Type {
	case typeString:
		s, ok := a.Default.(string)
		if !ok {
			return fmt.Errorf("must be a string")
		}
		if len(a.Enum) > 0 && !slices.Contains(a.Enum, s) {
			return fmt.Errorf("%q is not in the enum", s)
		}
		if a.MaxLength != nil && utf8.RuneCountInString(s) > *a.MaxLength {
			return fmt.Errorf("is longer than maxLength")
		}
	case typeInteger, typeNumber:
		f, ok := number(a.Default)
		if !ok || (a.Type == typeInteger && f != math.Trunc(f)) {
			return fmt.Errorf("must be a %s", a.Type)
		}
		if (a.Minimum != nil && f < *a.Minimum) || (a.Maximum != nil && f > *a.Maximum) {
			return fmt.Errorf("is outside the bounds")
		}
	case typeBoolean:
		if _, ok := a.Default.(bool); !ok {
			return fmt.Errorf("must be a boolean")
		}
	default:
		return fmt.Errorf("is only supported on string, integer, number and boolean arguments")
	}
	return nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// lintDescription reports a description that is missing or over max bytes
// (0: no budget).
func lintDescription(p *problems, where, desc string, max int) {
	p.missing(where, "description", desc)
	if max > 0 && len(desc) > max {
		p.addf("%s: description is %d bytes, budget %d", where, len(desc), max)
	}
}

func lintInstructions(p *problems, b Budgets, instructions string) {
	if strings.TrimSpace(instructions) == "" {
		p.addf("instructions are missing (pass -instructions with a non-empty file)")
		return
	}
	if max := b.MaxInstructionsBytes; max > 0 && len(instructions) > max {
		p.addf("instructions are %d bytes, budget %d", len(instructions), max)
	}
	if min := b.MinInstructionsChars; min > 0 && utf8.RuneCountInString(instructions) < min {
		p.addf("instructions are %d characters, at least %d required", utf8.RuneCountInString(instructions), min)
	}
	head := firstChars(instructions, b.HeadChars())
	for _, phrase := range b.InstructionsMustMention {
		if !strings.Contains(head, phrase) {
			p.addf("instructions: %q does not appear within the first %d characters", phrase, b.HeadChars())
		}
	}
}

// firstChars returns the first n characters (runes) of s.
func firstChars(s string, n int) string {
	for pos := range s {
		if n == 0 {
			return s[:pos]
		}
		n--
	}
	return s
}

// lintRepeatedSentences refuses a long sentence said in more than one
// place: a tool description, an argument or output description, or the
// instructions. Cross-tool guidance belongs in one place only.
func lintRepeatedSentences(p *problems, c *Catalog, instructions string) {
	minChars := c.Budgets.LongSentence()
	first := map[string]string{} // sentence -> first place it was seen
	reported := map[string]bool{}
	for _, place := range guidancePlaces(c, instructions) {
		inPlace := map[string]bool{}
		for _, s := range sentences(place.text) {
			if utf8.RuneCountInString(s) < minChars || inPlace[s] {
				continue
			}
			inPlace[s] = true
			prev, ok := first[s]
			if !ok {
				first[s] = place.name
				continue
			}
			if !reported[s+"\x00"+place.name] {
				reported[s+"\x00"+place.name] = true
				p.addf("long sentence repeated in %s and %s: %q", prev, place.name, s)
			}
		}
	}
}

// sentences splits text at sentence ends (., !, ? or ; before white space or
// the end), blank lines and list items, collapsing runs of white space; a
// single line break inside a paragraph is white space.
func sentences(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		s := strings.Join(strings.Fields(cur.String()), " ")
		if s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	runes := []rune(text)
	for i, r := range runes {
		if r == '\n' {
			if next, _, _ := strings.Cut(string(runes[i+1:]), "\n"); paragraphStart.MatchString(next) {
				flush()
				continue
			}
		}
		cur.WriteRune(r)
		if strings.ContainsRune(".!?;", r) && (i+1 == len(runes) || unicode.IsSpace(runes[i+1])) &&
			!listMarker.MatchString(cur.String()) {
			flush()
		}
	}
	flush()
	return out
}

// listMarker matches a sentence so far that is only a list number ("2.").
var listMarker = regexp.MustCompile(`^\s*\d+[.)]$`)

// paragraphStart matches a line that starts a new paragraph or list item.
var paragraphStart = regexp.MustCompile(`^\s*(?:$|[-*+]\s|\d+[.)]\s|#)`)

// checkURITemplate parses an RFC 6570 template the way mcp-go will.
func checkURITemplate(tmpl string) (err error) {
	if strings.TrimSpace(tmpl) == "" {
		return fmt.Errorf("uri_template is missing")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("uri_template %q is not a valid URI template: %v", tmpl, r)
		}
	}()
	mcp.NewResourceTemplate(tmpl, "check")
	return nil
}

type problems struct{ list []string }

func (p *problems) addf(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// missing reports a text of where that is empty or only white space.
func (p *problems) missing(where, what, text string) {
	if strings.TrimSpace(text) == "" {
		p.addf("%s: %s is missing", where, what)
	}
}

// name reports a name that does not match pattern or that seen already
// holds (as dup says), and adds it to seen.
func (p *problems) name(where, name string, pattern *regexp.Regexp, seen map[string]bool, dup string) {
	if !pattern.MatchString(name) {
		p.addf("%s: name must match %s", where, pattern)
	}
	if seen[name] {
		p.addf("%s: %s", where, dup)
	}
	seen[name] = true
}

// lintResultBudget checks a tool's declared reply budget: positive figures,
// a ratio only with a floor, and a budget on every tool of a toolset the
// catalog says must have one.
func lintResultBudget(p *problems, b Budgets, where string, t Tool) {
	rb := t.ResultBudget
	if rb == nil {
		if slices.Contains(b.ResultBudgetToolsets, t.Toolset) {
			p.addf("%s: toolset %q requires a result_budget (bytes, or rs_body_ratio with min_bytes)", where, t.Toolset)
		}
		return
	}
	switch {
	case rb.Bytes < 0 || rb.MinBytes < 0 || rb.RSBodyRatio < 0:
		p.addf("%s: result_budget figures must not be negative", where)
	case rb.Bytes == 0 && rb.RSBodyRatio == 0:
		p.addf("%s: result_budget needs bytes or rs_body_ratio", where)
	case rb.Bytes > 0 && rb.RSBodyRatio > 0:
		p.addf("%s: result_budget takes bytes or rs_body_ratio, not both", where)
	case rb.RSBodyRatio > 0 && (rb.RSBodyRatio < 1 || rb.MinBytes == 0):
		p.addf("%s: result_budget rs_body_ratio must be at least 1 and come with min_bytes", where)
	case rb.Bytes > 0 && rb.MinBytes > 0:
		p.addf("%s: result_budget min_bytes applies only with rs_body_ratio", where)
	}
}

// lintToolsets checks tools against the declared toolsets: each tool names
// one, each declared toolset has tools, every tool of a toolset carries
// the hints it declares, and the budgets and result_budget_toolsets name
// declared toolsets. A catalog that declares none is not checked here.
func lintToolsets(p *problems, c *Catalog) {
	if len(c.Toolsets) == 0 {
		return
	}
	declared := sortedKeys(c.Toolsets)
	used := map[string]bool{}
	for _, t := range c.Tools {
		spec, ok := c.Toolsets[t.Toolset]
		if !ok {
			hint, best := "", 3 // suggest the nearest declared name within two edits
			for _, d := range declared {
				if dist := editDistance(t.Toolset, d); dist < best {
					hint, best = fmt.Sprintf("; did you mean %q?", d), dist
				}
			}
			p.addf("tool %q: toolset %q is not declared under toolsets (declared: %s)%s", t.Name, t.Toolset, strings.Join(declared, ", "), hint)
			continue
		}
		used[t.Toolset] = true
		got := t.Annotations.hints()
		for i, want := range spec.Hints.hints() {
			if g := got[i]; want.v != nil && g.v != nil && *want.v != *g.v {
				p.addf("tool %q: %s is %v, but every tool of toolset %q has %v (toolsets.%s.hints)", t.Name, g.name, *g.v, t.Toolset, *want.v, t.Toolset)
			}
		}
	}
	for _, name := range declared {
		if !used[name] {
			p.addf("toolsets: %q has no tools; remove it or give it a tool", name)
		}
	}
	for _, name := range c.Budgets.ResultBudgetToolsets {
		if _, ok := c.Toolsets[name]; !ok {
			p.addf("result_budget_toolsets: toolset %q is not declared under toolsets (declared: %s)", name, strings.Join(declared, ", "))
		}
	}
}

// editDistance is the Levenshtein distance between two short names, with
// a swap of two neighbours counted as one edit (raed -> read).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+1)
			if ra[i-1] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-1][j-1])
			}
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// lintDescriptionRules checks every tool description against the
// catalog's description_rules; api gives each operation's method and path
// for name_endpoint.
func lintDescriptionRules(p *problems, c *Catalog, api *apiDoc) {
	r := c.DescriptionRules
	for _, t := range c.Tools {
		where := fmt.Sprintf("tool %q", t.Name)
		d := strings.Join(strings.Fields(t.Description), " ")
		if ro := t.Annotations.ReadOnlyHint; ro != nil {
			if *ro && r.ReadOnlySays != "" && !strings.Contains(d, r.ReadOnlySays) {
				p.addf("%s: description does not say %q, though readOnlyHint is true (description_rules.read_only_says)", where, r.ReadOnlySays)
			}
			if !*ro && r.MutatingSays != "" && !strings.Contains(d, r.MutatingSays) {
				p.addf("%s: description does not say %q, though readOnlyHint is false (description_rules.mutating_says)", where, r.MutatingSays)
			}
		}
		if r.NameEndpoint && t.Operation != "" && api != nil {
			if op := api.ops[t.Operation]; op != nil {
				if endpoint := strings.ToUpper(op.method) + " " + op.path; !strings.Contains(d, endpoint) {
					p.addf("%s: description does not name its RS endpoint %q (description_rules.name_endpoint)", where, endpoint)
				}
			}
		}
		if len(r.PointsTo) > 0 && !slices.Contains(r.PointsTo, t.Name) &&
			!slices.ContainsFunc(r.PointsTo, func(s string) bool { return strings.Contains(d, s) }) {
			p.addf("%s: description points to none of %s, where the rules of use live (description_rules.points_to)", where, quoteAll(r.PointsTo))
		}
		for _, w := range r.Forbidden {
			if containsFold(d, w) {
				p.addf("%s: description says %q (description_rules.forbidden)", where, w)
			}
		}
	}
}

// quoteAll writes each string as a Go literal, separated by commas.
func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
