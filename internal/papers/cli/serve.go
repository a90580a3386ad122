package cli

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

// DefaultListen is where the paper server listens by default (next to the
// PDPP server's 8787).
const DefaultListen = "127.0.0.1:8788"

// openSnapshot parses the flags of a serving command (the snapshot flags plus
// any the command adds) and opens the snapshot they name.
func openSnapshot(env Env, log *slog.Logger, args []string, name, synopsis string, extra func(*cmdkit.FlagSet) error) (*opened, error) {
	var s snapshotFlags
	f := cmdkit.NewFlagSet(env, "paper-mcp-server", name, synopsis)
	if err := s.register(f); err != nil {
		return nil, err
	}
	if extra != nil {
		if err := extra(f); err != nil {
			return nil, err
		}
	}
	if err := f.ParseNoArgs(args); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.open(log)
}

func runStdio(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	o, err := openSnapshot(env, log, args, "stdio", "[stdio] --snapshot FILE (--assets DIR | --assets-base-url URL) [flags]", nil)
	if err != nil {
		return err
	}
	defer o.Close()
	log.Info("serving MCP over stdio")
	return transport.ServeStdio(ctx, o.server, env.Stdin, env.Stdout, log)
}

// httpFlags are the flags of the hosted server, the same as the PDPP
// server's plus an optional static bearer token.
type httpFlags struct {
	cmdkit.HTTPFlags
	bearerToken string
}

func (h *httpFlags) register(f *cmdkit.FlagSet, defListen string) error {
	f.Str(&h.bearerToken, "bearer-token", "PAPER_MCP_BEARER_TOKEN", "", "unset (the default), /mcp answers anyone who reaches it, without a bearer; when set, every /mcp POST must carry Authorization: Bearer <this token> (prefer the environment variable)")
	h.RequestTimeoutDefault = "60s"
	return h.HTTPFlags.Register(f, "PAPER_MCP_", defListen)
}

func runHTTP(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var h httpFlags
	o, err := openSnapshot(env, log, args, "http", "http --snapshot FILE (--assets DIR | --assets-base-url URL) [--listen "+DefaultListen+"] [flags]",
		func(f *cmdkit.FlagSet) error { return h.register(f, DefaultListen) })
	if err != nil {
		return err
	}
	defer o.Close()
	return serveHTTP(ctx, log, o, &h, nil, nil)
}

// serveHTTP serves o over the shared /mcp transport until ctx ends;
// onListen, when set, receives the bound address (and onMetrics that of the
// admin listener, with probes and metrics, when on).
func serveHTTP(ctx context.Context, log *slog.Logger, o *opened, h *httpFlags, onListen, onMetrics func(net.Addr)) error {
	cfg := h.Config(log)
	cfg.ReadyCheck, cfg.OnListen = o.store.Ping, onListen
	if m := h.Metrics(); m != nil {
		o.lim.Observe(m)
		m.WatchBudget(o.lim.Held, o.lim.Max())
	}
	handler, err := newHandler(o.server, cfg, h.bearerToken)
	if err != nil {
		return err
	}
	return h.ServeWithMetrics(ctx, log, handler, cfg, onMetrics)
}

// newHandler is the transport's /mcp handler, behind a static bearer check
// when token is set.
func newHandler(s *server.MCPServer, cfg transport.HTTPConfig, token string) (http.Handler, error) {
	handler, err := transport.NewHTTPHandler(s, cfg)
	if err != nil {
		return nil, cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
	}
	if token != "" {
		if strings.ContainsAny(token, " \t\r\n") {
			return nil, cmdkit.Fail(cmdkit.ExitUsage, "--bearer-token must not contain white space")
		}
		// Observed outside the bearer check too, so its refusals are
		// logged and counted.
		handler = transport.Observe(cfg, requireBearer(token, handler))
	}
	return handler, nil
}

// requireBearer refuses /mcp POSTs whose Authorization is not "Bearer
// <token>" with 401 and a JSON-RPC error body (transport.Unauthorized);
// everything else (GET 405, CORS preflight, health probes) goes on to the
// transport unchanged.
//
// The header is read here, not by the transport's bearer parser: this check
// compares against one configured token that may be any text without white
// space (the parser wants RFC 6750 b64token syntax), reads the first
// Authorization header (the parser refuses two), trims white space around
// the token, and challenges with realm="paper-mcp" rather than naming
// protected-resource metadata.
func requireBearer(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		gotSum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(gotSum[:], want[:]) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		challenge := `Bearer realm="paper-mcp"`
		message, reason := "authorization required: send Authorization: Bearer <token>", "missing_token"
		switch {
		case ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(got) != "":
			challenge += `, error="invalid_token"`
			message, reason = "the bearer token was not accepted: send the token this server was started with (--bearer-token)", "invalid_token"
		case r.Header.Get("Authorization") != "":
			challenge += `, error="invalid_request"`
			message, reason = "malformed Authorization header: send Authorization: Bearer <token>", "malformed_token"
		}
		transport.Unauthorized(w, challenge, message, reason)
	})
}
