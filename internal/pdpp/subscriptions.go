package pdpp

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/events"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// eventsHost lends the event tools (package events) the adapter's RS calls
// and reply conventions.
type eventsHost struct{ a *Adapter }

var _ events.Host = eventsHost{}

// The event tools spell two of the adapter's figures themselves (they
// cannot import the adapter): these fail to compile should they differ.
var (
	_ [events.SmallMemberBytes - smallMemberBytes]struct{}
	_ [smallMemberBytes - events.SmallMemberBytes]struct{}
	_ = map[bool]struct{}{false: {}, events.CodeBadResponse == codeBadResponse: {}}
)

func (h eventsHost) Do(ctx context.Context, req *http.Request, build error) (*rs.Response, error) {
	return h.a.do(ctx, req, build)
}

func (h eventsHost) DoControl(ctx context.Context, req *http.Request, build error) (*rs.Response, error) {
	return h.a.doControl(ctx, req, build)
}

func (h eventsHost) RefuseOwner(ctx context.Context) error { return h.a.refuseOwner(ctx) }

func (h eventsHost) FullReply(ctx context.Context, tool string, args map[string]any, text string, head any, key string, body []byte) *mcp.CallToolResult {
	return h.a.fullReply(ctx, tool, args, text, head, key, body)
}

func (eventsHost) ErrorResult(err error, tool string, args map[string]any) *mcp.CallToolResult {
	return errorResult(err, tool, args)
}

func (eventsHost) CompactResult(limit int, text string, structured any, structuredBytes int, full *evidence.Continuation) *mcp.CallToolResult {
	return compactResult(limit, text, structured, structuredBytes, full)
}

func (eventsHost) CompactText(text string, limit int) string { return compactText(text, limit) }

func (eventsHost) FitStructured(limit int, text func() string, build func(budget int) (json.RawMessage, evidence.Truncation, error)) (json.RawMessage, evidence.Truncation, error) {
	return fitStructured(limit, text, build)
}

func (eventsHost) FullDetailCall(tool string, args map[string]any) evidence.Continuation {
	return fullDetailCall(tool, args)
}

func (eventsHost) ReplyBudget(tool string, rsBodyBytes int) int {
	return replyBudget(tool, rsBodyBytes)
}

func (eventsHost) StepBudget(tool string, rsBodyBytes int) (limit, room int) {
	return stepBudget(tool, rsBodyBytes)
}

func (eventsHost) ResolvePage(tool, cursor string, args any, rsPages bool) (events.Page, error) {
	pc, err := resolvePage(tool, cursor, args, rsPages)
	return eventsPage{pc}, err
}

func (eventsHost) ArgsMap(v any) map[string]any { return argsMap(v) }

func (eventsHost) RejectsView(err error) bool { return rejectsView(err) }

// eventsPage is a pageCall as the event tools read it.
type eventsPage struct{ pc pageCall }

func (p eventsPage) Full() evidence.Continuation { return p.pc.full() }

func (p eventsPage) Step(ids []string, fullBytes func() int) evidence.Step {
	return p.pc.step(ids, fullBytes)
}
