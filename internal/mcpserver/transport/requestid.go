package transport

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
)

// pendingRequestID returns the raw id of the JSON-RPC request line: a JSON object
// with a non-empty string "method" and an "id" other than null, as decoding
// the line into message would find them (member names matched without
// regard to case, the last of a repeated member winning). ok is false for
// anything else: a notification, an answer, a batch, invalid JSON.
//
// Every line of a stdio session passes through here (it decides which lines
// are requests, served on the call pool and owed an answer), so the line is
// read once at its top level with a pooled jsontext.Decoder (jsonpool), which checks it
// as it goes and builds no values, instead of decoded: a decode costs
// several times as much (BenchmarkPendingRequestID).
func pendingRequestID(line []byte) (id []byte, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	var method []byte
	methodBad := false
	if !walkObject(line, func(key, val []byte) {
		switch {
		case memberIs(key, "id"):
			id = val
		case memberIs(key, "method"):
			// null leaves a decoded string as it was; a value of another
			// type fails the decode, whatever follows it.
			switch {
			case val[0] == '"':
				method = val
			case string(val) != "null":
				methodBad = true
			}
		}
	}) {
		return nil, false
	}
	// A method that is not a string fails the decode; "" is no request.
	if methodBad || len(method) < 3 || method[0] != '"' || len(id) == 0 || string(id) == "null" {
		return nil, false
	}
	return id, true
}

// walkObject calls fn with each member of obj in order, the quoted name and
// the raw value, read in place by a pooled jsontext.Decoder (jsonpool), and
// reports whether obj is one valid JSON object as json.Valid would find it,
// with nothing after it. fn may have seen members of an obj found invalid
// further on.
func walkObject(obj []byte, fn func(key, val []byte)) bool {
	d := jsonpool.Get(obj)
	defer jsonpool.Put(d)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' { // a valid object: as many members as bytes
		key, err := d.ReadValue()
		if err != nil {
			return false
		}
		val, err := d.ReadValue()
		if err != nil {
			return false
		}
		fn(key, val)
	}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '}' {
		return false
	}
	_, err := d.ReadToken() // nothing but white space may follow
	return err == io.EOF
}

// memberIs reports whether the quoted member name key decodes to name,
// ignoring case as encoding/json does when it fills a struct field.
func memberIs(key []byte, name string) bool {
	k := key[1 : len(key)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		// Invalid UTF-8 and lone surrogates read as U+FFFD, as
		// encoding/json reads them; the error says only that there were some.
		k, _ = jsontext.AppendUnquote(nil, key)
	}
	return bytes.EqualFold(k, []byte(name))
}

// guardOptions make json v2 read a request as json.Unmarshal (encoding/json)
// reads it into guardedRequest: names matched without regard to case (and
// to nothing else), a repeated member read again (merging into params), a
// null leaving a string as it was, invalid UTF-8 read as U+FFFD. It costs
// as much as the one-pass walk it replaced (BenchmarkReadGuarded) and
// allocates less; FuzzReadGuarded holds it to encoding/json's answers.
var guardOptions = json.JoinOptions(json.MatchCaseInsensitiveNames(true), jsonv1.MatchCaseSensitiveDelimiter(true),
	jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true), jsonv1.MergeWithLegacySemantics(true))

// readGuarded reads the members of the request raw that RequestGuard
// checks, as json.Unmarshal into guardedRequest does; ok is false where that
// decode fails.
func readGuarded(raw []byte) (req guardedRequest, ok bool) {
	return req, json.Unmarshal(raw, &req, guardOptions) == nil
}
