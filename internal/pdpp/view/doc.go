// Package view holds the source of the evidence view, the HTML document a
// host that supports MCP Apps (extension io.modelcontextprotocol/ui) renders
// the results of search, read_record_field, fetch and query_records in, so
// the person whose data it is sees what the agent read: one card per hit
// with its proven excerpt, field windows with their range, records with
// their declared roles, errors with their code and fix.
//
// evidence.html is plain HTML, CSS and JavaScript with no external
// reference. mcpgen (spec/tools.yaml, views:) assembles it: it fills in the
// hidden-character tables, derived from package unseen's classifier so the
// view shows hidden characters with the same markers as tool text, and a
// content security policy that allows only the document's own script and
// style; the result is embedded in gen/mcptools and served by resources/read
// as ui://pdpp/evidence. Every value from a result is inserted as DOM text,
// never parsed as HTML; the RS's <mark> markers are split on, not trusted;
// no URL becomes a link; what one rendering shows is bounded.
//
// Its controls act only on what the server built: a control's tools/call
// comes only from continuations in the server's own members of a result
// (hits, windows, pages, fetch's full and metadata.fields, the previews a
// compact query_records step's records[] entries name in previewed), never
// from record data, where a value shaped like a preview is shown as data;
// and only for the tools on READ_TOOLS, the catalog's read-only read tools,
// which mcpgen writes into the document.
//
// The package's test drives the view in headless Chromium through a test
// host page against the real server and the demo RS.
package view
