// Package query turns the typed, model-supplied query arguments of the read
// tools (filter, expand_limit, fields) into the exact query parameters the
// PDPP resource server understands, rejecting malformed input before
// anything is sent with an actionable typed error: an *mcpkit.ArgError,
// the argument error of every tool argument check, whose Field names the
// argument and whose message shows a correct example, so it can be handed
// to the model unchanged (Tool is left empty; the adapter knows it).
//
// A filter is a JSON object mapping a field name to either a scalar
// (exact match, encoded as filter[field]=value) or an object of range
// operators (gte, gt, lte, lt; encoded as filter[field][op]=value).
// An expand_limit is a JSON object mapping an expanded relation to a
// positive integer (encoded as expand_limit[relation]=N).
//
// The functions return url.Values; url.Values.Encode sorts keys, so the
// encoded query string is deterministic.
package query
