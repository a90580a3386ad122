package papercli

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/gen/papertools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
)

// flagSet is a FlagSet whose flags take their defaults from environment
// variables, named in the help text.
type flagSet struct {
	*flag.FlagSet
	env Env
}

func newFlagSet(env Env, name, synopsis string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: paper-mcp-server %s\n\nFlags (environment variable in brackets):\n", synopsis)
		fs.PrintDefaults()
	}
	return &flagSet{FlagSet: fs, env: env}
}

func (f *flagSet) str(p *string, name, envName, def, usage string) {
	if v := f.env.Getenv(envName); v != "" {
		def = v
	}
	f.StringVar(p, name, def, usage+" ["+envName+"]")
}

func (f *flagSet) dur(p *time.Duration, name, envName string, def time.Duration, usage string) error {
	if v := f.env.Getenv(envName); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fail(ExitUsage, "%s=%q is not a duration such as 10s", envName, v)
		}
		def = d
	}
	f.DurationVar(p, name, def, usage+" ["+envName+"]")
	return nil
}

func (f *flagSet) int64(p *int64, name, envName string, def int64, usage string) error {
	if v := f.env.Getenv(envName); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fail(ExitUsage, "%s=%q is not an integer", envName, v)
		}
		def = n
	}
	f.Int64Var(p, name, def, usage+" ["+envName+"]")
	return nil
}

// parse parses args; --help returns flag.ErrHelp, bad flags a usage error,
// and stray positional arguments are refused.
func (f *flagSet) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fail(ExitUsage, "%v", err)
	}
	if f.NArg() > 0 {
		return fail(ExitUsage, "unexpected arguments %q", f.Args())
	}
	return nil
}

// snapshotFlags locate the snapshot and name the server.
type snapshotFlags struct {
	snapshot     string
	assetsDir    string
	assetsURL    string
	assetTimeout time.Duration
	serverName   string
}

// registerServer adds the flags every serving command has.
func (s *snapshotFlags) registerServer(f *flagSet) error {
	f.str(&s.serverName, "server-name", "PAPER_MCP_SERVER_NAME", papertools.ServerName, "server name reported to MCP clients")
	return f.dur(&s.assetTimeout, "asset-timeout", "PAPER_MCP_ASSET_TIMEOUT", assets.DefaultTimeout, "timeout of one asset fetch from --assets-base-url")
}

// register adds the snapshot location flags too.
func (s *snapshotFlags) register(f *flagSet) error {
	f.str(&s.snapshot, "snapshot", "PAPER_MCP_SNAPSHOT", "", "snapshot database (.sqlite3), opened read-only")
	f.str(&s.assetsDir, "assets", "PAPER_MCP_ASSETS", "", "local folder of the snapshot's static assets (summary/, md/, md_translate/)")
	f.str(&s.assetsURL, "assets-base-url", "PAPER_MCP_ASSETS_BASE_URL", "", "HTTP(S) base URL of the static assets, used when --assets lacks a file")
	return s.registerServer(f)
}

func (s *snapshotFlags) check() error {
	if s.snapshot == "" {
		return fail(ExitUsage, "--snapshot (or PAPER_MCP_SNAPSHOT) is required, e.g. --snapshot ./paper_snapshot.sqlite3")
	}
	if s.assetsDir == "" && s.assetsURL == "" {
		return fail(ExitUsage, "give --assets DIR, --assets-base-url URL, or both (PAPER_MCP_ASSETS / PAPER_MCP_ASSETS_BASE_URL)")
	}
	if s.assetTimeout <= 0 {
		return fail(ExitUsage, "--asset-timeout must be positive")
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
		return nil, fail(ExitConfig, "%v", err)
	}
	if st.Immutable() {
		log.Warn("the snapshot is in WAL mode in a directory this process cannot write; reading it as immutable (any -wal file is ignored)", "snapshot", s.snapshot)
	}
	loader, err := assets.New(assets.Config{Dir: s.assetsDir, BaseURL: s.assetsURL, Timeout: s.assetTimeout})
	if err != nil {
		st.Close()
		return nil, fail(ExitConfig, "%v", err)
	}
	h, err := papers.New(papers.Config{Store: st, Assets: loader, Logger: log})
	if err != nil {
		loader.Close()
		st.Close()
		return nil, fail(ExitFailure, "%v", err)
	}
	log.Info("snapshot opened", "snapshot", s.snapshot, "assets", s.assetsDir, "assets_base_url", s.assetsURL != "",
		"doi", st.HasDOI(), "bibtex", st.HasBibTeX())
	return &opened{store: st, assets: loader, server: papers.NewServer(h, papers.ServerOptions{Name: s.serverName, Version: version()})}, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
