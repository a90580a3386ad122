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
//	go run ./tools/mcpgen -catalog spec/tools.yaml [-openapi spec/api.yaml] \
//	    [-instructions spec/instructions.md] -out gen/mcptools [-check]
//
// Generation fails, writing nothing, when the catalog breaks a lint rule or a
// byte budget: per description, per tool entry, the whole tools/list, the
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
