package demors

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

// Config configures a demo resource server.
type Config struct {
	// Tokens optionally fixes the bearer token of a grant, by grant name ("client",
	// "narrow", "owner"); grants without an entry get a random 32-byte token.
	Tokens map[string]string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// OAuth, when set, also serves the demo authorization server (package demoas), whose
	// grants cover the demo's connectors and whose tokens are accepted beside the fixed ones.
	OAuth *OAuthConfig
}

// OAuthConfig configures the demo authorization server; see demoas.Config.
type OAuthConfig struct {
	// AccessTokenTTL is the life of an access token (default 600 s).
	AccessTokenTTL time.Duration
	// AutoConsent approves every authorization at once, without a consent page.
	AutoConsent bool
	// DocumentClient is for tests only (no flag sets it); see demoas.Config.DocumentClient.
	DocumentClient *http.Client
	// AllowLoopbackDocuments lets client metadata documents be fetched from loopback hosts
	// (--demo-allow-loopback-cimd); see demoas.Config.AllowLoopbackDocuments.
	AllowLoopbackDocuments bool
}

// Server is one demo resource server with its own seeded database and tokens.
type Server struct {
	log     *slog.Logger
	store   *store.Store
	cat     *store.Catalog
	grants  map[string]*grant // by grant name
	tokens  map[string]string // grant name -> token
	handler http.Handler
	as      *demoas.Server // nil without Config.OAuth

	deliveries *deliverer
	subMu      sync.Mutex
	subs       map[string]subscription // by id, under subMu; at most maxSubscriptionsPerGrant per grant

	mu        sync.Mutex
	closed    bool
	listeners []*http.Server
}

// New seeds a fresh in-memory database and builds the server.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for name := range cfg.Tokens {
		if !slices.Contains(grantNames, name) {
			return nil, fmt.Errorf("demors: unknown grant %q in Config.Tokens (want one of %s)", name, strings.Join(grantNames, ", "))
		}
	}
	tokens := map[string]string{}
	for _, name := range grantNames {
		tok := cfg.Tokens[name]
		if _, fixed := cfg.Tokens[name]; fixed && strings.TrimSpace(tok) == "" {
			return nil, fmt.Errorf("demors: Config.Tokens[%q] is empty", name)
		}
		if tok == "" {
			var b [32]byte
			_, _ = rand.Read(b[:]) // never fails (crypto/rand)
			tok = "pdppdemo_" + name + "_" + base64.RawURLEncoding.EncodeToString(b[:])
		}
		if slices.Contains(slices.Collect(maps.Values(tokens)), tok) {
			return nil, fmt.Errorf("demors: grants share the same token")
		}
		tokens[name] = tok
	}
	st, err := store.Open(context.Background())
	if err != nil {
		return nil, err
	}
	s := &Server{
		log:    log,
		store:  st,
		cat:    st.Catalog(),
		tokens: tokens,
		subs:   map[string]subscription{},
	}
	s.grants = demoGrants(s.cat)
	if cfg.OAuth != nil {
		var sources []demoas.Source
		for _, ctr := range s.cat.Connectors {
			// The consent page names a connector by its id, capitalised.
			sources = append(sources, demoas.Source{ID: ctr.ID, URL: ctr.SourceID, Name: strings.ToUpper(ctr.ID[:1]) + ctr.ID[1:]})
		}
		s.as, err = demoas.New(demoas.Config{Sources: sources, AccessTokenTTL: cfg.OAuth.AccessTokenTTL,
			AutoConsent: cfg.OAuth.AutoConsent, DocumentClient: cfg.OAuth.DocumentClient,
			AllowLoopbackDocuments: cfg.OAuth.AllowLoopbackDocuments, Logger: log})
		if err != nil {
			st.Close()
			return nil, err
		}
	}
	s.deliveries = newDeliverer(log)
	s.handler = s.buildHandler()
	return s, nil
}

// Handler returns the whole server's HTTP handler: the discovery index at /, the
// protected-resource metadata, the /v1 API and, with Config.OAuth, the authorization server.
func (s *Server) Handler() http.Handler { return s.handler }

// Token returns a grant's bearer token ("client", "narrow" or "owner"), "" for another name.
func (s *Server) Token(grant string) string { return s.tokens[grant] }

// Close stops listeners started by ListenAndServe, waits for pending webhook deliveries and
// releases the database.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	listeners := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	var errs []error
	for _, hs := range listeners {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, hs.Shutdown(ctx)) // errors.Join drops a nil
		cancel()
	}
	s.deliveries.close()
	errs = append(errs, s.store.Close())
	return errors.Join(errs...)
}

// ListenAndServe serves s on addr (for example "127.0.0.1:0") in the background until ctx is
// cancelled or s is closed, returning once bound its base URL ("http://127.0.0.1:54321/").
func ListenAndServe(ctx context.Context, addr string, s *Server) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("demors: listen %s: %w", addr, err)
	}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// A client that trickles its body, reads slowly or idles is cut off; the demo RS
		// answers every request from local SQLite well within these.
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return "", errors.New("demors: server is closed")
	}
	s.listeners = append(s.listeners, hs)
	s.mu.Unlock()
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("demo RS stopped serving", "err", err)
		}
	}()
	context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	})
	return "http://" + ln.Addr().String() + "/", nil
}

// authenticate maps the Authorization header to a grant.
func (s *Server) authenticate(r *http.Request) (*grant, *apiError) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return nil, errAuth("authentication_error", "Missing Bearer token")
	}
	var found *grant
	for _, name := range grantNames {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(s.tokens[name])) == 1 {
			found = s.grants[name]
		}
	}
	switch {
	case found != nil:
		return found, nil
	case s.as != nil:
		return s.issuedGrant(tok)
	}
	return nil, errInactiveToken()
}

func (s *Server) buildHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveDiscovery)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", s.serveProtectedResource)
	if s.as != nil {
		s.as.Register(mux)
	}
	strict := rsserver.NewStrictHandlerWithOptions(api{s}, []rsserver.StrictMiddlewareFunc{s.answer}, rsserver.StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			aerr := errInvalid("body", "request body is not valid JSON for this operation: %v", err)
			if tooLarge, ok := errors.AsType[*http.MaxBytesError](err); ok {
				aerr = errInvalid("body", "request body is larger than %d bytes", tooLarge.Limit)
			}
			_ = aerr.reply(reqCtxFrom(r.Context())).write(w)
		},
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Error("demo RS response failed", "path", r.URL.Path, "err", err)
			_ = errInternal().reply(reqCtxFrom(r.Context())).write(w)
		},
	})
	rsserver.HandlerWithOptions(strict, rsserver.StdHTTPServerOptions{
		BaseRouter:       mux,
		ErrorHandlerFunc: s.paramError,
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.noRoute(mux, w, r) })
	return s.middleware(mux)
}

// maxRequestBodyBytes bounds a request body: the largest an operation takes (an event
// subscription with a 2,048-character callback_url and a stream filter) is well under
// 1 KiB, and the generated JSON binder cannot be made to decode an arbitrarily large one.
const maxRequestBodyBytes = 64 << 10

// middleware attaches the request context, bounds the body, authenticates /v1 and logs.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rc := newReqCtx(r)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			grantName := ""
			if rc.grant != nil {
				grantName = rc.grant.name
			}
			s.log.Debug("demo RS request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
				"grant", grantName, "request_id", rc.requestID, "duration", time.Since(start))
		}()
		if r.Body != nil {
			r.Body = http.MaxBytesReader(sw, r.Body, maxRequestBodyBytes)
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			g, aerr := s.authenticate(r)
			if aerr != nil {
				_ = aerr.reply(rc).write(sw)
				return
			}
			rc.grant = g
		}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), reqCtxKey{}, rc)))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// paramError answers a query or path parameter the generated wrapper could not bind.
func (s *Server) paramError(w http.ResponseWriter, r *http.Request, err error) {
	rc := reqCtxFrom(r.Context())
	param, msg := "", err.Error()
	if e, ok := errors.AsType[*rsserver.InvalidParamFormatError](err); ok {
		param = e.ParamName
	} else if e, ok := errors.AsType[*rsserver.RequiredParamError](err); ok {
		param = e.ParamName
		if param == "field" && strings.HasSuffix(r.URL.Path, "/field-window") {
			_ = errInvalidFieldPath("field is required and must be a non-empty string").reply(rc).write(w)
			return
		}
		msg = param + " is required"
	} else if e, ok := errors.AsType[*rsserver.TooManyValuesForParamError](err); ok {
		param = e.ParamName
	}
	_ = errInvalid(param, "%s", msg).reply(rc).write(w)
}

// noRoute answers paths and methods no operation serves: 405 when the path exists under
// another method, 404 otherwise.
func (s *Server) noRoute(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	rc := reqCtxFrom(r.Context())
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		rep := (&apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
			message: fmt.Sprintf("%s is not supported on %s", r.Method, r.URL.Path), typ: "invalid_request_error"}).reply(rc)
		rep.header.Set("Allow", strings.Join(allow, ", "))
		_ = rep.write(w)
		return
	}
	_ = errNotFound(fmt.Sprintf("No route for %s %s", r.Method, r.URL.Path)).reply(rc).write(w)
}

// api implements the generated strict server interface: each operation answers a *reply
// (which satisfies every response interface) or an error that answer makes an envelope.
type api struct{ *Server }

// answer runs one operation and turns its error into an envelope.
func (s *Server) answer(h rsserver.StrictHandlerFunc, _ string) rsserver.StrictHandlerFunc {
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request, req any) (any, error) {
		rc := reqCtxFrom(ctx)
		if rc == nil || rc.grant == nil {
			// The middleware authenticates every /v1 request; reaching here means a wiring bug.
			return errInternal().reply(&reqCtx{requestID: "req_unbound"}), nil
		}
		rep, err := h(ctx, w, r, req)
		if err != nil {
			var aerr *apiError
			if errors.As(err, &aerr) {
				return aerr.reply(rc), nil
			}
			s.log.Error("demo RS handler failed", "path", rc.path, "request_id", rc.requestID, "err", err)
			return errInternal().reply(rc), nil
		}
		return rep, nil
	}
}
