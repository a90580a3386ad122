package transport

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
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

// marshalRPCError renders a JSON-RPC error response body. The message may
// echo the request: its hidden characters are shown (unseen.Show).
func marshalRPCError(id json.RawMessage, code int, message string, data any) []byte {
	if len(id) == 0 {
		id = jsonNull
	}
	message = unseen.Show(message)
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
	if len(body) == 0 || jsontext.Value(body).Kind() != '{' {
		return e
	}
	if json.Unmarshal(body, &e) != nil {
		return envelope{}
	}
	// The id forms JSON-RPC allows: string, number or null.
	if k := jsontext.Value(e.ID).Kind(); k != '"' && k != '0' && k != 'n' {
		e.ID = nil
	}
	return e
}

// showErrorText returns the JSON-RPC error reply msg with the hidden
// characters of its message and data shown as markers (unseen.Show,
// unseen.ShowJSON): mcp-go echoes an unknown tool, method or resource URI
// as the request spelled it. The id is left as the request sent it (a
// raw hidden character in it is \u-escaped, the same value). Any other
// message comes back unchanged; one scan when it holds no hidden character.
func showErrorText(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"error"`)) || !unseen.HasJSON(msg) {
		return msg
	}
	var reply struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &reply) != nil || reply.Error == nil {
		return msg
	}
	var data any
	if len(reply.Error.Data) > 0 && !bytes.Equal(reply.Error.Data, jsonNull) {
		shown, _ := unseen.ShowJSON(reply.Error.Data, nil)
		data = json.RawMessage(shown)
	}
	out := marshalRPCError(unseen.EscapeJSON(reply.ID), reply.Error.Code, reply.Error.Message, data)
	if bytes.HasSuffix(msg, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}
