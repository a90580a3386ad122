// Package splice lets a tool result carry a large JSON value, such as a
// resource-server body returned verbatim, by reference. The handler puts
// the bytes in the Store of its request (or stdio session) and returns a
// short placeholder in their place; the transport, writing the reply that
// the MCP library encoded, writes the bytes where the placeholder stands.
//
// The value is then never re-encoded: encoding/json, which the MCP library
// uses for every reply, would copy it several times over and escape every
// <, > and & in it as six bytes (\u003c), so a body of such characters
// would cost six times its size in each copy. Spliced, it is held once, as
// read, and written as it came.
//
// The JSON API the rest of the server reads with (jsontext) cannot do this:
// the reply is encoded by the MCP library, with encoding/json, before the
// transport sees it, and no encoder option reaches a value inside it. The
// one JSON text this package writes itself, a value's white space removed
// (json.Compact), is the standard library's. What keeps it is the memory
// check of docs/deploy.md §8 (make bench-memory): 8 concurrent detail
// "full" calls over a page of 7.8 MB of '<', each reply held once as read,
// peak at 109-121 MB at a 16 MiB ceiling (1,687 MB before the bounds this
// package is one of).
//
// Without a Store in the context (an in-process client), Value returns the
// bytes as a json.RawMessage and the library encodes them as before.
package splice
