package pdpp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/transport"
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
}

// NewServer builds the MCP server used by stdio and HTTP alike: the generated
// tools and resource templates over a, the catalog's instructions, and
// capabilities for tools and resources only. Every call and resource read
// runs under one deadline of opt.CallTimeout.
func NewServer(a *Adapter, opt ServerOptions) *server.MCPServer {
	name := opt.Name
	if name == "" {
		name = mcptools.ServerName
	}
	budget := opt.CallTimeout
	if budget <= 0 && a.rs != nil {
		budget = a.rs.Timeout()
	}
	if budget <= 0 {
		budget = rs.DefaultTimeout
	}
	s := server.NewMCPServer(name, opt.Version,
		server.WithInstructions(mcptools.Instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithToolHandlerMiddleware(toolBudget(budget)),
		server.WithResourceHandlerMiddleware(resourceBudget(budget)),
		// A resource URI or tool name over its catalog bound is refused
		// before mcp-go matches or looks it up.
		transport.RequestGuard(transport.RequestBounds{
			ResourceURIBytes: mcptools.MaxResourceURIBytes, ToolNameBytes: mcptools.MaxToolNameBytes}),
	)
	mcptools.Register(s, a, a, mcpkit.RegisterOptions{Toolsets: opt.Toolsets, ArgErrorResult: argErrorResult})
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

// toolBudget runs each tool call under one deadline of d, shared by all of
// its RS requests. A call that fails once the budget is spent is answered
// with a typed rs_timeout error, whatever step it was at.
func toolBudget(d time.Duration) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(parent context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(parent, d)
			defer cancel()
			res, err := next(ctx, req)
			if (err != nil || res == nil || res.IsError) && budgetSpent(ctx, parent) {
				return errorResult(budgetError(d), req.Params.Name, nil), nil
			}
			return res, err
		}
	}
}

// resourceBudget is toolBudget for resource reads.
func resourceBudget(d time.Duration) server.ResourceHandlerMiddleware {
	return func(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
		return func(parent context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			ctx, cancel := context.WithTimeout(parent, d)
			defer cancel()
			res, err := next(ctx, req)
			if err != nil && budgetSpent(ctx, parent) {
				return nil, resourceFailure(parent, budgetError(d))
			}
			return res, err
		}
	}
}
