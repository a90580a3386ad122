package transport

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
)

// mcp-go v1.2.1 answers every error a resource handler returns with
// -32603 and the error's text as the message: a handler cannot choose the
// code. A *ResourceError's text is a small JSON document under
// resourceErrorKey, which both transports turn into a JSON-RPC error with
// its code, a readable message and the typed error object as data;
// in-process clients, which see mcp-go's answer unchanged, still get the
// typed object inside the message.
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

// errorReply is what the rewrites of a JSON-RPC error reply read of it.
type errorReply struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// rewriteResourceError turns an error reply carrying a *ResourceError's
// text into the error it describes; any other message comes back unchanged.
func rewriteResourceError(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(resourceErrorKey)) {
		return msg
	}
	var reply errorReply
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
	out := marshalRPCError(reply.ID, re.Code, cmp.Or(text, "resource read failed"), re.Error)
	if bytes.HasSuffix(msg, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// RequestBounds are the sizes a server checks on every request before any
// work that grows with them: mcp-go matches a resources/read URI against
// every resource template (work that grew superlinearly with a long URI, up
// to seconds of CPU for one 1 MiB URI) and looks a tool name up and echoes it
// in its error. Generated catalogs declare both figures (MaxResourceURIBytes,
// MaxToolNameBytes).
type RequestBounds struct {
	// ResourceURIBytes bounds the uri of resources/read.
	ResourceURIBytes int
	// ToolNameBytes bounds the name of tools/call: no tool has a longer one.
	ToolNameBytes int
}

// RequestGuard returns the server option that refuses, before mcp-go reads
// further, a resources/read uri or tools/call name longer than b allows:
// JSON-RPC -32602 with a typed error as data ({"code": "too_long",
// "message", "param", "max_bytes"}) over HTTP and stdio (an in-process
// client sees it inside mcp-go's -32600 message). The check reads the
// message once, in time proportional to its size as reading it did. It
// installs the server's hooks (server.WithHooks): use it instead of others.
func RequestGuard(b RequestBounds) server.ServerOption {
	hooks := &server.Hooks{}
	hooks.AddOnRequestInitialization(b.check)
	return server.WithHooks(hooks)
}

// guardedRequest is the part of a request RequestGuard looks at.
type guardedRequest struct {
	Method string `json:"method"`
	Params struct {
		URI  string `json:"uri"`
		Name string `json:"name"`
	} `json:"params"`
}

func (b RequestBounds) check(_ context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	req, ok := readGuarded(raw)
	if !ok {
		return nil // mcp-go answers what it cannot parse itself
	}
	switch mcp.MCPMethod(req.Method) {
	case mcp.MethodResourcesRead:
		if b.ResourceURIBytes > 0 && len(req.Params.URI) > b.ResourceURIBytes {
			return tooLong("uri", "resource URI", len(req.Params.URI), b.ResourceURIBytes)
		}
	case mcp.MethodToolsCall:
		if b.ToolNameBytes > 0 && len(req.Params.Name) > b.ToolNameBytes {
			return tooLong("name", "tool name", len(req.Params.Name), b.ToolNameBytes)
		}
	}
	return nil
}

// tooLong is the -32602 error of a request member over its bound.
func tooLong(param, what string, n, max int) error {
	obj, _ := json.Marshal(map[string]any{
		"code":      "too_long",
		"message":   fmt.Sprintf("the %s is %d bytes, over the %d-byte limit; nothing was looked up", what, n, max),
		"param":     param,
		"max_bytes": max,
	})
	return &ResourceError{RPCCode: mcp.INVALID_PARAMS, Object: obj}
}

var jsonNull = json.RawMessage("null")

type rpcErrorDetail struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// marshalRPCError renders a JSON-RPC 2.0 error response body (id null when
// unknown). The message may echo the request: its hidden characters are
// shown (unseen.Show).
func marshalRPCError(id json.RawMessage, code int, message string, data any) []byte {
	if len(id) == 0 {
		id = jsonNull
	}
	e := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcErrorDetail  `json:"error"`
	}{"2.0", id, rpcErrorDetail{code, unseen.Show(message), data}}
	b, err := json.Marshal(e)
	if err != nil {
		// Only data can fail to marshal; drop it rather than the error.
		e.Error.Data = nil
		b, _ = json.Marshal(e)
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
	if jsontext.Value(body).Kind() != '{' || json.Unmarshal(body, &e) != nil {
		return envelope{}
	}
	// The id forms JSON-RPC allows: string, number or null.
	if k := jsontext.Value(e.ID).Kind(); k != '"' && k != '0' && k != 'n' {
		e.ID = nil
	}
	return e
}

// showErrorText returns the error reply msg with the hidden characters of
// its message and data shown as markers (unseen.Show, unseen.ShowJSON):
// mcp-go echoes an unknown tool, method or resource URI as spelled. The id
// keeps its value (a raw hidden character in it is \u-escaped). Any other
// message comes back unchanged, after one scan when it hides nothing.
func showErrorText(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"error"`)) || !unseen.HasJSON(msg) {
		return msg
	}
	var reply errorReply
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

// errBadObject stops a walk at an object found invalid inside it.
var errBadObject = errors.New("not a valid JSON object")

// readGuarded reads raw as json.Unmarshal into guardedRequest does; ok is
// false where that fails. An object is read at its top level and in params
// in one pass (walkDecoded), a small part of a decode's cost, decoding only
// the strings it keeps; anything else is left to encoding/json.
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
