package transport

import (
	"bytes"
	"encoding/json"
)

// pendingRequestID returns the raw id of the JSON-RPC request line: a JSON object
// with a non-empty string "method" and an "id" other than null, as decoding
// the line into message would find them (member names matched without
// regard to case, the last of a repeated member winning). ok is false for
// anything else: a notification, an answer, a batch, invalid JSON.
//
// Every request line of a stdio session passes through here, so the line
// is checked with json.Valid (no allocation) and then walked once at its
// top level, instead of decoded: a decode costs several times as much, on
// mcp-go's line-reading goroutine, whose small stack it grows.
func pendingRequestID(line []byte) (id []byte, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || !json.Valid(line) {
		return nil, false
	}
	var method []byte
	methodBad := false
	i := 1
	for {
		i = skipWS(line, i)
		if line[i] == '}' {
			break
		}
		kEnd := stringEnd(line, i)
		key := line[i:kEnd]
		i = skipWS(line, kEnd) + 1 // past ':'
		i = skipWS(line, i)
		vEnd := valueEnd(line, i)
		switch {
		case memberIs(key, "id"):
			id = line[i:vEnd]
		case memberIs(key, "method"):
			// null leaves a decoded string as it was; a value of another
			// type fails the decode, whatever follows it.
			switch v := line[i:vEnd]; {
			case v[0] == '"':
				method = v
			case string(v) != "null":
				methodBad = true
			}
		}
		i = skipWS(line, vEnd)
		if line[i] == ',' {
			i++
		}
	}
	// A method that is not a string fails the decode; "" is no request.
	if methodBad || len(method) < 3 || method[0] != '"' || len(id) == 0 || string(id) == "null" {
		return nil, false
	}
	return id, true
}

// memberIs reports whether the quoted member name key decodes to name,
// ignoring case as encoding/json does when it fills a struct field.
func memberIs(key []byte, name string) bool {
	k := key[1 : len(key)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return false
		}
		k = []byte(s)
	}
	return bytes.EqualFold(k, []byte(name))
}

// The walkers below read valid JSON only (pendingRequestID checks it first), so
// they look no further than the end of the value they start at.

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the value that starts at b[i]. A
// nested value is skipped by counting brackets, outside strings, so the
// walk needs no stack of its own.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
