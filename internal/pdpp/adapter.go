package pdpp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/tokencheck"
)

// Adapter implements mcptools.Handlers and mcptools.ResourceHandlers.
type Adapter struct {
	rs         *rs.Client
	token      rs.TokenSource
	log        *slog.Logger
	check      *tokencheck.Checker
	onRejected func(context.Context)
	fullMax    int64 // ceiling of one detail "full" reply, in bytes
}

var (
	_ mcptools.Handlers         = (*Adapter)(nil)
	_ mcptools.ResourceHandlers = (*Adapter)(nil)
)

// Config configures an Adapter.
type Config struct {
	RS     *rs.Client
	Token  rs.TokenSource
	Logger *slog.Logger
	// Checker establishes each bearer's verdict; nil builds one over RS and
	// Token. Share one with the HTTP transport so a request is checked once.
	Checker *tokencheck.Checker
	// OnRejected, when set, is called with the call's context whenever the
	// RS answers 401 (the hosted transport turns the reply into HTTP 401).
	OnRejected func(context.Context)
	// FullMaxBytes is the ceiling of one detail "full" reply (0:
	// DefaultFullMaxBytes, at least MinFullMaxBytes). A full call stops
	// reading its RS body just past it and is refused with full_too_large,
	// naming the bounded reads of the same data.
	FullMaxBytes int64
}

// New returns an Adapter over cfg.RS.
func New(cfg Config) *Adapter {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	check := cfg.Checker
	if check == nil {
		check = tokencheck.New(cfg.RS, cfg.Token, tokencheck.Options{})
	}
	fullMax := cfg.FullMaxBytes
	if fullMax <= 0 {
		fullMax = DefaultFullMaxBytes
	}
	fullMax = max(fullMax, MinFullMaxBytes)
	return &Adapter{rs: cfg.RS, token: cfg.Token, log: log, check: check, onRejected: cfg.OnRejected, fullMax: fullMax}
}

// do sends a request built by a generated builder, after the owner-token check.
func (a *Adapter) do(ctx context.Context, req *http.Request, build error) (*rs.Response, error) {
	if build != nil {
		return nil, rs.AdapterError("invalid_request", build.Error(), "")
	}
	if err := a.refuseOwner(ctx); err != nil {
		return nil, err
	}
	resp, err := a.rs.Do(ctx, req)
	var re *rs.Error
	if errors.As(err, &re) && re.Status == http.StatusUnauthorized {
		a.rejected(ctx)
	}
	return resp, err
}

// withQuery adds pre-encoded parameters (typed filters, expand limits) to req.
func withQuery(req *http.Request, extra ...url.Values) *http.Request {
	if req == nil {
		return nil
	}
	empty := true
	for _, vals := range extra {
		empty = empty && len(vals) == 0
	}
	if empty {
		return req
	}
	q := req.URL.Query()
	for _, vals := range extra {
		for k, v := range vals {
			q[k] = append(q[k], v...)
		}
	}
	req.URL.RawQuery = q.Encode()
	return req
}

// refuseOwner fails closed: a call goes on only when the bearer is known
// to be a grant-scoped client token (see internal/tokencheck). An owner
// token is owner_token_refused, a token the RS rejects fails with the RS's
// 401, and a check that cannot complete is token_check_unavailable; in each
// case no data request is made.
func (a *Adapter) refuseOwner(ctx context.Context) error {
	res := a.check.Check(ctx)
	if res.Verdict == tokencheck.Client {
		return nil
	}
	if res.Verdict == tokencheck.Rejected {
		a.rejected(ctx)
	}
	return res.Err
}

// rejected handles an RS 401: the token's verdict is forgotten and the
// transport (when it listens) is told, so the HTTP reply becomes a 401.
func (a *Adapter) rejected(ctx context.Context) {
	a.check.Forget(ctx)
	if a.onRejected != nil {
		a.onRejected(ctx)
	}
}

// declaredRoles returns the display roles the grant's schema declared for
// stream, as read by the token check; it makes no RS call of its own.
func (a *Adapter) declaredRoles(ctx context.Context, stream string) evidence.Roles {
	return a.check.Roles(ctx, stream)
}
