package cli

import (
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
)

// snapshotFlags locate the snapshot and name the server.
type snapshotFlags struct {
	snapshot     string
	assetsDir    string
	assetsURL    string
	assetTimeout time.Duration
	serverName   string
}

// registerServer adds the flag every serving command has, the demo included
// (which builds its own snapshot and local assets, so it takes no asset flags).
func (s *snapshotFlags) registerServer(f *cmdkit.FlagSet) {
	f.Str(&s.serverName, "server-name", "PAPER_MCP_SERVER_NAME", papertools.ServerName, "server name reported to MCP clients")
	s.assetTimeout = assets.DefaultTimeout
}

// register adds the snapshot and asset location flags too.
func (s *snapshotFlags) register(f *cmdkit.FlagSet) error {
	f.Str(&s.snapshot, "snapshot", "PAPER_MCP_SNAPSHOT", "", "snapshot database (.sqlite3), opened read-only")
	f.Str(&s.assetsDir, "assets", "PAPER_MCP_ASSETS", "", "local folder of the snapshot's static assets (summary/, md/, md_translate/)")
	f.Str(&s.assetsURL, "assets-base-url", "PAPER_MCP_ASSETS_BASE_URL", "", "HTTP(S) base URL of the static assets, used when --assets lacks a file")
	s.registerServer(f)
	return f.Dur(&s.assetTimeout, "asset-timeout", "PAPER_MCP_ASSET_TIMEOUT", assets.DefaultTimeout, "timeout of one asset fetch from --assets-base-url")
}

func (s *snapshotFlags) check() error {
	if s.snapshot == "" {
		return cmdkit.Fail(cmdkit.ExitUsage, "--snapshot (or PAPER_MCP_SNAPSHOT) is required, e.g. --snapshot ./paper_snapshot.sqlite3")
	}
	if s.assetsDir == "" && s.assetsURL == "" {
		return cmdkit.Fail(cmdkit.ExitUsage, "give --assets DIR, --assets-base-url URL, or both (PAPER_MCP_ASSETS / PAPER_MCP_ASSETS_BASE_URL)")
	}
	if s.assetTimeout <= 0 {
		return cmdkit.Fail(cmdkit.ExitUsage, "--asset-timeout must be positive")
	}
	return nil
}

// opened is a snapshot ready to serve.
type opened struct {
	store  *store.Store
	assets *assets.Loader
	server *server.MCPServer
}

func (o *opened) Close() {
	o.assets.Close()
	o.store.Close()
}

// open opens the snapshot read-only and the assets, and builds the server.
func (s *snapshotFlags) open(log *slog.Logger) (*opened, error) {
	st, err := store.Open(s.snapshot)
	if err != nil {
		return nil, cmdkit.Fail(cmdkit.ExitConfig, "%v", err)
	}
	if st.Immutable() {
		log.Warn("the snapshot is in WAL mode in a directory this process cannot write; reading it as immutable (any -wal file is ignored)", "snapshot", s.snapshot)
	}
	loader, err := assets.New(assets.Config{Dir: s.assetsDir, BaseURL: s.assetsURL, Timeout: s.assetTimeout})
	if err != nil {
		st.Close()
		return nil, cmdkit.Fail(cmdkit.ExitConfig, "%v", err)
	}
	h, err := papers.New(papers.Config{Store: st, Assets: loader, Logger: log})
	if err != nil {
		loader.Close()
		st.Close()
		return nil, cmdkit.Fail(cmdkit.ExitFailure, "%v", err)
	}
	log.Info("snapshot opened", "snapshot", s.snapshot, "assets", s.assetsDir, "assets_base_url", s.assetsURL != "",
		"doi", st.HasDOI(), "bibtex", st.HasBibTeX())
	return &opened{store: st, assets: loader, server: papers.NewServer(h, papers.ServerOptions{Name: s.serverName, Version: version()})}, nil
}
