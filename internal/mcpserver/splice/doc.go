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
// Without a Store in the context (an in-process client), Value returns the
// bytes as a json.RawMessage and the library encodes them as before.
package splice
