// Package pdppmcp holds only the go:generate lines that rebuild gen/ from spec/.
package pdppmcp

//go:generate go tool oapi-codegen -config spec/oapi-client.yaml spec/pdpp-rs.openapi.yaml
//go:generate go tool oapi-codegen -config spec/oapi-server.yaml spec/pdpp-rs.openapi.yaml
//go:generate go run ./tools/mcpgen -catalog spec/tools.yaml -openapi spec/pdpp-rs.openapi.yaml -instructions spec/instructions.md -rsclient github.com/pdpp-mcp/pdpp-mcp/gen/rsclient -out gen/mcptools
//go:generate go run ./tools/mcpgen -catalog spec/papers.tools.yaml -instructions spec/papers.instructions.md -out gen/papertools
