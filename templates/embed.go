// Package templates holds the text/template files from which mcpgen renders
// a tool catalog package (Go sources and its footprint report), embedded so
// the generator runs from any working directory.
package templates

import "embed"

// FS holds every template file; mcpgen parses them all together and
// executes them by file name.
//
//go:embed *.tmpl
var FS embed.FS
