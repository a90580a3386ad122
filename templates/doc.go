// Package templates holds the text/template files from which mcpgen renders
// a tool catalog package (Go sources and its footprint report), embedded so
// the generator runs from any working directory.
package templates
