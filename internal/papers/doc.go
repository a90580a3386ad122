// Package papers is the paper snapshot MCP server: it implements the
// tools and resource templates that gen/papertools declares (compiled from
// spec/papers.tools.yaml) over a read-only snapshot database
// (internal/papers/store) and its static assets (internal/papers/assets).
// Content is returned directly, never as a URL; long text is cut at a
// character budget with a marker line; every failure is a structured tool
// result carrying an error code, the paper_id and, for summaries, the
// template and the templates to retry with.
package papers
