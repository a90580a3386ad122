// Package metrics holds the Prometheus instruments of one hosted server: HTTP
// requests, tool calls (count, outcome, error code, latency, in flight),
// JSON-RPC batch sizes, RS requests by route template, authentication
// refusals, and the Go runtime and process collectors, all in a private
// registry (no global state), served on the admin listener (transport).
//
// Every label value comes from a fixed vocabulary (route templates, tool
// names, status codes, error codes) and is sanitized on the way in, so no
// record id, query text or token can reach a label.
package metrics
