package templates

import "embed"

// FS holds every template file; mcpgen parses them all together and
// executes them by file name.
//
//go:embed *.tmpl
var FS embed.FS
