package transport

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcp-go v1.2.1 answers every error a resource handler returns with
// -32603 and the error's text as the message; a handler cannot choose the
// code. A handler that returns a *ResourceError instead gets its code back:
// its text is a small JSON document under resourceErrorKey, which both
// transports (HTTP replies and stdio lines) turn into a JSON-RPC error with
// that code, a readable message and the typed error object as data.
// In-process clients, which see mcp-go's answer unchanged, still get the
// typed object inside the message.

// resourceErrorKey names the document a *ResourceError renders as its text.
const resourceErrorKey = "mcp_resource_error"

// ResourceError is a failed resources/read with its JSON-RPC code and the
// typed error object ({"code": ..., "message": ..., ...}) sent as data.
type ResourceError struct {
	RPCCode int
	Object  json.RawMessage
}

func (e *ResourceError) Error() string {
	b, _ := json.Marshal(map[string]resourceErrorDoc{resourceErrorKey: {Code: e.RPCCode, Error: e.Object}})
	return string(b)
}

type resourceErrorDoc struct {
	Code  int             `json:"code"`
	Error json.RawMessage `json:"error"`
}

// InvalidResourceURI is the error of a resource URI that does not name a
// resource: JSON-RPC -32602 (invalid params).
func InvalidResourceURI(obj json.RawMessage) error {
	return &ResourceError{RPCCode: mcp.INVALID_PARAMS, Object: obj}
}

// ResourceNotFound is the error of a well-formed URI whose resource does not
// exist: -32002, or -32602 for a request made under protocol 2026-07-28,
// which folded not-found into invalid params.
func ResourceNotFound(ctx context.Context, obj json.RawMessage) error {
	code := mcp.RESOURCE_NOT_FOUND
	if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		code = mcp.INVALID_PARAMS
	}
	return &ResourceError{RPCCode: code, Object: obj}
}

// ResourceFailed is any other failed read: -32603 with the typed object.
func ResourceFailed(obj json.RawMessage) error {
	return &ResourceError{RPCCode: mcp.INTERNAL_ERROR, Object: obj}
}

// rewriteResourceError turns a JSON-RPC error reply that carries a
// *ResourceError's text into the error it describes; any other message is
// returned unchanged.
func rewriteResourceError(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(resourceErrorKey)) {
		return msg
	}
	var reply struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	// mcp-go answers a handler's error with -32603 and a hook's refusal
	// (see RequestGuard) with -32600.
	if json.Unmarshal(msg, &reply) != nil || reply.Error == nil ||
		(reply.Error.Code != mcp.INTERNAL_ERROR && reply.Error.Code != mcp.INVALID_REQUEST) {
		return msg
	}
	var doc map[string]resourceErrorDoc
	if json.Unmarshal([]byte(reply.Error.Message), &doc) != nil {
		return msg
	}
	re, ok := doc[resourceErrorKey]
	if !ok || re.Code == 0 || len(re.Error) == 0 {
		return msg
	}
	// The typed object names its code in "code" (PDPP) or "error" (papers).
	var obj struct {
		Code    string          `json:"code"`
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	_ = json.Unmarshal(re.Error, &obj)
	code := obj.Code
	if code == "" {
		_ = json.Unmarshal(obj.Error, &code)
	}
	text := obj.Message
	if code != "" {
		text = code + ": " + text
	}
	if text == "" {
		text = "resource read failed"
	}
	out := marshalRPCError(reply.ID, re.Code, text, re.Error)
	if bytes.HasSuffix(msg, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}
