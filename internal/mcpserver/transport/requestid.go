package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

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
	return walkDecoded(obj, func(d *jsonpool.Reader, key []byte) error {
		val, err := d.ReadValue()
		if err == nil {
			fn(key, val)
		}
		return err
	})
}

// walkDecoded is walkObject for a reader of the member's value itself:
// fn is called with each quoted name and must read the value from d (one
// ReadValue, or a walk of an object with walkMembers).
func walkDecoded(obj []byte, fn func(d *jsonpool.Reader, key []byte) error) bool {
	d := jsonpool.Get(obj)
	defer jsonpool.Put(d)
	if !walkMembers(d, fn) {
		return false
	}
	_, err := d.ReadToken() // nothing but white space may follow
	return err == io.EOF
}

// walkMembers reads the object that comes next in d, calling fn with each
// quoted name as walkDecoded does; it reports whether the object is valid.
func walkMembers(d *jsonpool.Reader, fn func(d *jsonpool.Reader, key []byte) error) bool {
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' { // a valid object: as many members as bytes
		key, err := d.ReadValue()
		if err != nil || fn(d, key) != nil {
			return false
		}
	}
	tok, err := d.ReadToken()
	return err == nil && tok.Kind() == '}'
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

// errBadObject stops a walk at an object found invalid inside it.
var errBadObject = errors.New("not a valid JSON object")

// readGuarded reads the members of the request raw that RequestGuard
// checks, as json.Unmarshal into guardedRequest does; ok is false where that
// decode fails. An object is read at its top level and in params, in one
// pass (walkDecoded), which costs a small part of a decode of the whole request
// and decodes only the strings it keeps; anything else is left to
// encoding/json.
func readGuarded(raw []byte) (req guardedRequest, ok bool) {
	obj := bytes.Trim(raw, " \t\r\n") // JSON's white space, no other
	if len(obj) == 0 || obj[0] != '{' {
		return req, json.Unmarshal(raw, &req) == nil
	}
	ok = true
	// str decodes a string member into dst; null leaves dst as it was
	// and any other value fails the decode.
	str := func(dst *string, val []byte) {
		switch {
		case val[0] == '"':
			inner := val[1 : len(val)-1]
			if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
				*dst = string(inner)
			} else {
				s, _ := jsontext.AppendUnquote(nil, val) // U+FFFD as above
				*dst = string(s)
			}
		case string(val) != "null":
			ok = false
		}
	}
	// params is read where it stands, in the same pass.
	valid := walkDecoded(obj, func(d *jsonpool.Reader, key []byte) error {
		if memberIs(key, "params") && d.PeekKind() == '{' {
			// A repeated params merges into the same struct.
			if !walkMembers(d, func(d *jsonpool.Reader, k []byte) error {
				v, err := d.ReadValue()
				switch {
				case err != nil:
				case memberIs(k, "uri"):
					str(&req.Params.URI, v)
				case memberIs(k, "name"):
					str(&req.Params.Name, v)
				}
				return err
			}) {
				return errBadObject
			}
			return nil
		}
		val, err := d.ReadValue()
		if err != nil {
			return err
		}
		switch {
		case memberIs(key, "method"):
			str(&req.Method, val)
		case memberIs(key, "params") && string(val) != "null":
			ok = false
		}
		return nil
	})
	if !valid {
		return guardedRequest{}, false // json.Unmarshal refuses it too
	}
	return req, ok
}
