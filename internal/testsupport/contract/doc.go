// Package contract holds the tests that keep spec/pdpp-rs.openapi.yaml honest: the document
// is valid OpenAPI, the real RS samples validate against it, it agrees with the upstream
// published OpenAPI (operations, parameters, status codes, and every response member by
// name and type), and the generated client and strict server encode and bind its
// deepObject and array parameters the way the RS expects.
package contract
