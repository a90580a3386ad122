// Package docache holds one remote document that many requests read: it is
// fetched by one request at a time (the others wait for that fetch, not for
// one of their own), kept for a lifetime, and served as last known while a
// refresh fails or is slow. A failed fetch is remembered from the moment it
// ends, so an upstream that hangs or fails costs one fetch per memo period
// however many requests arrive, and a request waits at most one fetch.
package docache
