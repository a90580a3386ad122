package papers

import (
	"cmp"
	"errors"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/mcpkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
)

// Config wires the handlers to a snapshot.
type Config struct {
	Store  *store.Store   // the snapshot database, opened read-only
	Assets *assets.Loader // the snapshot's static assets
	Logger *slog.Logger   // diagnostics (stderr); default slog.Default()
	// InFlight bounds the bytes all calls hold at once for assets; default
	// a limiter of DefaultMaxInFlightBytes.
	InFlight *inflight.Limiter
}

// Handlers implements papertools.Handlers and papertools.ResourceHandlers.
type Handlers struct {
	store    *store.Store
	assets   *assets.Loader
	log      *slog.Logger
	inflight *inflight.Limiter
}

var (
	_ papertools.Handlers         = (*Handlers)(nil)
	_ papertools.ResourceHandlers = (*Handlers)(nil)
)

// New checks cfg and returns the handlers.
func New(cfg Config) (*Handlers, error) {
	if cfg.Store == nil || cfg.Assets == nil {
		return nil, errors.New("papers: a store and an asset loader are required")
	}
	return &Handlers{store: cfg.Store, assets: cfg.Assets, log: cmp.Or(cfg.Logger, slog.Default()),
		inflight: cmp.Or(cfg.InFlight, inflight.New(DefaultMaxInFlightBytes))}, nil
}

// ServerOptions name the MCP server.
type ServerOptions struct {
	Name    string // default papertools.ServerName
	Version string
}

// NewServer builds the MCP server: the generated catalog registered over
// h, instructions from spec/papers.instructions.md, tools and resources
// only (what the hosted transport requires).
func NewServer(h *Handlers, opt ServerOptions) *server.MCPServer {
	opts := append(mcpkit.CacheHints(),
		server.WithInstructions(papertools.Instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		// Each call holds the bytes of the assets it reads in one account
		// of the process-wide limiter until it returns.
		server.WithToolHandlerMiddleware(h.budgetMiddleware),
		server.WithResourceHandlerMiddleware(h.resourceBudget),
		// No character a person cannot see reaches a client raw.
		server.WithToolHandlerMiddleware(showHidden),
		// A resource URI or tool name over its catalog bound is refused
		// before mcp-go matches or looks it up.
		transport.RequestGuard(transport.RequestBounds{
			ResourceURIBytes: papertools.MaxResourceURIBytes, ToolNameBytes: papertools.MaxToolNameBytes}),
	)
	s := server.NewMCPServer(cmp.Or(opt.Name, papertools.ServerName), opt.Version, opts...)
	papertools.Register(s, h, h, mcpkit.RegisterOptions{ArgErrorResult: ArgErrorResult})
	return s
}
