package transport

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
)

// rpcErrorBody is a JSON-RPC 2.0 error response. ID stays null when the
// request id is unknown (body not read yet, or not parseable).
type rpcErrorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorDetail  `json:"error"`
}

type rpcErrorDetail struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

var jsonNull = json.RawMessage("null")

// marshalRPCError renders a JSON-RPC error response body.
func marshalRPCError(id json.RawMessage, code int, message string, data any) []byte {
	if len(id) == 0 {
		id = jsonNull
	}
	b, err := json.Marshal(rpcErrorBody{
		JSONRPC: "2.0",
		ID:      id,
		Error:   rpcErrorDetail{Code: code, Message: message, Data: data},
	})
	if err != nil {
		// Only data can fail to marshal; drop it rather than the error.
		b, _ = json.Marshal(rpcErrorBody{JSONRPC: "2.0", ID: id, Error: rpcErrorDetail{Code: code, Message: message}})
	}
	return b
}

// writeRPCError answers with an HTTP status and a JSON-RPC error body.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string, data any) {
	writeJSON(w, status, marshalRPCError(id, code, message, data))
}

// writeJSON writes a complete application/json reply.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// envelope is the part of a JSON-RPC message the transport looks at.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// peekEnvelope reads the id and method of a single JSON-RPC message; it
// returns zero values when body is not a JSON object.
func peekEnvelope(body []byte) envelope {
	var e envelope
	if len(body) == 0 || jsonwalk.FirstByte(body) != '{' {
		return e
	}
	if json.Unmarshal(body, &e) != nil {
		return envelope{}
	}
	if !validID(e.ID) {
		e.ID = nil
	}
	return e
}

// validID accepts the id forms JSON-RPC allows: string, number or null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	default:
		return bytes.Equal(id, jsonNull)
	}
}
