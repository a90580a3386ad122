package transport

import (
	"bytes"
	"encoding/json"
	"testing"
)

// message is the part of a JSON-RPC message that tells requests from answers.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// decodedRequestID is what pendingRequestID stands in for: the line decoded
// into message.
func decodedRequestID(line []byte) ([]byte, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	var m message
	if json.Unmarshal(line, &m) != nil || m.Method == "" || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil, false
	}
	return m.ID, true
}

var requestIDCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{"id":"cin/x:y","method":"z"}}}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`,
	`  {"method" : "ping" , "id" : 7 }  `,
	`{"ID":3,"Method":"ping"}`,
	`{"id":1,"id":2,"method":"ping"}`,
	`{"id":1,"method":"ping","id":null}`,
	`{"id":null,"method":"ping"}`,
	`{"method":"ping"}`,
	`{"id":1,"method":""}`,
	`{"id":1,"method":5}`,
	`{"id":1,"method":5,"method":"ping"}`,
	`{"id":1,"method":null,"method":"ping"}`,
	`{"id":1,"method":"ping","method":null}`,
	`{"id":{"a":[1,{"b":"]}"}]},"method":"x"}`,
	`{"\u0069d":4,"m\u0065thod":"ping"}`,
	`{"id":1,"result":{}}`,
	`[{"id":1,"method":"ping"}]`,
	`{"id":1,"method":"ping"`,
	`{"id":1,"method":"ping"}x`,
	`{not json`,
	``,
	`{}`,
	`{"id":-1.5e3,"method":"\u00e9"}`,
	`{"params":[1,2,"x\\"],"id":"q","method":"m"}`,
}

func TestPendingRequestIDMatchesDecode(t *testing.T) {
	for _, line := range requestIDCases {
		t.Run(line, func(t *testing.T) {
			wantID, wantOK := decodedRequestID([]byte(line))
			id, ok := pendingRequestID([]byte(line))
			if ok != wantOK || string(id) != string(wantID) {
				t.Errorf("pendingRequestID = %s, %t; decoding finds %s, %t", id, ok, wantID, wantOK)
			}
		})
	}
}

func FuzzPendingRequestID(f *testing.F) {
	for _, line := range requestIDCases {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		wantID, wantOK := decodedRequestID([]byte(line))
		id, ok := pendingRequestID([]byte(line))
		if ok != wantOK || string(id) != string(wantID) {
			t.Errorf("pendingRequestID(%q) = %s, %t; decoding finds %s, %t", line, id, ok, wantID, wantOK)
		}
	})
}

var guardedCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{"name":"x","uri":"y"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"pdpp://record/a/b"}}`,
	`{"Method":"tools/call","PARAMS":{"Name":"n\u00e9"}}`,
	`{"params":{"name":"a"},"params":{"uri":"b"},"method":"x"}`,
	`{"params":{"name":"a"},"params":null}`,
	`{"params":5}`,
	`{"params":{"name":5}}`,
	`{"params":{"name":null,"uri":"u"}}`,
	`{"method":["x"]}`,
	`{"method":"a\"b","params":{"name":"\ud800"}}`,
	"{\"params\":{\"name\":\"\xff\xfe\"}}",
	`[{"method":"tools/call"}]`,
	`"x"`,
	`null`,
	`{"params":{"name":"a"}`,
	`{}`,
}

// decodedGuarded is what readGuarded stands in for.
func decodedGuarded(raw []byte) (guardedRequest, bool) {
	var req guardedRequest
	return req, json.Unmarshal(raw, &req) == nil
}

func TestReadGuardedMatchesDecode(t *testing.T) {
	for _, raw := range guardedCases {
		t.Run(raw, func(t *testing.T) {
			want, wantOK := decodedGuarded([]byte(raw))
			got, ok := readGuarded([]byte(raw))
			if ok != wantOK || (ok && got != want) {
				t.Errorf("readGuarded = %+v, %t; decoding finds %+v, %t", got, ok, want, wantOK)
			}
		})
	}
}

func FuzzReadGuarded(f *testing.F) {
	for _, raw := range guardedCases {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		want, wantOK := decodedGuarded([]byte(raw))
		got, ok := readGuarded([]byte(raw))
		if ok != wantOK || (ok && got != want) {
			t.Errorf("readGuarded(%q) = %+v, %t; decoding finds %+v, %t", raw, got, ok, want, wantOK)
		}
	})
}
