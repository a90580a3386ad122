package transport

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/reqid"
)

// Observe is the outermost stage of the hosted handler: it gives the request
// its correlation data (request id, W3C trace context; see package reqid),
// echoes the id in the X-Request-Id response header, writes the request's
// access log line to cfg.Logger (see logAccess), and counts the answer in
// cfg.Metrics (HTTP status, authentication refusals, JSON-RPC batch sizes;
// nil counts nothing). A request already observed by an outer Observe passes
// through, so a program may wrap its own stages (such as a static bearer
// check) around the handler NewHTTPHandler returns, with the same cfg, and
// have the requests they answer logged and counted too.
func Observe(cfg HTTPConfig, next http.Handler) http.Handler {
	// A configuration error is reported by NewHTTPHandler and ServeHTTP;
	// here it leaves the peer's address in charge.
	proxies, _ := parseProxies(cfg.TrustedProxies, cfg.ForwardedHeader)
	return observe(cfg.Metrics, cmp.Or(cfg.Logger, slog.Default()), proxies, next)
}

func observe(m *metrics.Metrics, log *slog.Logger, proxies proxySet, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := reqid.From(r.Context()); ok {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		info := reqid.FromRequest(r)
		r = proxies.withClientAddr(r.WithContext(reqid.With(r.Context(), info)))
		w.Header().Set(reqid.HeaderRequestID, info.ID)
		r, x := withExchange(r)
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		logAccess(log, r, x, rec, start)
		if m == nil {
			return
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		m.HTTPRequest(routeLabel(r.URL.Path), status)
		if reason := refusalReason(status, rec.Header()); reason != "" {
			m.AuthRefused(reason)
		}
		if x.batchSeen {
			m.Batch(x.batchItems)
		}
	})
}

// routeLabel maps a request path to the fixed set of routes this handler
// serves, so a scanner's random paths never become label values.
func routeLabel(path string) string {
	switch path {
	case "/mcp", "/healthz", "/readyz":
		return path
	case wellKnownPRM, wellKnownPRM + "/mcp":
		return wellKnownPRM
	}
	return "other"
}

// refusalReason names why a request was refused for authentication, from the
// answer's status and Bearer challenge (RFC 6750): the challenge's error
// parameter, or missing_token when it carries none. Answers without a
// challenge are not authentication refusals.
func refusalReason(status int, h http.Header) string {
	if status != http.StatusUnauthorized && status != http.StatusForbidden {
		return ""
	}
	challenge := h.Get("WWW-Authenticate")
	if challenge == "" {
		return ""
	}
	const key = `error="`
	if i := strings.Index(challenge, key); i >= 0 {
		rest := challenge[i+len(key):]
		if j := strings.IndexByte(rest, '"'); j > 0 {
			return metrics.Label(rest[:j])
		}
	}
	if status == http.StatusForbidden {
		return "forbidden"
	}
	return "missing_token"
}

// toolObserver is the tool-handler middleware of the hosted server: it
// counts each call in m (in flight, outcome, error code, latency) and stamps
// the call's request id into adapter error objects, so a client's report of
// a failure names the id found in the access log and the RS log.
func toolObserver(m *metrics.Metrics) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			done := m.ToolStarted(req.Params.Name)
			res, err := next(ctx, req)
			switch {
			case err != nil:
				done("failure", "")
			case res != nil && res.IsError:
				done("tool_error", stampRequestID(ctx, res))
			default:
				done("ok", "")
			}
			return res, err
		}
	}
}

// stampRequestID adds request_id to the error object of an isError result
// whose structured content is {"error": {"type": "adapter_error", ...}}, and
// returns the error's code (or "" when the result has no such object).
func stampRequestID(ctx context.Context, res *mcp.CallToolResult) string {
	if res.StructuredContent == nil {
		return ""
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return ""
	}
	var doc struct {
		Error map[string]any `json:"error"`
		Code  string         `json:"code"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return ""
	}
	if doc.Error == nil {
		return doc.Code
	}
	code, _ := doc.Error["code"].(string)
	if code == "" {
		code, _ = doc.Error["type"].(string)
	}
	if id := reqid.ID(ctx); id != "" && doc.Error["type"] == "adapter_error" {
		doc.Error["request_id"] = id
		if obj, err := json.Marshal(doc.Error); err == nil {
			if sc, ok := res.StructuredContent.(map[string]any); ok {
				sc["error"] = json.RawMessage(obj)
			}
		}
	}
	return code
}
