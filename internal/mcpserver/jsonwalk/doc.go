// Package jsonwalk reads JSON without decoding it into Go values: it checks
// that a document is valid (Valid, the same verdict as json.Valid in one
// pass), walks the members of an object or the elements of an array at one
// level (Members, Elements), finds where a value or string ends
// (SkipValue, SkipString), and decodes one string value exactly as
// encoding/json would (DecodeString). Callers that read a few members of a
// large body use it to avoid building the body's decoded form; every walk
// is bounded by the length of its input.
package jsonwalk
