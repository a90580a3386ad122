package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// NewHTTPHandler builds the hosted mux around s:
//
//	/mcp                                       JSON-RPC over POST (the middleware chain)
//	/healthz                                   liveness, no upstream call
//	/readyz                                    HTTPConfig.ReadyCheck
//	/.well-known/oauth-protected-resource[/mcp] RFC 9728 metadata (RequireBearer only)
//	HTTPConfig.ExtraRoutes                     as configured
//
// The stages are those of the package doc. s gets a tool middleware that
// counts its calls and stamps request ids into adapter errors, so build one
// handler per server. s must pass VerifyCapabilities.
func NewHTTPHandler(s *server.MCPServer, cfg HTTPConfig) (http.Handler, error) {
	if s == nil {
		return nil, errors.New("transport: nil MCP server")
	}
	st, err := cfg.settle()
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	if err := VerifyCapabilities(s); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}

	s.Use(toolObserver(st.Metrics)) // metrics and request ids of tool calls (toolObserver)
	slots := newSlotGate(st.MaxConcurrentRequests, st.MaxConcurrentPerTenant)
	checks := newTokenChecks(st)
	st.Metrics.WatchUnverified(checks.held)
	st.Metrics.WatchTokenChecks(checks.line.depth)
	var mcpHandler http.Handler = newDispatcher(st, s)
	mcpHandler = st.admitMiddleware(slots, checks, mcpHandler)
	mcpHandler = st.protocolVersionMiddleware(mcpHandler)
	places := newReaderPlaces(st.MaxBodyReaders, st.MaxBodyReadersPerClient, st.MaxBodyReadersPerPrefix)
	verifiedPlaces := newTenantPlaces(st.MaxBodyReaders, st.MaxBodyReadersPerClient)
	st.Metrics.WatchBodyReaders(func() int { return places.held() + verifiedPlaces.held() })
	mcpHandler = st.bodyReadMiddleware(places, verifiedPlaces, mcpHandler)
	mcpHandler = st.originMiddleware(mcpHandler)
	mcpHandler = st.methodMiddleware(mcpHandler)

	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { st.readyz(w, r, slots) })
	if st.RequireBearer {
		prm := st.withBase(st.metadataHandler())
		mux.Handle(wellKnownPRM, prm)
		mux.Handle(wellKnownPRM+"/mcp", prm)
	}
	for pattern, h := range st.ExtraRoutes {
		mux.Handle(pattern, st.withBase(h))
	}
	st.warnHosts()
	return observe(st.Metrics, st.logger, st.proxies, st.hostMiddleware(mux)), nil
}

func probeMethodOK(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeJSON(w, http.StatusMethodNotAllowed, []byte(`{"status":"method_not_allowed"}`))
	return false
}

// healthz reports that the process serves HTTP; it calls nothing upstream.
func healthz(w http.ResponseWriter, r *http.Request) {
	if probeMethodOK(w, r) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	}
}

// readyz tells a load balancer whether this replica can serve verified
// work: 503 ("busy") while every request slot has been taken for longer
// than busyNotReadyAfter by verified work (only with Authenticate: without
// it anyone could fill them), otherwise ReadyCheck with a deadline: 200
// when it passes, 503 otherwise; and 503 "draining" once shutdown began
// (drainGate). Nothing an unauthenticated sender can cause on every replica
// at once (reading places, the line of token checks) turns it 503. The 503
// body says only that the server is not ready; the cause (which may name
// the provider URL or a dial error) goes to the log.
func (st *settings) readyz(w http.ResponseWriter, r *http.Request, slots *slotGate) {
	if !probeMethodOK(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if full := slots.fullFor(); st.Authenticate != nil && full > busyNotReadyAfter {
		st.logger.Warn("not ready: every request slot has been taken by verified work", "for", full.Round(time.Millisecond).String(),
			"max_concurrent_requests", st.MaxConcurrentRequests)
		writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"busy"}`))
		return
	}
	if st.ReadyCheck != nil {
		ctx, cancel := context.WithTimeout(r.Context(), DefaultReadyTimeout)
		err := st.ReadyCheck(ctx)
		cancel()
		if err != nil {
			st.logger.Warn("not ready", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"unavailable"}`))
			return
		}
	}
	writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`))
}

// HTTPReadyCheck returns a ReadyCheck that passes when target answers an
// unauthenticated GET with any status below 500 (for the PDPP adapter: the
// RS root). The body is drained up to a small bound and discarded. /readyz
// is unauthenticated and never gated, so concurrent probes share one
// upstream request and its outcome is reused for readyReuse: a probe flood
// makes at most one upstream request per readyReuse.
func HTTPReadyCheck(client *http.Client, target string) func(context.Context) error {
	if client == nil {
		client = http.DefaultClient
	}
	m := &readyMemo{check: func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("upstream unreachable: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode >= 500 {
			return fmt.Errorf("upstream answered %d", resp.StatusCode)
		}
		return nil
	}}
	return m.run
}

// readyReuse is how long one upstream readiness outcome answers /readyz.
const readyReuse = time.Second

// readyMemo runs check for one caller at a time and shares the outcome with
// every caller that asks while it runs or within readyReuse after it ends.
// The check runs detached from any one caller, under DefaultReadyTimeout, so
// a probe that gives up does not fail the others; at most one check runs at
// a time.
type readyMemo struct {
	check   func(context.Context) error
	mu      sync.Mutex
	at      time.Time     // when the last check ended; zero before the first
	err     error         // its outcome
	running chan struct{} // closed when the running check ends; nil when none runs
}

func (m *readyMemo) run(ctx context.Context) error {
	m.mu.Lock()
	if !m.at.IsZero() && time.Since(m.at) < readyReuse {
		err := m.err
		m.mu.Unlock()
		return err
	}
	if m.running == nil {
		done := make(chan struct{})
		m.running = done
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), DefaultReadyTimeout)
			err := m.check(cctx)
			cancel()
			m.mu.Lock()
			m.err, m.at, m.running = err, time.Now(), nil
			m.mu.Unlock()
			close(done)
		}()
	}
	done := m.running
	m.mu.Unlock()
	select {
	case <-done:
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// allowedCapabilities are the only server capabilities the hosted endpoint
// may advertise.
var allowedCapabilities = []string{"tools", "resources", "extensions"}

// allowedExtensions are the only extensions it may advertise: MCP Apps
// (views the host renders and that call tools through the host, each call
// an ordinary stateless request).
var allowedExtensions = []string{"io.modelcontextprotocol/ui"}

// VerifyCapabilities runs an in-process initialize against s and checks that
// it advertises tools (and optionally resources and the MCP Apps extension)
// and nothing else, that neither asks for listChanged or subscribe (nothing
// can be pushed on a stateless JSON-only endpoint), and that instructions
// are present: build it with server.WithToolCapabilities(false),
// server.WithResourceCapabilities(false, false) and WithInstructions.
func VerifyCapabilities(s *server.MCPServer) error {
	const probe = `{"jsonrpc":"2.0","id":"capability-check","method":"initialize","params":{` +
		`"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"capability-check","version":"0"}}}`
	raw, err := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(probe)))
	if err != nil {
		return fmt.Errorf("capability check: %w", err)
	}
	var resp struct {
		Result *struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
			Instructions string                     `json:"instructions"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Result == nil {
		return fmt.Errorf("capability check: initialize failed: %s", raw)
	}
	caps := resp.Result.Capabilities
	if _, ok := caps["tools"]; !ok {
		return errors.New("capability check: the server advertises no tools")
	}
	for name, body := range caps {
		if !slices.Contains(allowedCapabilities, name) {
			return fmt.Errorf("capability check: %q must not be advertised (only tools, resources and extensions)", name)
		}
		if name == "extensions" {
			var ext map[string]json.RawMessage
			_ = json.Unmarshal(body, &ext)
			for id := range ext {
				if !slices.Contains(allowedExtensions, id) {
					return fmt.Errorf("capability check: extension %q must not be advertised (only %s)", id, strings.Join(allowedExtensions, ", "))
				}
			}
			continue
		}
		var flags struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		}
		_ = json.Unmarshal(body, &flags)
		if flags.ListChanged || flags.Subscribe {
			return fmt.Errorf("capability check: %s advertises listChanged/subscribe, which a stateless endpoint cannot deliver", name)
		}
	}
	if resp.Result.Instructions == "" {
		return errors.New("capability check: the server has no instructions")
	}
	return nil
}
