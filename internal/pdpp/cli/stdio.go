package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/credentials"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// localFlags are the flags of commands that read the local credential cache.
type localFlags struct {
	common
	cacheRoot string
}

func (l *localFlags) register(f *cmdkit.FlagSet) error {
	l.registerCacheRoot(f)
	return l.common.register(f)
}

// registerTerminal defines the flags of the terminal commands (search,
// read-field): they serve no MCP client, so --server-name and --toolsets
// do not apply; they use the read toolset under the catalog's name.
func (l *localFlags) registerTerminal(f *cmdkit.FlagSet) error {
	l.serverName, l.toolsets = mcptools.ServerName, "read"
	l.registerCacheRoot(f)
	l.registerProvider(f)
	return l.registerTimeout(f)
}

func (l *localFlags) registerCacheRoot(f *cmdkit.FlagSet) {
	f.Str(&l.cacheRoot, "cache-root", "PDPP_CACHE_ROOT", credentials.DefaultCacheRoot, "`directory` of the PDPP credential cache written by \"pdpp connect\"")
}

// tokenSource loads the client credential for the provider from the cache and
// returns a source that refuses it once it expires. PDPP_OWNER_TOKEN is never
// read.
func (l *localFlags) tokenSource(log *slog.Logger) (rs.TokenSource, error) {
	tok, err := credentials.Load(l.cacheRoot, l.providerURL, time.Now())
	if err != nil {
		var ce *credentials.Error
		if errors.As(err, &ce) {
			return nil, cmdkit.WithCode(ce.ExitCode(), err)
		}
		return nil, cmdkit.Fail(cmdkit.ExitConfig, "%v", err)
	}
	if tok.Warning != "" {
		log.Warn("credential file permissions", "warning", tok.Warning)
	}
	log.Info("using client credential", "provider", tok.ProviderURL, "grant", tok.GrantID, "path", tok.Path)
	expires, access, provider := tok.ExpiresAt, tok.AccessToken, l.providerURL
	return func(context.Context) (string, error) {
		if !expires.IsZero() && time.Now().After(expires) {
			return "", fmt.Errorf("the client credential expired at %s; run `pdpp connect %s` again", expires.Format(time.RFC3339), provider)
		}
		return access, nil
	}, nil
}

// grantHelp says where a client grant comes from besides `pdpp connect`.
const grantHelp = " No pdpp CLI at hand? The README's \"Getting a client grant\" shows other ways."

func runStdio(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var l localFlags
	var failFast bool
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "stdio", "[stdio] --provider-url URL [flags]")
	if err := l.register(f); err != nil {
		return err
	}
	if err := f.Bool(&failFast, "fail-fast", "PDPP_MCP_FAIL_FAST", false,
		"exit at once (78, or 77 for an owner token) when the credential is missing or unusable, instead of serving an MCP client the reason and the fix"); err != nil {
		return err
	}
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	if err := l.requireProvider(); err != nil {
		return err
	}
	token, err := l.tokenSource(log)
	var ce *credentials.Error
	if err != nil && !failFast && errors.As(err, &ce) && ce.Code != credentials.CodeInvalidProviderURL {
		// Hosts hide stderr and show a closed connection as "failed to
		// connect": serve the reason instead, and never read the RS. An
		// owner token is not kept, so it cannot be sent anywhere.
		log.Error("serving without a credential: every tool call answers "+ce.Code, "err", err)
		l.unavailable = &pdpp.Unavailable{Code: ce.Code, Message: ce.Message + "." + grantHelp}
		// The token source never yields a token (and its server never
		// asks, see pdpp.ServerOptions.Unavailable).
		token, err = func(context.Context) (string, error) { return "", errors.New("no usable client credential") }, nil
	}
	if err != nil {
		return err
	}
	s, _, err := l.buildServer(log, token)
	if err != nil {
		return err
	}
	log.Info("serving MCP over stdio", "provider", l.providerURL)
	return transport.ServeStdio(ctx, s, env.Stdin, env.Stdout, log)
}
