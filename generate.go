// Package pdppmcp holds only the go:generate lines that rebuild gen/ from spec/.
//
// mcpgen checks the OpenAPI document and both catalogs before anything is
// written: the paper catalog first (-lint writes nothing), then the PDPP
// catalog, whose run also runs oapi-codegen for gen/rsclient and
// gen/rsserver and swaps the three folders in together. A failed run leaves
// gen/ as it was.
package pdppmcp

//go:generate go run ./tools/mcpgen -lint -catalog spec/papers.tools.yaml -instructions spec/papers.instructions.md -out gen/papertools
//go:generate go run ./tools/mcpgen -catalog spec/tools.yaml -openapi spec/pdpp-rs.openapi.yaml -instructions spec/instructions.md -rsclient github.com/pdpp-mcp/pdpp-mcp/gen/rsclient -oapi-codegen spec/oapi-client.yaml -oapi-codegen spec/oapi-server.yaml -out gen/mcptools
//go:generate go run ./tools/mcpgen -catalog spec/papers.tools.yaml -instructions spec/papers.instructions.md -out gen/papertools
