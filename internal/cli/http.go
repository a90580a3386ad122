package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/transport"
)

// httpFlags are the flags of the hosted server.
type httpFlags struct {
	common
	listen, origins, publicBase, authServers string
	maxBody                                  int64
	cors                                     bool
	writeTimeout                             time.Duration
}

func (h *httpFlags) register(f *flagSet) error {
	if err := h.common.register(f); err != nil {
		return err
	}
	f.str(&h.listen, "listen", "PDPP_MCP_LISTEN", "127.0.0.1:8787", "address to listen on (loopback by default)")
	f.str(&h.origins, "allowed-origins", "PDPP_MCP_ALLOWED_ORIGINS", "", "comma-separated browser origins allowed to call /mcp (scheme://host:port); requests without Origin are always allowed")
	f.str(&h.publicBase, "public-base-url", "PDPP_MCP_PUBLIC_BASE_URL", "", "external base URL when behind a proxy, e.g. https://mcp.example.com")
	f.str(&h.authServers, "authorization-servers", "PDPP_MCP_AUTHORIZATION_SERVERS", "", "comma-separated issuer URLs for the protected-resource metadata (default: taken from the provider's own metadata)")
	f.BoolVar(&h.cors, "cors", f.env.Getenv("PDPP_MCP_CORS") == "true", "answer CORS preflight for the allowed origins [PDPP_MCP_CORS]")
	if err := f.int64(&h.maxBody, "max-body-bytes", "PDPP_MCP_MAX_BODY_BYTES", 1<<20, "largest accepted request body"); err != nil {
		return err
	}
	return f.dur(&h.writeTimeout, "write-timeout", "PDPP_MCP_WRITE_TIMEOUT", 0, "longest time to answer one request (0: default)")
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

// config builds the transport config; the bearer of each request is the token.
func (h *httpFlags) config(log *slog.Logger) (transport.HTTPConfig, error) {
	cfg := transport.HTTPConfig{
		Listen:               h.listen,
		PublicBaseURL:        h.publicBase,
		AllowedOrigins:       splitList(h.origins),
		CORS:                 h.cors,
		MaxBodyBytes:         h.maxBody,
		RequireBearer:        true,
		AuthorizationServers: splitList(h.authServers),
		WriteTimeout:         h.writeTimeout,
		Logger:               log,
	}
	client := &http.Client{Timeout: 5 * time.Second}
	if len(cfg.AuthorizationServers) == 0 {
		fn, err := transport.ProviderAuthorizationServers(client, h.providerURL, 10*time.Minute)
		if err != nil {
			return cfg, fail(ExitUsage, "%v", err)
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
	f := newFlagSet(env, "http", "http --provider-url URL [--listen 127.0.0.1:8787] [--allowed-origins LIST] [flags]")
	if err := h.register(f); err != nil {
		return err
	}
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fail(ExitUsage, "unexpected arguments %q", f.Args())
	}
	if err := h.requireProvider(); err != nil {
		return err
	}
	return serveHTTP(ctx, log, &h, nil)
}

// serveHTTP builds and serves the hosted server; onListen reports the address.
func serveHTTP(ctx context.Context, log *slog.Logger, h *httpFlags, onListen func(net.Addr)) error {
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
		return fail(ExitUsage, "%v", err)
	}
	return transport.ServeHTTP(ctx, handler, cfg)
}
