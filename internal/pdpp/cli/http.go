package cli

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/oauthfacade"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
)

// httpFlags are the flags of the hosted server.
type httpFlags struct {
	common
	cmdkit.HTTPFlags
	authServers string
	oauthSource string
}

func (h *httpFlags) register(f *cmdkit.FlagSet) error {
	if err := h.common.register(f); err != nil {
		return err
	}
	f.Str(&h.authServers, "authorization-servers", "PDPP_MCP_AUTHORIZATION_SERVERS", "", "comma-separated issuer URLs for the protected-resource metadata (default: taken from the provider's own metadata); with --oauth-source, the first is the provider's authorization server")
	h.registerOAuthSource(f, "")
	return h.registerHosted(f)
}

// registerOAuthSource defines --oauth-source with a default.
func (h *httpFlags) registerOAuthSource(f *cmdkit.FlagSet, def string) {
	f.Str(&h.oauthSource, "oauth-source", "PDPP_MCP_OAUTH_SOURCE", def, "`connector` id or URL: serve an authorization facade that asks the provider for a client grant over this one source (connector_id) when an OAuth client names none; off when empty")
}

// registerHosted defines the shared hosted-transport flags (see
// cmdkit.HTTPFlags) with this server's environment prefix and defaults; the
// http and demo commands both serve with them.
func (h *httpFlags) registerHosted(f *cmdkit.FlagSet) error {
	h.RequestTimeoutDefault = "--rs-timeout + 5s" // what --request-timeout 0 means here, for --help
	return h.HTTPFlags.Register(f, "PDPP_MCP_", "127.0.0.1:8787")
}

// config builds the transport config; the bearer of each request is the token.
func (h *httpFlags) config(log *slog.Logger) (transport.HTTPConfig, error) {
	cfg := h.HTTPFlags.Config(log)
	// --rs-timeout is the budget of one whole call; the transport derives
	// the request deadline, write timeout and shutdown grace from it.
	cfg.CallTimeout = h.rsTimeout
	cfg.RequireBearer = true
	cfg.AuthorizationServers = cmdkit.SplitList(h.authServers)
	client := &http.Client{Timeout: 5 * time.Second}
	if len(cfg.AuthorizationServers) == 0 {
		fn, err := transport.ProviderAuthorizationServers(client, h.providerURL, 10*time.Minute, log)
		if err != nil {
			return cfg, cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
		}
		cfg.AuthorizationServersFunc = fn
	}
	if h.oauthSource != "" {
		if err := h.facade(&cfg, client, log); err != nil {
			return cfg, err
		}
	}
	// Ready: the RS answers, and verified work has not exhausted the
	// bytes-in-flight budget (see budgetWatch).
	cfg.ReadyCheck = withBudget(h.budget, transport.HTTPReadyCheck(client, strings.TrimRight(h.providerURL, "/")+"/"))
	return cfg, nil
}

// facade turns on the authorization facade (--oauth-source): the provider's
// authorization server is the first of --authorization-servers or of the
// provider's own metadata, and this server is named in its place.
func (h *httpFlags) facade(cfg *transport.HTTPConfig, client *http.Client, log *slog.Logger) error {
	upstream, listed := cfg.AuthorizationServersFunc, cfg.AuthorizationServers
	issuer := func(ctx context.Context) (string, error) {
		if len(listed) > 0 {
			return listed[0], nil
		}
		list, err := upstream(ctx)
		if err != nil {
			return "", err
		}
		return list[0], nil // ProviderAuthorizationServers never returns an empty list
	}
	f, err := oauthfacade.New(oauthfacade.Config{Source: h.oauthSource, Issuer: issuer, Client: client, Logger: log})
	if err != nil {
		return cmdkit.Fail(cmdkit.ExitUsage, "--oauth-source: %v", err)
	}
	cfg.AuthorizationServers, cfg.AuthorizationServersFunc = nil, f.AuthorizationServers
	cfg.ExtraRoutes = f.Routes()
	return nil
}

// authenticate answers the transport with the bearer's verdict: client
// tokens are served, tokens the RS rejects (a token-level code) get 401,
// owner tokens and tokens unusable here an explained 403, and a check that
// RS trouble kept from completing 503 (never a silent pass).
//
// The check's RS reads are limited per client address (the one behind the
// trusted proxies, transport.ClientAddr; tokencheck.WithClientAddr).
func authenticate(check *tokencheck.Checker) func(context.Context, string) transport.AuthVerdict {
	return func(ctx context.Context, token string) transport.AuthVerdict {
		ctx = tokencheck.WithClientAddr(transport.WithBearer(ctx, token), transport.ClientAddr(ctx))
		res := check.Check(ctx)
		switch res.Verdict {
		case tokencheck.Client:
			return transport.AuthVerdict{Outcome: transport.AuthAccept, Tenant: res.Tenant()}
		case tokencheck.Rejected:
			return transport.AuthVerdict{Outcome: transport.AuthInvalidToken}
		case tokencheck.Owner:
			return transport.AuthVerdict{Outcome: transport.AuthForbidden, Reason: tokencheck.CodeOwnerRefused,
				Message: "owner token refused: " + tokencheck.OwnerMessage}
		case tokencheck.Unusable:
			// The RS's status and code say which refusal it was.
			var m struct {
				Message  string `json:"message"`
				RSStatus int    `json:"rs_status"`
				RSCode   string `json:"rs_code"`
			}
			_ = json.Unmarshal(res.Err.Object(), &m)
			data := map[string]any{"rs_status": m.RSStatus}
			if m.RSCode != "" {
				data["rs_code"] = m.RSCode
			}
			return transport.AuthVerdict{Outcome: transport.AuthForbidden, Reason: tokencheck.CodeClientGrantRequired,
				Message: m.Message, Data: data}
		}
		msg := "the token could not be checked with the resource server; retry shortly"
		if res.Err != nil {
			var m struct{ Message string }
			if json.Unmarshal(res.Err.Object(), &m) == nil && m.Message != "" {
				msg = m.Message
			}
		}
		return transport.AuthVerdict{Outcome: transport.AuthUnavailable, Reason: tokencheck.CodeUnavailable, Message: msg}
	}
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
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "http", "http --provider-url URL [--listen 127.0.0.1:8787] [--allowed-origins LIST] [--oauth-source CONNECTOR] [flags]")
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
// (and onMetrics that of the admin listener, with probes and metrics, when on).
func serveHTTP(ctx context.Context, log *slog.Logger, h *httpFlags, onListen, onMetrics func(net.Addr)) error {
	if m := h.Metrics(); m != nil {
		h.rsObserve = m.RSRequest
		h.budgetMetrics = m
	}
	var check *tokencheck.Checker
	s, _, err := h.buildServer(log, bearerToken, func(c *pdpp.Config) {
		// One checker for the transport and the adapter: a request's bearer
		// is read from the RS once, and a token-level refusal during a call
		// both evicts its verdicts and turns the HTTP reply into 401.
		check = c.Checker
		c.OnRejected = transport.MarkTokenRejected
	})
	if err != nil {
		return err
	}
	cfg, err := h.config(log)
	if err != nil {
		return err
	}
	cfg.Authenticate = authenticate(check)
	cfg.Verified = check.Verified
	cfg.OnListen = onListen
	handler, err := transport.NewHTTPHandler(s, cfg)
	if err != nil {
		return cmdkit.Fail(cmdkit.ExitUsage, "%v", err)
	}
	return h.ServeWithMetrics(ctx, log, handler, cfg, onMetrics)
}
