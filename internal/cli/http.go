package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/transport"
)

// httpFlags are the flags of the hosted server.
type httpFlags struct {
	common
	cmdkit.HTTPFlags
	authServers string
}

func (h *httpFlags) register(f *cmdkit.FlagSet) error {
	if err := h.common.register(f); err != nil {
		return err
	}
	f.Str(&h.authServers, "authorization-servers", "PDPP_MCP_AUTHORIZATION_SERVERS", "", "comma-separated issuer URLs for the protected-resource metadata (default: taken from the provider's own metadata)")
	return h.HTTPFlags.Register(f, "PDPP_MCP_", "127.0.0.1:8787")
}

// config builds the transport config; the bearer of each request is the token.
func (h *httpFlags) config(log *slog.Logger) (transport.HTTPConfig, error) {
	cfg := h.HTTPFlags.Config(log)
	if cfg.WriteTimeout == 0 {
		// A call may make two RS requests (expand check + records, or the
		// events discovery): leave room for both to time out on their own,
		// so the client gets an rs_timeout result instead of a cut reply.
		cfg.WriteTimeout = 2*h.rsTimeout + 10*time.Second
	}
	cfg.RequireBearer = true
	cfg.AuthorizationServers = cmdkit.SplitList(h.authServers)
	client := &http.Client{Timeout: 5 * time.Second}
	if len(cfg.AuthorizationServers) == 0 {
		fn, err := transport.ProviderAuthorizationServers(client, h.providerURL, 10*time.Minute)
		if err != nil {
			return cfg, cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
		}
		cfg.AuthorizationServersFunc = fn
	}
	cfg.ReadyCheck = transport.HTTPReadyCheck(client, strings.TrimRight(h.providerURL, "/")+"/")
	return cfg, nil
}

// bearerToken is the token source of the hosted server: the bearer of the
// current request, never cached.
func bearerToken(ctx context.Context) (string, error) {
	tok, ok := transport.BearerFromContext(ctx)
	if !ok || tok == "" {
		return "", errors.New("no bearer token on this request")
	}
	return tok, nil
}

func runHTTP(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var h httpFlags
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "http", "http --provider-url URL [--listen 127.0.0.1:8787] [--allowed-origins LIST] [flags]")
	if err := h.register(f); err != nil {
		return err
	}
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	if err := h.requireProvider(); err != nil {
		return err
	}
	return serveHTTP(ctx, log, &h, nil, nil)
}

// serveHTTP builds and serves the hosted server; onListen reports the address
// (and onMetrics that of the metrics listener, when one is configured).
func serveHTTP(ctx context.Context, log *slog.Logger, h *httpFlags, onListen, onMetrics func(net.Addr)) error {
	if m := h.Metrics(); m != nil {
		h.rsObserve = m.RSRequest
	}
	s, _, err := h.buildServer(log, bearerToken)
	if err != nil {
		return err
	}
	cfg, err := h.config(log)
	if err != nil {
		return err
	}
	cfg.OnListen = onListen
	handler, err := transport.NewHTTPHandler(s, cfg)
	if err != nil {
		return cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
	}
	stop, err := h.StartMetrics(ctx, log, onMetrics)
	if err != nil {
		return err
	}
	defer stop()
	return cmdkit.Serve(ctx, handler, cfg)
}
