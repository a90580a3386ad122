// Package evidence turns resource-server bodies into what a model sees: evidence
// cards for search hits, bounded field windows, record previews, truncation and
// binary descriptors, the continuation (tool + arguments) for every handle it
// shows, and the compact steps of a list: every item's id, the items that fit
// with previews, and next, the call that resumes after them. Every tool, resource and CLI command renders through this package, so the
// presentation rules live in one place; the budgets that bound every rendering are
// the constants in budgets.go.
package evidence
