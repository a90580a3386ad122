package pdpp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// ServerOptions select what the built server exposes.
type ServerOptions struct {
	Name     string
	Version  string
	Toolsets []string // nil: every toolset
	// CallTimeout is the budget of one tool call or resource read across
	// all of its RS requests (token check, expand check, data); zero means
	// the RS client's own timeout.
	CallTimeout time.Duration
	// Unavailable, when set, is why this server has no usable credential
	// (stdio without --fail-fast: not connected, an invalid or expired
	// credential, an owner token refused). The server still answers
	// initialize, with instructions that start with UnavailableNote and the
	// code and end with the message (what is wrong and the fix), and the
	// lists; every tool call is the error (isError, structuredContent.error
	// with the code and the message) and every resource read fails with it,
	// before any argument check and with no RS request.
	Unavailable *Unavailable
}

// Unavailable says why a server has no usable credential: a typed error
// code (for example not_connected) and a message naming the fix.
type Unavailable struct {
	Code, Message string
}

// UnavailableNote begins the instructions of a server without a usable
// credential (ServerOptions.Unavailable). Its line is short (under 70
// bytes), so the first 512 characters of the instructions still hold the
// core guidance the catalog puts there; the reason and the fix close the
// instructions.
const UnavailableNote = "NOT CONNECTED ("

// NewServer builds the MCP server used by stdio and HTTP alike: the generated
// tools, resource templates and views over a, the catalog's instructions,
// capabilities for tools and resources, and the MCP Apps extension. Every call and resource read
// runs under one deadline of opt.CallTimeout.
func NewServer(a *Adapter, opt ServerOptions) *server.MCPServer {
	name := cmp.Or(opt.Name, mcptools.ServerName)
	// The newest revision repeats both in every result; the reply budgets
	// keep room for them at these bounds.
	name = clipJSONString(name, mcptools.MaxServerInfoNameBytes)
	version := clipJSONString(opt.Version, mcptools.MaxServerInfoVersionBytes)
	budget := opt.CallTimeout
	if budget <= 0 && a.rs != nil {
		budget = a.rs.Timeout()
	}
	if budget <= 0 {
		budget = rs.DefaultTimeout
	}
	instructions := mcptools.Instructions
	if opt.Unavailable != nil {
		// Only the catalog's first block (the core guidance) stays: every
		// tool fails until the server is restarted with a credential, and
		// the reason and fix must fit the instructions budget beside it.
		head, _, _ := strings.Cut(instructions, "\n\n")
		instructions = UnavailableNote + opt.Unavailable.Code + "): tools fail; fix at the end.\n\n" +
			head + "\n\nNOT CONNECTED: " + opt.Unavailable.Message
	}
	opts := append(mcpkit.CacheHints(),
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		// The MCP Apps extension: tools that name a view (gen/mcptools
		// views.go) render in it on hosts that support it.
		server.WithExtensions(mcptools.Extensions()),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithToolHandlerMiddleware(a.toolBudget(budget)),
		server.WithResourceHandlerMiddleware(a.resourceBudget(budget)),
		// A resource URI or tool name over its catalog bound is refused
		// before mcp-go matches or looks it up.
		transport.RequestGuard(transport.RequestBounds{
			ResourceURIBytes: mcptools.MaxResourceURIBytes, ToolNameBytes: mcptools.MaxToolNameBytes}),
	)
	if opt.Unavailable != nil {
		// The innermost middleware: it never calls the handler, so no
		// argument check, handler or RS request runs.
		u := rs.AdapterError(opt.Unavailable.Code, opt.Unavailable.Message, "")
		opts = append(opts,
			server.WithToolHandlerMiddleware(func(server.ToolHandlerFunc) server.ToolHandlerFunc {
				return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return errorResult(u, req.Params.Name, nil), nil
				}
			}),
			server.WithResourceHandlerMiddleware(func(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
				return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
					// A view is the server's own static document, no RS
					// data: a host still renders the tools' error in it.
					if _, ok := mcptools.ViewDocument(req.Params.URI); ok {
						return next(ctx, req)
					}
					return nil, resourceFailure(ctx, u)
				}
			}))
	}
	s := server.NewMCPServer(name, version, opts...)
	mcptools.Register(s, a, a, mcpkit.RegisterOptions{Toolsets: opt.Toolsets, ArgErrorResult: argErrorResult})
	return s
}

// clipJSONString cuts s, on a character boundary, to the longest prefix
// whose JSON string encoding takes at most n bytes besides its quotes (n
// <= 0: no bound).
func clipJSONString(s string, n int) string {
	if n <= 0 {
		return s
	}
	used := 0
	// One step per character of s, stopping at the first that does not fit.
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		w := evidence.JSONStringLen(s[i:i+size]) - 2
		if used+w > n {
			return s[:i]
		}
		used += w
		i += size
	}
	return s
}

// budgetError is the typed error of a call that used up its budget.
func budgetError(d time.Duration) *rs.Error {
	return rs.AdapterError("rs_timeout",
		fmt.Sprintf("the call did not finish within its %v budget (--rs-timeout); retry, or ask for less", d), "")
}

// budgetSpent reports whether ctx ended because its own budget ran out while
// the caller's context (parent) is still live.
func budgetSpent(ctx, parent context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil
}

// toolBudget runs each tool call under one deadline of d, shared by its RS
// requests, and one account of bytes in flight (package inflight) holding
// its RS bodies and a full reply's members until the call and its reply
// are done. At detail "full" RS bodies are read only up to the full
// ceiling (plus FullBodyMargin); a longer one is refused with
// full_too_large unread. A call that fails once the budget is spent is a
// typed rs_timeout error, whatever step it was at, unless it failed for
// want of bytes in flight (server_busy says more).
func (a *Adapter) toolBudget(d time.Duration) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(parent context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(parent, d)
			defer cancel()
			acct := a.rs.InFlight().OpenFor(parent)
			defer acct.Close()
			ctx = inflight.WithAccount(ctx, acct)
			args := req.GetArguments()
			if d, _ := args["detail"].(string); d == evidence.DetailFull {
				tool := req.Params.Name
				ctx = rs.WithBodyLimit(ctx, a.fullMax+FullBodyMargin, func(int64) *rs.Error {
					return fullTooLarge(tool, args, a.fullMax, 0)
				})
			}
			res, err := next(ctx, req)
			var e struct{ Code string }
			if res != nil && res.IsError {
				m, _ := res.StructuredContent.(map[string]any)
				raw, _ := m["error"].(json.RawMessage) // nil, and no code, unless errorResult built it
				_ = json.Unmarshal(raw, &e)
			}
			if (err != nil || res == nil || res.IsError) && budgetSpent(ctx, parent) && e.Code != rs.CodeServerBusy {
				return errorResult(budgetError(d), req.Params.Name, nil), nil
			}
			return res, err
		}
	}
}

// resourceBudget is toolBudget for resource reads (which have no detail).
func (a *Adapter) resourceBudget(d time.Duration) server.ResourceHandlerMiddleware {
	return func(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
		return func(parent context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			ctx, cancel := context.WithTimeout(parent, d)
			defer cancel()
			acct := a.rs.InFlight().OpenFor(parent)
			defer acct.Close()
			res, err := next(inflight.WithAccount(ctx, acct), req)
			if err != nil && budgetSpent(ctx, parent) {
				return nil, resourceFailure(parent, budgetError(d))
			}
			return res, err
		}
	}
}
