package transport

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/reqid"
)

// exchange is the per-request state the /mcp middlewares share. One
// goroutine runs the whole chain, so it needs no locking.
type exchange struct {
	body       []byte   // read once by the body-read stage
	env        envelope // id and method when body is a single message
	version    string   // the effective protocol version
	rpcMethod  string   // for the access log
	batchItems int      // messages of the batch, when batchSeen
	batchSeen  bool     // the dispatcher parsed the body as a JSON-RPC batch
	// shed: refused by the line of token checks. Strangers can send these
	// as fast as the server answers, so each logs at debug level (the
	// line's warning counts them once per busyLogEvery, the metrics each).
	shed bool
}

type exchangeKey struct{}

// withExchange returns r with an exchange in its context, reusing one there.
func withExchange(r *http.Request) (*http.Request, *exchange) {
	if x, ok := r.Context().Value(exchangeKey{}).(*exchange); ok {
		return r, x
	}
	x := &exchange{}
	return r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x)), x
}

// requestID returns the JSON-RPC id found by the body-limit stage, if any.
func requestID(r *http.Request) json.RawMessage {
	_, x := withExchange(r)
	return x.env.ID
}

// statusRecorder notes the status and size of a reply for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(p)
	s.bytes += n
	return n, err
}

// logAccess writes the one line of a request Observe saw answered (rec):
// method, path, status, size, duration, remote address (and the client
// address behind a trusted proxy), request id, protocol version and JSON-RPC
// method; never headers, tokens or bodies. Probes and exchange.shed log at
// debug level.
func logAccess(log *slog.Logger, r *http.Request, x *exchange, rec *statusRecorder, start time.Time) {
	level := slog.LevelInfo
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || x.shed {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("method", truncateField(r.Method)),
		slog.String("path", truncateField(r.URL.Path)),
		slog.Int("status", rec.status),
		slog.Int("bytes", rec.bytes),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
		slog.String("remote", r.RemoteAddr),
		slog.String("request_id", reqid.ID(r.Context())),
	}
	if c := clientAddrOf(r); c.IsValid() && c != (proxySet{}).resolve(r.RemoteAddr, nil) {
		// Read from a trusted proxy's forwarded header.
		attrs = append(attrs, slog.String("client", c.String()))
	}
	if x.version != "" {
		attrs = append(attrs, slog.String("mcp_protocol_version", truncateField(x.version)))
	}
	if x.rpcMethod != "" {
		attrs = append(attrs, slog.String("rpc_method", truncateField(x.rpcMethod)))
	}
	log.LogAttrs(r.Context(), level, "http request", attrs...)
}

// maxLogField bounds a log field built from client input (HTTP method and
// path, JSON-RPC method, protocol version header): longer values are cut
// and marked, so a request cannot grow the log by more than a few hundred bytes.
const maxLogField = 128

// truncateField cuts s to maxLogField bytes (on a rune boundary) and says
// how long it was.
func truncateField(s string) string {
	if len(s) <= maxLogField {
		return s
	}
	cut := maxLogField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// methodMiddleware admits POST, and OPTIONS with CORS; else 405.
func (st *settings) methodMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || (r.Method == http.MethodOptions && st.CORS) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", st.allow)
		writeRPCError(w, http.StatusMethodNotAllowed, nil, mcp.INVALID_REQUEST,
			"method "+r.Method+" is not allowed on this endpoint: send JSON-RPC messages with POST (no SSE streams are offered)", nil)
	})
}

// corsRequestHeaders are the request headers a browser client may send.
var corsRequestHeaders = []string{"authorization", "content-type", "accept", "mcp-protocol-version", "mcp-method", "mcp-name"}

// originMiddleware answers 403 to an Origin header neither allowed nor
// this server's own (see sameOrigin), compared as canonical
// scheme://host:port. With CORS it also decorates allowed replies and
// answers preflights itself.
func (st *settings) originMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origins := r.Header.Values("Origin")
		if len(origins) > 1 {
			writeRPCError(w, http.StatusForbidden, nil, mcp.INVALID_REQUEST, "more than one Origin header", nil)
			return
		}
		origin := ""
		if len(origins) == 1 {
			origin = origins[0]
			canon, err := canonicalOrigin(origin)
			if err != nil || !st.origins[canon] && !st.sameOrigin(r, canon) {
				writeRPCError(w, http.StatusForbidden, nil, mcp.INVALID_REQUEST,
					"origin not allowed: add it to the allowed origins of this server", nil)
				return
			}
		}
		h := w.Header()
		if st.CORS && origin != "" {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Mcp-Protocol-Version")
		}
		if r.Method == http.MethodOptions {
			h.Set("Allow", st.allow)
			if origin != "" {
				h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
				if allowed := allowedRequestHeaders(r.Header.Get("Access-Control-Request-Headers")); allowed != "" {
					h.Set("Access-Control-Allow-Headers", allowed)
				}
				h.Set("Access-Control-Max-Age", "600")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin (canonical) is the origin r was sent
// to, which a page served by this server may call without being listed:
//
//   - the public base URL's origin;
//   - the request's own scheme and Host, when that Host is an address
//     literal, localhost, or a host this server serves by name
//     (AllowedHosts, the listen host by default, the public base URL's
//     host; never through "*");
//   - on a loopback listener, a loopback name (localhost, 127.0.0.1, [::1])
//     with the port of a Host that is itself a loopback name: the same
//     server under another spelling.
//
// DNS rebinding stays out: a rebinding page's Origin and Host both carry
// the attacker's host name (rebinding needs a name, never an address
// literal), which the Host rule has already answered 421 unless the
// operator named it, and which "*" never makes same-origin.
func (st *settings) sameOrigin(r *http.Request, origin string) bool {
	if st.publicBase != nil {
		if base, err := canonicalOrigin(st.publicBase.Scheme + "://" + st.publicBase.Host); err == nil && base == origin {
			return true
		}
	}
	if !st.hosts.named(r.Host) && !addressOrLocalhost(r.Host) {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	own, err := canonicalOrigin(scheme + "://" + r.Host)
	if err != nil {
		return false
	}
	if own == origin {
		return true
	}
	if !isLoopbackListen(st.Listen) {
		return false
	}
	ou, err1 := url.Parse(origin)
	hu, err2 := url.Parse(own)
	return err1 == nil && err2 == nil && ou.Scheme == hu.Scheme && ou.Port() == hu.Port() &&
		slices.Contains(loopbackHosts, ou.Hostname()) && slices.Contains(loopbackHosts, hu.Hostname())
}

// addressOrLocalhost reports whether a Host value names an IP address or
// localhost: no DNS-rebinding page can be served under such a Host.
func addressOrLocalhost(host string) bool {
	hp, ok := parseHost(host)
	if !ok {
		return false
	}
	_, err := netip.ParseAddr(hp.host)
	return err == nil || hp.host == "localhost"
}

// allowedRequestHeaders filters a preflight's requested headers down to the
// ones this endpoint reads (including Mcp-Param-* tool parameters).
func allowedRequestHeaders(requested string) string {
	var out []string
	for _, name := range strings.Split(requested, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if slices.Contains(corsRequestHeaders, name) || strings.HasPrefix(name, "mcp-param-") {
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

// protocolVersionMiddleware checks MCP-Protocol-Version on every POST,
// initialize included: absent means 2025-03-26; more than one header, or a
// version not configured, gets 400 (the latter listing the supported ones,
// so clients that probe a newer revision fall back).
func (st *settings) protocolVersionMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, x := withExchange(r)
		values := r.Header.Values(mcp.HeaderProtocolVersion)
		if len(values) > 1 {
			writeRPCError(w, http.StatusBadRequest, x.env.ID, mcp.INVALID_REQUEST,
				"more than one MCP-Protocol-Version header: send exactly one", map[string]int{"headers": len(values)})
			return
		}
		v := firstStreamableVersion
		if len(values) == 1 && values[0] != "" {
			v = values[0]
		}
		x.version = v
		if !st.supports(v) {
			e := mcp.UnsupportedProtocolVersionError{Version: v, Supported: st.versions}
			writeRPCError(w, http.StatusBadRequest, x.env.ID, mcp.UNSUPPORTED_PROTOCOL_VERSION,
				e.Error(), mcp.UnsupportedProtocolVersionData{Supported: st.versions, Requested: v})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Observe is the outermost stage of the hosted handler: it gives the request
// its correlation data (request id, W3C trace context; package reqid),
// echoes the id in X-Request-Id, writes its access log line to cfg.Logger
// and counts the answer in cfg.Metrics (HTTP status, authentication
// refusals, batch sizes; nil counts nothing). A request an outer Observe saw
// passes through, so a program may wrap its own stages (such as a static
// bearer check) around NewHTTPHandler's, with the same cfg, and have the
// requests they answer logged and counted too.
func Observe(cfg HTTPConfig, next http.Handler) http.Handler {
	// A configuration error (reported by NewHTTPHandler and ServeHTTP)
	// leaves the peer's address in charge.
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
		status := cmp.Or(rec.status, http.StatusOK)
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

// refusalReason names why a request was refused for authentication: the
// error parameter of the answer's Bearer challenge (RFC 6750), else
// forbidden (403) or missing_token (401); "" without a challenge.
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

// toolObserver counts each tool call of the hosted server in m (in flight,
// outcome, error code, latency) and stamps its request id into adapter
// error objects, so a client's report of a failure names the id found in
// the access log and the RS log.
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
	var doc struct {
		Error map[string]any `json:"error"`
		Code  string         `json:"code"`
	}
	if raw, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(raw, &doc) != nil {
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
