package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/templates"
)

// fileData is what the templates see. Texts that land in Go source are
// turned into literals by the quote function of the template.
type fileData struct {
	*Catalog                // Tools, Toolsets, Views and PackageDoc are shadowed below
	KitImport        string // import path of the mcpkit runtime
	Source           string
	PackageDoc       string
	InstructionsExpr string
	Tools            []toolData
	Toolsets         []string
	ToolsetGroups    []toolsetGroup
	NeedJSON         bool // an Args struct holds json.RawMessage
	NeedKit          bool // a Validate method calls mcpkit
	ToolNameBytes    int  // longest tool name
	FP               footprint
	// LegacyRevision and NewestRevision are the revisions the tools/list budgets
	// hold at: the last with an initialize handshake (and earlier), the newest.
	LegacyRevision, NewestRevision string
	ResultBudgets                  []resultBudgetRow
	Views                          []builtView
	// UIExtension and ViewMIMEType are the MCP Apps extension id and the
	// mime type of its views.
	UIExtension, ViewMIMEType string
	// RSClientImport, RSOps and Calls are the generated mapping of
	// arguments to RS operations (rscalls.go); Helpers and
	// NumberConstraint the setters it calls.
	RSClientImport   string
	RSOps            []*rsOp
	Calls            []toolCall
	Helpers          []string
	NumberConstraint string
}

// rsCallsFile is the generated mapping of arguments to RS operations.
const rsCallsFile = "rscalls.go"

// resultBudgetRow is one tool's declared default reply budget.
type resultBudgetRow struct {
	ResultBudget
	Tool  string
	Ratio string // Go float literal, "" when the budget is fixed
}

// Text is the budget as the footprint table states it.
func (r resultBudgetRow) Text() string {
	if r.Ratio != "" {
		return r.Ratio + "× the RS body, at least " + strconv.Itoa(r.MinBytes)
	}
	return strconv.Itoa(r.Bytes)
}

type toolData struct {
	Tool                           // Args is shadowed by the rendered arguments
	Camel, ArgsType, OperationNote string
	InputLit, OutputLit            string
	HasDefaults                    bool
	Args                           []argData
}

type argData struct {
	Arg                            // Format is shadowed below
	GoName, GoType, GoBase, Tag    string
	Pointer                        bool
	RangeCond, RangeMsg, ValueExpr string
	DefaultLit                     string
	Format                         string // Go variable of the format, or ""
	// MaxBytes is the catalog-wide byte bound of a string (or array item)
	// with no enum, maxLength or format; MaxItems the item bound of an
	// array. 0: none.
	MaxBytes, MaxItems int
}

// stringCheck is what the args template's "stringChecks" renders: the
// enum, max_length and format checks of one string value of an argument.
type stringCheck struct {
	Tool  string
	Arg   argData
	Value string // Go expression of the value, e.g. "a.Stream" or "v"
}

type toolsetGroup struct {
	Name  string
	Tools []string
}

// outputFiles are the files every catalog renders, each from the template
// named after it.
var outputFiles = []string{"doc.go", "tools.go", "args.go", "register.go", "views.go", footprintFile}

// footprintFile is the measured footprint, committed with the package.
const footprintFile = "FOOTPRINT.md"

// goldenFile is the pretty-printed tools/list result.
const goldenFile = "tools_list.golden.json"

func render(c *compiled) (map[string][]byte, error) {
	data := templateData(c)
	tmpl, err := template.New("mcpgen").Funcs(template.FuncMap{
		"quote":   strconv.Quote,
		"comment": comment,
		"camel":   camel,
		"raw":     rawLiteral,
		"strings": stringsLiteral,
		"budget": func(n int) string {
			if n <= 0 {
				return "none"
			}
			return strconv.Itoa(n)
		},
		"checks": func(tool string, a argData, value string) stringCheck {
			return stringCheck{Tool: tool, Arg: a, Value: value}
		},
		"joinOr": func(list []string, none string) string {
			if len(list) == 0 {
				return none
			}
			return strings.Join(list, ", ")
		},
		"byHandNote": func(list []string) string {
			if len(list) == 0 {
				return "The handler sets nothing by hand."
			}
			return "The handler sets by hand (by_hand): " + strings.Join(list, "; ") + "."
		},
	}).ParseFS(templates.FS, "*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	files := map[string][]byte{}
	outputs := outputFiles
	if data.RSClientImport != "" && len(data.Calls) > 0 {
		outputs = append(slices.Clone(outputs), rsCallsFile)
	}
	for _, name := range outputs {
		var buf bytes.Buffer
		if err := tmpl.ExecuteTemplate(&buf, name+".tmpl", data); err != nil {
			return nil, fmt.Errorf("render %s: %w", name, err)
		}
		out := buf.Bytes()
		if strings.HasSuffix(name, ".go") {
			formatted, err := format.Source(out)
			if err != nil {
				return nil, fmt.Errorf("format %s: %w\n%s", name, err, numbered(out))
			}
			out = formatted
		}
		files[name] = out
	}
	golden, err := json.MarshalIndent(toolsListResult(c.tools), "", "  ")
	if err != nil {
		return nil, err
	}
	files[goldenFile] = append(golden, '\n')
	for _, v := range c.views {
		files[v.File()] = v.HTML
	}
	return files, nil
}

func templateData(c *compiled) *fileData {
	cat := c.catalog
	doc := cat.PackageDoc
	if doc == "" {
		doc = fmt.Sprintf("is the MCP tool surface of server %s, generated by mcpgen from %s: typed arguments, schemas, tool definitions and registration.", cat.ServerName, c.source)
	}
	d := &fileData{
		Catalog:          cat,
		KitImport:        c.kitImport,
		Source:           c.source,
		PackageDoc:       "Package " + cat.Package + " " + doc,
		InstructionsExpr: multilineLiteral(c.instructions),
		FP:               c.footprint,
		Views:            c.views,
		LegacyRevision:   mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		NewestRevision:   mcp.LATEST_PROTOCOL_VERSION,
		UIExtension:      uiExtension,
		ViewMIMEType:     viewMIMEType,
	}
	if c.rsclientImport != "" {
		d.RSClientImport, d.RSOps, d.Calls = c.rsclientImport, c.rsOps, c.calls
		var number bool
		d.Helpers, number = helpersUsed(c.calls)
		if number {
			d.NumberConstraint = numberConstraint
		}
	}
	d.NeedKit = len(cat.Formats) > 0
	d.Toolsets = toolsetOrder(cat)
	for _, set := range d.Toolsets {
		g := toolsetGroup{Name: set}
		for _, t := range cat.Tools {
			if t.Toolset == set {
				g.Tools = append(g.Tools, t.Name)
			}
		}
		d.ToolsetGroups = append(d.ToolsetGroups, g)
	}
	for _, t := range cat.Tools {
		d.ToolNameBytes = max(d.ToolNameBytes, len(t.Name))
		td := toolData{
			Tool:      t,
			Camel:     camel(t.Name),
			ArgsType:  camel(t.Name) + "Args",
			InputLit:  rawLiteral(string(c.schemas[t.Name].input)),
			OutputLit: rawLiteral(string(c.schemas[t.Name].output)),
		}
		if t.Operation != "" {
			td.OperationNote = " (OpenAPI operation " + t.Operation + ")"
		}
		for _, a := range t.Args {
			ad := argTemplateData(a)
			ad.applyCatalogBounds(cat.Budgets)
			td.HasDefaults = td.HasDefaults || ad.DefaultLit != ""
			d.NeedJSON = d.NeedJSON || ad.GoType == rawMessageGoType
			d.NeedKit = d.NeedKit || ad.checks()
			td.Args = append(td.Args, ad)
		}
		d.Tools = append(d.Tools, td)
		if rb := t.ResultBudget; rb != nil {
			row := resultBudgetRow{ResultBudget: *rb, Tool: t.Name}
			if rb.RSBodyRatio > 0 {
				row.Ratio = strconv.FormatFloat(rb.RSBodyRatio, 'f', -1, 64)
			}
			d.ResultBudgets = append(d.ResultBudgets, row)
		}
	}
	return d
}

func argTemplateData(a Arg) argData {
	f := fieldFor(a)
	ad := argData{
		Arg:     a,
		GoName:  f.name,
		GoType:  f.goType,
		GoBase:  strings.TrimPrefix(f.goType, "*"),
		Tag:     f.tag,
		Pointer: f.pointer,
	}
	if a.Format != "" {
		ad.Format = formatGoName(a.Format)
	}
	if a.Type == typeInteger || a.Type == typeNumber {
		ad.RangeCond, ad.RangeMsg, ad.ValueExpr = rangeCheck(a, f)
	}
	if a.Default != nil {
		ad.DefaultLit = defaultLiteral(a.Default)
	}
	return ad
}

// applyCatalogBounds sets the catalog-wide argument bounds of b on a string
// or string array argument that declares no tighter bound of its own.
func (a *argData) applyCatalogBounds(b Budgets) {
	if a.Type != typeString && a.Type != typeStringArray {
		return
	}
	if len(a.Enum) == 0 && a.MaxLength == nil && a.Format == "" {
		a.MaxBytes = b.MaxArgumentBytes
	}
	if a.Type == typeStringArray {
		a.MaxItems = b.MaxArgumentItems
	}
}

// checks reports whether Validate emits code for this argument.
func (a argData) checks() bool {
	switch a.Type {
	case typeString, typeStringArray:
		return a.Required || len(a.Enum) > 0 || a.MaxLength != nil || a.Format != "" || a.MaxBytes > 0 || a.MaxItems > 0
	case typeObject:
		return true
	default:
		return a.RangeCond != ""
	}
}

// rangeCheck renders the bound test of a numeric argument: the condition
// (true when out of range), the message format and the value it formats.
func rangeCheck(a Arg, f goField) (cond, msg, value string) {
	if a.Minimum == nil && a.Maximum == nil {
		return "", "", ""
	}
	value = "a." + f.name
	guard := ""
	if f.pointer {
		guard = value + " != nil && "
		value = "*" + value
	}
	verb := "%d"
	if a.Type == typeNumber {
		verb = "%g"
	}
	lit := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case a.Minimum != nil && a.Maximum != nil:
		cond = fmt.Sprintf("%s(%s < %s || %s > %s)", guard, value, lit(*a.Minimum), value, lit(*a.Maximum))
		msg = fmt.Sprintf("%s must be between %s and %s; got %s", a.Name, lit(*a.Minimum), lit(*a.Maximum), verb)
	case a.Minimum != nil:
		cond = fmt.Sprintf("%s%s < %s", guard, value, lit(*a.Minimum))
		msg = fmt.Sprintf("%s must be at least %s; got %s", a.Name, lit(*a.Minimum), verb)
	default:
		cond = fmt.Sprintf("%s%s > %s", guard, value, lit(*a.Maximum))
		msg = fmt.Sprintf("%s must be at most %s; got %s", a.Name, lit(*a.Maximum), verb)
	}
	return cond, msg, value
}

// defaultLiteral writes a default that lint (checkDefault) has matched
// with its argument's type: a string, a number or a boolean.
func defaultLiteral(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// stringsLiteral writes a Go []string literal.
func stringsLiteral(list []string) string { return "[]string{" + quoteAll(list) + "}" }

// rawLiteral writes s as a raw string literal when it can, else quoted.
func rawLiteral(s string) string {
	if strings.ContainsAny(s, "`\r") {
		return strconv.Quote(s)
	}
	return "`" + s + "`"
}

// multilineLiteral writes a text as one quoted literal per line joined
// with +, so a multi-line constant stays readable in the source.
func multilineLiteral(s string) string {
	if s == "" {
		return `""`
	}
	var parts []string
	for l := range strings.Lines(s) {
		parts = append(parts, strconv.Quote(l))
	}
	return strings.Join(parts, " +\n\t")
}

// comment renders text as // comment lines wrapped near 80 columns, each
// line starting with indent.
func comment(text, indent string) string {
	const width = 76
	var lines []string
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			lines = append(lines, indent+"//")
		}
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				lines = append(lines, indent+"// "+line)
				line = ""
			}
			line = strings.TrimPrefix(line+" "+w, " ")
		}
		if line != "" {
			lines = append(lines, indent+"// "+line)
		}
	}
	return strings.Join(lines, "\n")
}

func numbered(src []byte) string {
	var b strings.Builder
	for i, l := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%4d %s\n", i+1, l)
	}
	return b.String()
}
