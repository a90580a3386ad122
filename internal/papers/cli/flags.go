package cli

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
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
	inFlightMax  int64 // --max-inflight-bytes
}

// registerServer adds the flags every serving command has, the demo included
// (which builds its own snapshot and local assets, so it takes no asset flags).
func (s *snapshotFlags) registerServer(f *cmdkit.FlagSet) error {
	f.Str(&s.serverName, "server-name", "PAPER_MCP_SERVER_NAME", papertools.ServerName, "server name reported to MCP clients")
	s.assetTimeout = assets.DefaultTimeout
	return f.Int64(&s.inFlightMax, "max-inflight-bytes", "PAPER_MCP_MAX_INFLIGHT_BYTES", papers.DefaultMaxInFlightBytes,
		fmt.Sprintf("bytes all calls may hold at once for the assets they read (at least %d); a call that finds no room waits, then fails with server_busy", papers.MinMaxInFlightBytes))
}

// register adds the snapshot and asset location flags too.
func (s *snapshotFlags) register(f *cmdkit.FlagSet) error {
	f.Str(&s.snapshot, "snapshot", "PAPER_MCP_SNAPSHOT", "", "snapshot database (.sqlite3), opened read-only")
	f.Str(&s.assetsDir, "assets", "PAPER_MCP_ASSETS", "", "local folder of the snapshot's static assets (summary/, md/, md_translate/)")
	f.Str(&s.assetsURL, "assets-base-url", "PAPER_MCP_ASSETS_BASE_URL", "", "HTTP(S) base URL of the static assets, used when --assets lacks a file")
	return cmp.Or(s.registerServer(f), f.Dur(&s.assetTimeout, "asset-timeout", "PAPER_MCP_ASSET_TIMEOUT", assets.DefaultTimeout, "timeout of one asset fetch from --assets-base-url"))
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
	return s.checkServer()
}

// checkServer checks the flags of registerServer.
func (s *snapshotFlags) checkServer() error {
	s.inFlightMax = cmp.Or(s.inFlightMax, papers.DefaultMaxInFlightBytes)
	if s.inFlightMax < papers.MinMaxInFlightBytes {
		return cmdkit.Fail(cmdkit.ExitUsage, "--max-inflight-bytes must be at least %d (a text at the largest max_chars), got %d", papers.MinMaxInFlightBytes, s.inFlightMax)
	}
	return nil
}

// After the bytes in flight peaked at idleFreePeak or more, freed memory
// goes back to the system once they fall to zero, at most once every
// idleFreeEvery (see inflight.FreeWhenIdle), as in the PDPP server.
const (
	idleFreePeak  = 8 << 20
	idleFreeEvery = 10 * time.Second
)

// opened is a snapshot ready to serve.
type opened struct {
	store  *store.Store
	assets *assets.Loader
	server *server.MCPServer
	lim    *inflight.Limiter // the byte budget of every call
}

func (o *opened) Close() {
	o.assets.Close()
	o.store.Close()
}

// open opens the snapshot read-only and the assets, and builds the server.
func (s *snapshotFlags) open(log *slog.Logger) (*opened, error) {
	if err := s.checkServer(); err != nil {
		return nil, err
	}
	st, err := store.Open(s.snapshot)
	if err != nil {
		return nil, cmdkit.Fail(cmdkit.ExitConfig, "%v", err)
	}
	if st.Immutable {
		log.Warn("the snapshot is in WAL mode in a directory this process cannot write; reading it as immutable (any -wal file is ignored)", "snapshot", s.snapshot)
	}
	loader, err := assets.New(assets.Config{Dir: s.assetsDir, BaseURL: s.assetsURL, Timeout: s.assetTimeout})
	if err != nil {
		st.Close()
		return nil, cmdkit.Fail(cmdkit.ExitConfig, "%v", err)
	}
	lim := inflight.New(s.inFlightMax)
	lim.OnIdle(inflight.FreeWhenIdle(idleFreePeak, idleFreeEvery, nil))
	h, err := papers.New(papers.Config{Store: st, Assets: loader, Logger: log, InFlight: lim})
	if err != nil {
		loader.Close()
		st.Close()
		return nil, cmdkit.Fail(cmdkit.ExitFailure, "%v", err)
	}
	log.Info("snapshot opened", "snapshot", s.snapshot, "assets", s.assetsDir, "assets_base_url", s.assetsURL != "",
		"doi", st.HasDOI, "bibtex", st.HasBibTeX)
	return &opened{store: st, assets: loader, server: papers.NewServer(h, papers.ServerOptions{Name: s.serverName, Version: version()}), lim: lim}, nil
}
