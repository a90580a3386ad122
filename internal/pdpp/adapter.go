package pdpp

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/events"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/redact"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
)

// Adapter implements mcptools.Handlers and mcptools.ResourceHandlers.
type Adapter struct {
	// Tools serves the event-subscription tools (package events).
	*events.Tools
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
	// RS says the bearer itself is no good (rs.ClassToken: inactive,
	// expired, revoked), at the token check or on any call; the hosted
	// transport turns the reply into HTTP 401. Scope refusals never call
	// it: they are the call's own error.
	OnRejected func(context.Context)
	// AllowPrivateWebhooks accepts webhook callback URLs whose host is a
	// loopback, private, link-local or metadata address or name (and http
	// on loopback), for local development (flag --allow-private-webhooks,
	// on in demo). Off, only https to a public host reaches the RS.
	AllowPrivateWebhooks bool
	// FullMaxBytes is the ceiling of one detail "full" reply (0:
	// DefaultFullMaxBytes, at least MinFullMaxBytes). A full call stops
	// reading its RS body just past it and is refused with full_too_large,
	// naming the bounded reads of the same data.
	FullMaxBytes int64
}

// New returns an Adapter over cfg.RS.
func New(cfg Config) *Adapter {
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	check := cfg.Checker
	if check == nil {
		check = tokencheck.New(cfg.RS, cfg.Token, tokencheck.Options{})
	}
	fullMax := cfg.FullMaxBytes
	if fullMax <= 0 {
		fullMax = DefaultFullMaxBytes
	}
	fullMax = max(fullMax, MinFullMaxBytes)
	a := &Adapter{rs: cfg.RS, token: cfg.Token, log: log, check: check, onRejected: cfg.OnRejected, fullMax: fullMax}
	// The event tools (package events) borrow the adapter's RS calls and
	// reply conventions.
	a.Tools = events.New(events.Host{
		Do: a.do, DoControl: a.doControl, RefuseOwner: a.refuseOwner, FullReply: a.fullReply,
		ErrorResult: errorResult, CompactResult: compactResult, CompactText: compactText,
		FitStructured: fitStructured, FullDetailCall: fullDetailCall,
		ReplyBudget: replyBudget, StepBudget: stepBudget, ArgsMap: argsMap, RejectsView: rejectsView,
		ResolvePage: func(tool, cursor string, args any, rsPages bool) (events.Page, error) {
			return resolvePage(tool, cursor, args, rsPages)
		},
	}, cfg.RS, log, cfg.AllowPrivateWebhooks)
	return a
}

// doControl sends a request of the event-subscription routes (the RS's
// control plane, where it keeps signing secrets) and returns the answer
// without its secret-like members (see package redact; RS errors lose
// theirs in asRSError, on their way to a client).
func (a *Adapter) doControl(ctx context.Context, req *http.Request, build error) (*rs.Response, error) {
	resp, err := a.do(ctx, req, build)
	if resp != nil {
		resp.Body = redact.JSON(resp.Body)
	}
	return resp, err
}

// do sends a request built by a generated builder, after the owner-token
// check, and returns the answer as the RS sent it. Record data (records,
// search hits, field windows, the schema that describes them) is the
// person's own granted data and is shown as granted, whatever its member
// names: nothing of it is withheld. The create call of an event
// subscription uses it too, to show the signing secret once.
func (a *Adapter) do(ctx context.Context, req *http.Request, build error) (*rs.Response, error) {
	if build != nil {
		return nil, rs.AdapterError("invalid_request", build.Error(), "")
	}
	if err := a.refuseOwner(ctx); err != nil {
		return nil, err
	}
	resp, err := a.rs.Do(ctx, req)
	// A failed request goes to the token check, which evicts the token's
	// verdicts on a token-level refusal (see tokencheck.Observe); the
	// transport, when it listens, is told of that refusal too.
	if err != nil && a.check.Observe(ctx, err) == rs.ClassToken && a.onRejected != nil {
		a.onRejected(ctx)
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
// to be a grant-scoped client token (see internal/pdpp/tokencheck). An owner
// token is owner_token_refused, a token the RS rejects fails with the RS's
// own refusal (and the transport is told), a token unusable here is
// client_grant_required, and a check that cannot complete is
// token_check_unavailable; in each case no data request is made.
func (a *Adapter) refuseOwner(ctx context.Context) error {
	res := a.check.Check(ctx)
	if res.Verdict == tokencheck.Client {
		return nil
	}
	if res.Verdict == tokencheck.Rejected && a.onRejected != nil {
		a.onRejected(ctx)
	}
	return res.Err
}

// declaredRoles returns the display roles the grant's schema declared for
// stream, as read by the token check; it makes no RS call of its own.
func (a *Adapter) declaredRoles(ctx context.Context, stream string) evidence.Roles {
	return a.check.Roles(ctx, stream)
}
