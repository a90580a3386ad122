package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Catalog is the YAML tool catalog.
type Catalog struct {
	Package    string  `yaml:"package"`
	ServerName string  `yaml:"server_name"`
	PackageDoc string  `yaml:"package_doc"`
	Budgets    Budgets `yaml:"budgets"`
	// GuidanceHomes maps a phrase of cross-tool guidance to the one place
	// allowed to say it: "instructions" or a tool name. The phrase must
	// appear there (case-insensitively) and in no other description.
	GuidanceHomes map[string]string `yaml:"guidance_homes"`
	Tools         []Tool            `yaml:"tools"`
	Resources     []Resource        `yaml:"resources"`
	// Views are the HTML views (MCP Apps) tools may name with Tool.View.
	Views []View `yaml:"views"`

	// Formats are the named string formats arguments may declare with
	// Arg.Format; generated Validate methods check them.
	Formats map[string]FormatSpec `yaml:"formats"`

	// Toolsets declares every toolset a tool may name, with the hints its
	// tools must carry; a tool naming another toolset is refused. Empty:
	// any lower-case name is accepted.
	Toolsets map[string]ToolsetSpec `yaml:"toolsets"`
	// DescriptionRules are the wording rules every tool description keeps.
	DescriptionRules DescriptionRules `yaml:"description_rules"`
}

// ToolsetSpec is one declared toolset. Hints, when given, are the values
// every tool of the toolset must declare for those annotations.
type ToolsetSpec struct {
	Hints Annotations `yaml:"hints"`
}

// DescriptionRules are checked on every tool description. A zero rule is
// not checked.
type DescriptionRules struct {
	// ReadOnlySays must appear in the description of a tool whose
	// readOnlyHint is true; MutatingSays in every other one.
	ReadOnlySays string `yaml:"read_only_says"`
	MutatingSays string `yaml:"mutating_says"`
	// NameEndpoint: a tool with an operation names its RS endpoint, the
	// operation's method and path as the OpenAPI document has them
	// ("GET /v1/streams/{stream}/records").
	NameEndpoint bool `yaml:"name_endpoint"`
	// PointsTo: every description names one of these (where the rules of
	// use live); a tool named here is exempt, being such a place.
	PointsTo []string `yaml:"points_to"`
	// Forbidden words appear in no description (case-insensitive).
	Forbidden []string `yaml:"forbidden"`
}

// homeInstructions is the GuidanceHomes value naming the instructions.
const homeInstructions = "instructions"

// Budgets are the byte and text limits the generated surface must keep.
// A zero limit is not checked.
type Budgets struct {
	MaxDescriptionBytes      int `yaml:"max_description_bytes"`
	MaxFieldDescriptionBytes int `yaml:"max_field_description_bytes"`
	MaxToolBytes             int `yaml:"max_tool_bytes"`
	MaxToolsListBytes        int `yaml:"max_tools_list_bytes"`
	// MaxToolsetListBytes bounds the tools/list result of a server that
	// exposes only the named toolset.
	MaxToolsetListBytes map[string]int `yaml:"max_toolset_list_bytes"`
	// MaxToolsListBytesNewest and MaxToolsetListBytesNewest are the same
	// budgets at the newest revision mcp-go serves (mcp.LATEST_PROTOCOL_VERSION),
	// whose tools/list adds resultType, the cache hints and _meta serverInfo
	// (measured with the server's name and version at their largest, below);
	// the two above hold for every earlier revision.
	MaxToolsListBytesNewest   int            `yaml:"max_tools_list_bytes_newest"`
	MaxToolsetListBytesNewest map[string]int `yaml:"max_toolset_list_bytes_newest"`
	// MaxServerNameBytes and MaxServerVersionBytes bound the server's name
	// and version as a JSON string encodes them (quotes left out): the
	// newest revision repeats both in every result's _meta, so the server
	// cuts longer ones and its reply budgets reserve room for them. Zero:
	// not bounded, and the newest revision is not measured.
	MaxServerNameBytes      int      `yaml:"max_server_name_bytes"`
	MaxServerVersionBytes   int      `yaml:"max_server_version_bytes"`
	MaxInstructionsBytes    int      `yaml:"max_instructions_bytes"`
	MinInstructionsChars    int      `yaml:"min_instructions_chars"`
	InstructionsHeadChars   int      `yaml:"instructions_head_chars"`
	InstructionsMustMention []string `yaml:"instructions_must_mention"`
	LongSentenceChars       int      `yaml:"long_sentence_chars"`
	// ResultBudgetToolsets lists the toolsets whose every tool must declare
	// a result_budget.
	ResultBudgetToolsets []string `yaml:"result_budget_toolsets"`
	// MaxArgumentBytes bounds, in bytes, every string argument (and array
	// item) that declares no tighter bound (no enum, maxLength or format);
	// MaxArgumentItems bounds every array argument's item count. Generated
	// Validate enforces both (too_long, too_many_items) before any handler
	// runs; they stay out of the input schemas, whose bytes every
	// tools/list pays for. Zero: not checked.
	MaxArgumentBytes int `yaml:"max_argument_bytes"`
	MaxArgumentItems int `yaml:"max_argument_items"`
	// MaxResourceURIBytes bounds the URI of a resources/read, refused before
	// any template is matched (the generated MaxResourceURIBytes, which the
	// serving transport checks on every request). Zero: defaultResourceURIBytes.
	MaxResourceURIBytes int `yaml:"max_resource_uri_bytes"`
}

// Default limits used when the catalog leaves them at zero.
const (
	defaultHeadChars         = 512
	defaultLongSentenceChars = 60
	defaultResourceURIBytes  = 4096
)

// Tool is one catalog tool.
type Tool struct {
	Name        string      `yaml:"name"`
	Title       string      `yaml:"title"`
	Description string      `yaml:"description"`
	Toolset     string      `yaml:"toolset"`
	Operation   string      `yaml:"operation"`
	Annotations Annotations `yaml:"annotations"`
	Args        []Arg       `yaml:"args"`
	Output      []Output    `yaml:"output"`
	// ResultBudget bounds the whole serialized default (compact) result
	// of the tool: content[] + structuredContent + _meta.
	ResultBudget *ResultBudget `yaml:"result_budget"`
	// View names an entry of Catalog.Views a host renders the tool's
	// result in (_meta.ui.resourceUri); "" for none.
	View string `yaml:"view"`
	// AlsoOperations are further operations the handler may call instead
	// of Operation (one route per mode, say); every argument mapped by
	// generated code must be a parameter of each of them too.
	AlsoOperations []string `yaml:"also_operations"`
	// ByHand names the RS parameters the handler sets itself, each with
	// the reason (a cursor decoded by the adapter, a path value taken from
	// a result id): generated code maps every other argument with a param.
	ByHand map[string]string `yaml:"by_hand"`
}

// ResultBudget is a tool's default reply budget. Bytes is a fixed ceiling;
// RSBodyRatio, when set, makes the ceiling that many times the size of the
// RS body the reply renders, but never below MinBytes.
type ResultBudget struct {
	Bytes       int     `yaml:"bytes"`
	RSBodyRatio float64 `yaml:"rs_body_ratio"`
	MinBytes    int     `yaml:"min_bytes"`
}

// Annotations are the four MCP behaviour hints; each must be given.
type Annotations struct {
	ReadOnlyHint    *bool `yaml:"readOnlyHint"`
	DestructiveHint *bool `yaml:"destructiveHint"`
	IdempotentHint  *bool `yaml:"idempotentHint"`
	OpenWorldHint   *bool `yaml:"openWorldHint"`
}

// namedHint is one annotation with its catalog name.
type namedHint struct {
	name string
	v    *bool
}

// hints lists the four annotations in catalog order.
func (a Annotations) hints() [4]namedHint {
	return [4]namedHint{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint},
		{"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}}
}

// Arg is one tool argument. Type, Enum, Minimum, Maximum, MaxLength and
// Description may be left out when Param names an OpenAPI parameter of the
// tool's operation that supplies them.
type Arg struct {
	Name        string   `yaml:"name"`
	Type        string   `yaml:"type"`
	Required    bool     `yaml:"required"`
	Enum        []string `yaml:"enum"`
	Minimum     *float64 `yaml:"minimum"`
	Maximum     *float64 `yaml:"maximum"`
	MaxLength   *int     `yaml:"maxLength"`
	Default     any      `yaml:"default"`
	Description string   `yaml:"description"`
	Param       string   `yaml:"param"`
	// Format names an entry of Catalog.Formats; on a string_array it
	// applies to every item.
	Format string `yaml:"format"`

	unresolved bool // Param could not be resolved; already reported
}

// FormatSpec is one named string format. Every value of the format is
// valid UTF-8 without control characters and at most MaxBytes bytes; a
// Segment format is also one safe URL path segment (not "." or "..", no
// "/" or "\", also once percent-decoded); Pattern, an anchored RE2
// expression, narrows it further. Description says what is allowed, in
// words, and ends every refusal message.
type FormatSpec struct {
	Pattern     string `yaml:"pattern"`
	MaxBytes    int    `yaml:"max_bytes"`
	Segment     bool   `yaml:"segment"`
	Description string `yaml:"description"`
}

// Output is one top-level property of a tool's structuredContent. Nullable
// is refused (no portable schema says "this type or null"): a runtime omits
// the key instead of sending null, and the property keeps its type.
type Output struct {
	Name        string `yaml:"name"`
	Type        string `yaml:"type"`
	Nullable    bool   `yaml:"nullable"`
	Description string `yaml:"description"`
}

// Resource is one resource template.
type Resource struct {
	Name        string `yaml:"name"`
	URITemplate string `yaml:"uri_template"`
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	MIMEType    string `yaml:"mime_type"`
	// Formats maps URI template variables to catalog formats; the
	// resource's parser checks them with the generated Format variables.
	Formats map[string]string `yaml:"formats"`
}

// Argument and output types a catalog may use.
const (
	typeString      = "string"
	typeInteger     = "integer"
	typeNumber      = "number"
	typeBoolean     = "boolean"
	typeStringArray = "string_array"
	typeObject      = "object"
	typeArray       = "array" // output only
)

var argTypes = []string{typeString, typeInteger, typeNumber, typeBoolean, typeStringArray, typeObject}

var outputTypes = []string{typeString, typeInteger, typeNumber, typeBoolean, typeStringArray, typeObject, typeArray}

// loadCatalog reads a catalog, refusing unknown keys so a misspelt field is
// an error rather than a silently missing limit; errors name file and line.
func loadCatalog(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Catalog
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the catalog is empty", displayPath(path))
		}
		return nil, yamlError(displayPath(path), data, err)
	}
	c.normalize()
	return &c, nil
}

// normalize trims the white space that YAML block scalars leave around
// texts, so byte counts and sentences see only the text.
func (c *Catalog) normalize() {
	trim := func(s *string) { *s = strings.TrimSpace(*s) }
	trim(&c.PackageDoc)
	for ti := range c.Tools {
		t := &c.Tools[ti]
		trim(&t.Title)
		trim(&t.Description)
		for ai := range t.Args {
			trim(&t.Args[ai].Description)
		}
		for oi := range t.Output {
			trim(&t.Output[oi].Description)
		}
	}
	for name, f := range c.Formats {
		trim(&f.Description)
		c.Formats[name] = f
	}
	for vi := range c.Views {
		trim(&c.Views[vi].Title)
		trim(&c.Views[vi].Description)
	}
	for ri := range c.Resources {
		trim(&c.Resources[ri].Title)
		trim(&c.Resources[ri].Description)
	}
}

// HeadChars is the window of the instructions that must stand alone.
func (b Budgets) HeadChars() int { return cmp.Or(max(b.InstructionsHeadChars, 0), defaultHeadChars) }

// ResourceURIBytes is the bound of a resources/read URI.
func (b Budgets) ResourceURIBytes() int {
	return cmp.Or(max(b.MaxResourceURIBytes, 0), defaultResourceURIBytes)
}

// LongSentence is the length from which a sentence may be said once only.
func (b Budgets) LongSentence() int {
	return cmp.Or(max(b.LongSentenceChars, 0), defaultLongSentenceChars)
}

// yamlLine matches the "yaml: line N: " prefix of a yaml.v3 syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError names the file and line of a YAML problem, as an editor's
// file:line. yaml.v3 reports a syntax error inside a block collection at the
// collection's first line (a slip at line 158 of an args list starting at
// line 151 is "line 151"); the line given here is the first at which longer
// and longer prefixes stop parsing, with the collection's line as context.
// Type errors (unknown keys, wrong kinds) carry their own lines.
func yamlError(file string, data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			lines[i] = file + ":" + strings.TrimPrefix(e, "line ")
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	reported, _ := strconv.Atoi(m[1])
	line := firstFailingLine(data, reported)
	if line == reported {
		return fmt.Errorf("%s:%d: %s", file, line, m[2])
	}
	return fmt.Errorf("%s:%d: %s (in the block that starts at line %d; check this line's indentation)", file, line, m[2], reported)
}

// firstFailingLine returns the first line from `from` on such that the
// document up to and including it does not parse; from when none does
// (the error is then about the document as a whole). Bounded by the
// document's line count: at most that many parses, on the error path only.
func firstFailingLine(data []byte, from int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n := max(from, 1); n <= len(lines); n++ {
		var node yaml.Node
		if err := yaml.Unmarshal(bytes.Join(lines[:n], nil), &node); err != nil {
			return n
		}
	}
	return from
}

// initialisms are written in capitals inside Go names, as Go style has it.
var initialisms = map[string]string{
	"id": "ID", "url": "URL", "uri": "URI", "json": "JSON", "http": "HTTP",
	"api": "API", "html": "HTML", "sql": "SQL", "mime": "MIME", "utc": "UTC",
}

// camel turns a snake_case (or kebab-case) wire name into an exported Go
// name: query_records -> QueryRecords, connection_id -> ConnectionID.
func camel(name string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' }) {
		if up, ok := initialisms[part]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
