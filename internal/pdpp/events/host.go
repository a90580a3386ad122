package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// Host is what the event tools take from the PDPP adapter, which fills it
// in: RS calls behind its owner-token check, and its reply conventions
// (reply budgets, compact, full and error results, page cursors), which
// the read tools share. Each field is the adapter's function of the same
// name, documented there; DoControl is do for the event-subscription
// routes, whose answers lose their secret-like members.
type Host struct {
	Do, DoControl  func(ctx context.Context, req *http.Request, build error) (*rs.Response, error)
	RefuseOwner    func(ctx context.Context) error
	FullReply      func(ctx context.Context, tool string, args map[string]any, text string, head any, key string, body []byte) *mcp.CallToolResult
	ErrorResult    func(err error, tool string, args map[string]any) *mcp.CallToolResult
	CompactResult  func(limit int, text string, structured any, structuredBytes int, full *evidence.Continuation) *mcp.CallToolResult
	CompactText    func(text string, limit int) string
	FitStructured  func(limit int, text func() string, build func(budget int) (json.RawMessage, evidence.Truncation, error)) (json.RawMessage, evidence.Truncation, error)
	FullDetailCall func(tool string, args map[string]any) evidence.Continuation
	ReplyBudget    func(tool string, rsBodyBytes int) int
	StepBudget     func(tool string, rsBodyBytes int) (limit, room int)
	ResolvePage    func(tool, cursor string, args any, rsPages bool) (Page, error)
	ArgsMap        func(v any) map[string]any
	RejectsView    func(err error) bool
}

// Page is where a call of a list tool reads its RS page from (Host.ResolvePage).
type Page interface {
	// Full is the call that returns the page at detail "full".
	Full() evidence.Continuation
	// Step places a compact reply on its page, whose items have the ids
	// ids in the RS's order.
	Step(ids []string, fullBytes func() int) evidence.Step
}

// Figures of the adapter's reply conventions the event tools rely on; the
// adapter takes its own from these.
const (
	// SmallMemberBytes is the largest member a truncation report keeps.
	SmallMemberBytes = 256
	// CodeBadResponse is the code of an RS answer that is not what its
	// endpoint promises.
	CodeBadResponse = "rs_bad_response"
)

// BadResponse is the typed error of an RS answer that could not be read or
// rendered (rs_bad_response), carrying the reason.
func BadResponse(err error) *rs.Error {
	return rs.AdapterError(CodeBadResponse, err.Error(), "")
}

// Tools serves the seven event-subscription tools; the adapter embeds it,
// so its methods are the adapter's handlers of those tools.
type Tools struct {
	host Host
	rs   *rs.Client
	log  *slog.Logger
	// allowPrivateWebhooks lets callback URLs name loopback, private and
	// metadata hosts (the adapter's Config.AllowPrivateWebhooks).
	allowPrivateWebhooks bool
}

// New returns the event tools over host, reading the RS through client;
// log is never nil.
func New(host Host, client *rs.Client, log *slog.Logger, allowPrivateWebhooks bool) *Tools {
	return &Tools{host: host, rs: client, log: log, allowPrivateWebhooks: allowPrivateWebhooks}
}
