package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
)

// demoSnapshot builds the fixture library into dir/snapshot, or reuses a
// snapshot already built there.
func demoSnapshot(dir string) (*snapshot.Snapshot, error) {
	root := filepath.Join(dir, "snapshot")
	db := filepath.Join(root, snapshot.DBFile)
	if _, err := os.Stat(db); err == nil {
		return &snapshot.Snapshot{Dir: root, DBPath: db, AssetsDir: filepath.Join(root, snapshot.AssetsDir)}, nil
	}
	snap, err := snapshot.BuildFixture(root, false)
	if err != nil {
		return nil, cmdkit.Fail(cmdkit.ExitFailure, "building the demo snapshot: %v", err)
	}
	return snap, nil
}

func runDemo(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var s snapshotFlags
	var h httpFlags
	var dir string
	var once, stdio bool
	f := cmdkit.NewFlagSet(env, "paper-mcp-server", "demo", "demo [--listen "+DefaultListen+"] [--dir DIR] [--once] [--stdio]")
	if err := cmp.Or(s.registerServer(f), h.register(f, DefaultListen)); err != nil {
		return err
	}
	f.Str(&dir, "dir", "PAPER_MCP_DEMO_DIR", "", "keep the demo snapshot in this directory (reused when present) instead of a temporary one")
	f.BoolVar(&once, "once", false, "run the sample journey over HTTP and exit instead of serving until Ctrl-C")
	f.BoolVar(&stdio, "stdio", false, "serve the demo snapshot over stdio instead of HTTP (for desktop client configs)")
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	if stdio && once {
		return cmdkit.Fail(cmdkit.ExitUsage, "--once runs the HTTP journey; it cannot be combined with --stdio")
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "paper-mcp-demo-")
		if err != nil {
			return cmdkit.Fail(cmdkit.ExitFailure, "%v", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	snap, err := demoSnapshot(dir)
	if err != nil {
		return err
	}
	s.snapshot, s.assetsDir = snap.DBPath, snap.AssetsDir
	o, err := s.open(log)
	if err != nil {
		return err
	}
	defer o.Close()
	if stdio {
		log.Info("serving the demo snapshot over stdio", "snapshot", snap.DBPath)
		return transport.ServeStdio(ctx, o.server, env.Stdin, env.Stdout, log)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if h.MetricsListen == "" {
		h.MetricsListen = "127.0.0.1:0" // metrics are on in the demo
	}
	bound, metricsAt := make(chan net.Addr, 1), make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- serveHTTP(ctx, log, o, &h, func(a net.Addr) { bound <- a }, func(a net.Addr) { metricsAt <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-bound:
	case err := <-served:
		return err
	}
	mcpURL := "http://" + addr.String() + "/mcp"
	printDemoConfig(env.Stdout, mcpURL, snap, dir, h.bearerToken)
	select {
	case a := <-metricsAt:
		fmt.Fprintf(env.Stdout, "Prometheus metrics: http://%s/metrics\n\n", a)
	default:
	}
	if err := runJourney(ctx, env.Stdout, mcpURL, h.bearerToken); err != nil {
		return cmdkit.Fail(cmdkit.ExitFailure, "sample journey: %v", err)
	}
	return cmdkit.FinishServing(ctx, env.Stdout, once, cancel, served)
}

func printDemoConfig(w io.Writer, mcpURL string, snap *snapshot.Snapshot, dir, token string) {
	stdio, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"papers": map[string]any{
		"command": "paper-mcp-server",
		"args":    []string{"--snapshot", snap.DBPath, "--assets", snap.AssetsDir},
	}}}, "", "  ")
	header := ""
	if token != "" {
		header = ` --header "Authorization: Bearer ` + token + `"`
	}
	fmt.Fprintf(w, `paper-mcp-server demo: %d synthetic papers
  snapshot:       %s
  assets:         %s
  MCP over HTTP:  %s

MCP Inspector: transport "Streamable HTTP", URL %s

Claude Code:
  claude mcp add --transport http papers %s%s

Claude Desktop (stdio; needs paper-mcp-server on PATH: go install ./cmd/paper-mcp-server):
%s
(the snapshot lives in %s; pass --dir to keep it after the demo ends,
or use "args": ["demo", "--stdio"] to rebuild it on every start)

`, len(snapshot.Fixture()), snap.DBPath, snap.AssetsDir, mcpURL, mcpURL, mcpURL, header, stdio, dir)
}
