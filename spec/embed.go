// Package spec holds the hand-edited contracts of pdpp-mcp (the RS OpenAPI document, the
// oapi-codegen configurations and the tool catalog) and embeds the ones programs read at run time.
package spec

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document pdpp-rs.openapi.yaml: the resource-server endpoints,
// parameters and response shapes the adapter consumes. gen/rsclient and gen/rsserver are
// generated from it.
//
//go:embed pdpp-rs.openapi.yaml
var OpenAPI []byte
