package transport

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

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
// any further, a resources/read whose uri or a tools/call whose name is
// longer than b allows: JSON-RPC -32602 (invalid params) with a typed error
// as data ({"code": "too_long", "message", "param", "max_bytes"}), over
// HTTP and stdio alike (an in-process client sees the same object inside
// mcp-go's -32600 message). The check decodes the message once, which
// costs time in proportion to its size, as reading it already did. It
// installs the server's hooks (server.WithHooks), so use it instead of, not
// beside, other hooks.
func RequestGuard(b RequestBounds) server.ServerOption {
	hooks := &server.Hooks{}
	hooks.AddOnRequestInitialization(b.check)
	return server.WithHooks(hooks)
}

// guardedRequest is the part of a request RequestGuard looks at.
// readGuarded fills it as json.Unmarshal does.
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

// tooLong is the error of a request member over its bound, rendered as a
// JSON-RPC -32602 error by both transports (see ResourceError).
func tooLong(param, what string, n, max int) error {
	obj, _ := json.Marshal(map[string]any{
		"code":      "too_long",
		"message":   fmt.Sprintf("the %s is %d bytes, over the %d-byte limit; nothing was looked up", what, n, max),
		"param":     param,
		"max_bytes": max,
	})
	return &ResourceError{RPCCode: mcp.INVALID_PARAMS, Object: obj}
}
