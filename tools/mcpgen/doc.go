// Command mcpgen compiles an MCP tool catalog (YAML) into a Go package: typed
// argument structs with validation, JSON schemas reflected at generate time,
// mcp.Tool literals, handler interfaces and registration glue, together with
// a byte-footprint report and the golden tools/list payload.
//
// Named string formats (formats:, with a pattern, max_bytes, a segment flag
// and a description) may be declared once and named by arguments (format:)
// and resource URI variables; each becomes an exported mcpkit.Format
// variable, and Validate checks every argument that names one.
//
// It knows nothing about any particular server: names, texts, arguments,
// budgets and resource templates all come from the catalog, and parameter
// facts may be pulled from an OpenAPI document when one is given.
//
// Usage:
//
//	go run ./tools/mcpgen -catalog spec/tools.yaml [-openapi spec/api.yaml \
//	    [-rsclient IMPORT] [-oapi-codegen CONFIG]...] \
//	    [-instructions spec/instructions.md] -out gen/mcptools [-check | -lint]
//
// Everything is checked before anything is written (-lint stops there):
// the OpenAPI document's parameter schemas (anyOf/oneOf are refused, naming
// the parameter), catalog argument types against the spec's, toolsets
// against the declared toolsets: (and the hints each declares), the
// description_rules: (read-only or mutating wording, the operation's
// endpoint, where the rules of use live, forbidden words), every lint rule
// and budget. Then oapi-codegen runs with each -oapi-codegen configuration,
// and its output and mcpgen's are written into a temporary folder beside
// -out and swapped in together: a failed run leaves every output folder as
// it was. YAML errors name the file and the line of the slip.
//
// With -rsclient (the import path of the client oapi-codegen writes), the
// generated rscalls.go maps each tool's arguments to its operation (and
// its also_operations): an <Operation>Call struct per operation and a
// method on the tool's Args that sets every parameter an argument names
// with param:, except those the tool lists under by_hand, which the
// handler sets itself.
//
// Generation fails, writing nothing, when the catalog breaks a lint rule or a
// byte budget (a tools/list over budget is told as the overage, the change
// per tool against the committed FOOTPRINT.md and the largest tools; a size
// within 5% of a budget is a warning on stderr): per description, per tool entry, the whole tools/list, the
// tools/list of a server exposing one toolset (max_toolset_list_bytes), and
// the instructions, whose first characters must mention given phrases. A
// long sentence may be said in one description only, and each phrase of
// guidance_homes only at its home (the instructions or one tool).
//
// A tool may declare a result_budget (bytes, or rs_body_ratio with
// min_bytes): the largest default reply the server may send. Budgets are
// written to FOOTPRINT.md and to the generated ResultBudgetOf, which the
// server enforces; the toolsets named in result_budget_toolsets must
// declare one on every tool. Published schemas are portable: no $ref,
// $defs, $schema or additionalProperties, no top-level anyOf/oneOf/allOf,
// no type spelled as an array and no property without a type (nullable
// outputs are refused: omit the key instead of sending null).
package main
