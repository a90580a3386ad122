// Package snapshot writes paper snapshots: the SQLite database and the
// static asset folder that the paper MCP server reads, in the format of
// ai-deepresearch-flow's `paper db snapshot`. It exists for tests, the
// benchmark and the demo; Fixture is a small hand-shaped library with every
// case the server must handle, and Generated a large random one.
package snapshot
