package rs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"gopkg.in/yaml.v3"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/reqid"
	"github.com/pdpp-mcp/pdpp-mcp/spec"
)

// Defaults for a Client. DefaultTimeout is also the default budget of one
// tool call (see Options.Timeout).
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxBodySize = 8 << 20
	// DefaultMaxInFlightBytes bounds the bytes all calls of the process
	// hold at once for RS bodies and the replies built from them (see
	// package inflight); it holds several bodies of DefaultMaxBodySize.
	DefaultMaxInFlightBytes = 48 << 20
)

// firstReadBytes is the first reservation of a body whose length the RS
// did not declare; it doubles as the body grows, up to the read's limit.
const firstReadBytes = 64 << 10

// Connection bounds of the RS transport. MaxConnsPerRSHost caps the
// connections open to the RS at once, dialling included: a burst beyond it
// waits for one to free up within the call's deadline (the caller's, or
// Options.Timeout), ending as rs_timeout rather than as unbounded sockets.
// MaxIdleConnsPerRSHost keeps as many idle, so steady load does not redial.
const (
	MaxConnsPerRSHost     = 64
	MaxIdleConnsPerRSHost = 64
)

// TokenSource yields the bearer token for one call. stdio mode returns the
// cached client credential; HTTP mode returns the bearer of the current request.
type TokenSource func(ctx context.Context) (string, error)

// Client performs RS requests.
type Client struct {
	base     *url.URL
	http     *http.Client
	token    TokenSource
	maxBody  int64
	timeout  time.Duration
	observe  func(method, route, status string, d time.Duration)
	inflight *inflight.Limiter
}

// Options configure a Client; zero values take the defaults.
type Options struct {
	// Timeout bounds one RS request only when the caller's context has no
	// deadline of its own; a caller that set one (the per-call budget of
	// the MCP server) decides alone how long its RS requests may take.
	Timeout     time.Duration
	MaxBodySize int64
	// Observe, when set, is told of every RS request once it ends: its
	// method, route template (see Route), status (the HTTP code, or timeout,
	// unreachable, cancelled) and duration. Used for metrics.
	Observe func(method, route, status string, d time.Duration)
	// MaxConns caps the connections of the client's own transport to the RS
	// (default MaxConnsPerRSHost). A client made
	// for token checks gets a small budget of its own, so checks never wait
	// for, nor take, the connections data calls use.
	MaxConns int
	// InFlight bounds the bytes of RS bodies held at once, process-wide;
	// nil gives the client a limiter of its own of DefaultMaxInFlightBytes.
	// A body is read under the account of the call's context (see
	// inflight.WithAccount), which keeps it reserved until the call is
	// done; a read outside any call holds its bytes only while it reads.
	InFlight *inflight.Limiter
}

// New returns a Client for the RS at providerURL.
func New(providerURL string, token TokenSource, opt Options) (*Client, error) {
	u, err := ParseProviderURL(providerURL)
	if err != nil {
		return nil, err
	}
	if token == nil {
		return nil, errors.New("rs: a token source is required")
	}
	c := &Client{base: u, token: token, maxBody: opt.MaxBodySize, timeout: opt.Timeout, observe: opt.Observe, inflight: opt.InFlight}
	if c.inflight == nil {
		c.inflight = inflight.New(DefaultMaxInFlightBytes)
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBodySize
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	// The default transport with the RS connection bounds: conns at most,
	// as many kept idle.
	conns := opt.MaxConns
	if conns <= 0 {
		conns = MaxConnsPerRSHost
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = conns, min(conns, MaxIdleConnsPerRSHost)
	c.http = &http.Client{Transport: tr, CheckRedirect: noCrossOriginRedirect}
	return c, nil
}

// ParseProviderURL checks that s is an absolute http(s) URL without query or
// fragment and returns it with a path ending in "/".
func ParseProviderURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("provider URL %q must be an absolute http(s) URL such as http://127.0.0.1:7663", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("provider URL %q must not carry credentials, a query or a fragment", s)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// noCrossOriginRedirect keeps the bearer on the RS origin: a redirect elsewhere
// is not followed.
func noCrossOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// Timeout is the client's bound of one RS request made without a deadline;
// servers use it as the default budget of one call.
func (c *Client) Timeout() time.Duration { return c.timeout }

// InFlight is the limiter of bytes in flight the client reads bodies under.
// A nil Client has none.
func (c *Client) InFlight() *inflight.Limiter {
	if c == nil {
		return nil
	}
	return c.inflight
}

// BaseURL is the provider URL with a trailing slash, for generated request
// builders (which drop the base path without it).
func (c *Client) BaseURL() string { return c.base.String() }

// Origin is the provider URL without the trailing slash, for absolute links.
func (c *Client) Origin() string { return strings.TrimRight(c.base.String(), "/") }

// Response is a successful RS answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req with the caller's token and returns the body of a 2xx answer.
// Any other outcome is an *Error.
func (c *Client) Do(ctx context.Context, req *http.Request) (*Response, error) {
	token, err := c.token(ctx)
	if err != nil {
		return nil, &Error{Status: 0, Envelope: adapterEnvelope("credential_unavailable", err.Error(), "")}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req = req.WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+token)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	reqid.Inject(ctx, req.Header) // X-Request-Id, traceparent, tracestate of the call
	status, start := "", time.Now()
	if c.observe != nil {
		defer func() { c.observe(req.Method, c.Route(req.URL.EscapedPath()), status, time.Since(start)) }()
	}
	resp, err := c.http.Do(req)
	if err != nil {
		e := transportError(ctx, err)
		status = strings.TrimPrefix(e.Code(), "rs_")
		return nil, e
	}
	status = strconv.Itoa(resp.StatusCode)
	defer resp.Body.Close()
	failed := resp.StatusCode < 200 || resp.StatusCode > 299
	limit, refuse := c.maxBody, (func(int64) *Error)(nil)
	if bl, ok := ctx.Value(bodyLimitKey{}).(bodyLimit); ok && !failed {
		limit, refuse = bl.max, bl.refuse
	}
	if failed {
		// An error body is read up to its own bound; past it, its first
		// bytes still say what went wrong (cutStatusError).
		limit = min(c.maxBody, MaxErrorBodySize)
	}
	body, err := c.readBody(ctx, resp.Body, resp.ContentLength, limit, failed)
	if errors.Is(err, errTooLarge) {
		if failed && int64(len(body)) > limit {
			return nil, cutStatusError(resp, body[:limit])
		}
		if refuse != nil {
			return nil, refuse(limit)
		}
		return nil, &Error{Status: resp.StatusCode, Envelope: adapterEnvelope("rs_response_too_large",
			fmt.Sprintf("the RS answer is larger than %d bytes; ask for less (smaller limit, fields projection, or a field window)", limit), "")}
	}
	var busy *inflight.BusyError
	if errors.As(err, &busy) && !errors.Is(busy.Err, context.Canceled) {
		return nil, BusyError(busy)
	}
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if failed {
		return nil, statusError(resp, body)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// Get builds and sends a GET for path (relative to the provider URL) with query.
func (c *Client) Get(ctx context.Context, path string, query url.Values) (*Response, error) {
	u := c.base.ResolveReference(&url.URL{Path: strings.TrimPrefix(path, "/")})
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &Error{Envelope: adapterEnvelope("invalid_request", err.Error(), "")}
	}
	return c.Do(ctx, req)
}

// Error is a failed RS call. Envelope is the whole `{"error": {...}}` document:
// the RS's own bytes when it sent a JSON error envelope, otherwise an adapter
// error of the same shape.
type Error struct {
	Status   int
	Envelope json.RawMessage
}

func (e *Error) Error() string {
	var m struct{ Code, Message string }
	_ = json.Unmarshal(e.Object(), &m)
	return fmt.Sprintf("rs error %d %s: %s", e.Status, m.Code, m.Message)
}

// Object returns the `error` member of the envelope.
func (e *Error) Object() json.RawMessage {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(e.Envelope, &env) == nil && len(env.Error) > 0 {
		return env.Error
	}
	return e.Envelope
}

// Code returns the error code (or type when no code is set).
func (e *Error) Code() string {
	var m struct{ Code, Type string }
	_ = json.Unmarshal(e.Object(), &m)
	return cmp.Or(m.Code, m.Type)
}

// AdapterError builds an Error of the adapter's own making (type adapter_error).
func AdapterError(code, message, param string) *Error {
	return &Error{Envelope: adapterEnvelope(code, message, param)}
}

func adapterEnvelope(code, message, param string) json.RawMessage {
	obj := map[string]any{"type": "adapter_error", "code": code, "message": message}
	if param != "" {
		obj["param"] = param
	}
	b, _ := json.Marshal(map[string]any{"error": obj})
	return b
}

func statusError(resp *http.Response, body []byte) *Error {
	trimmed := bytes.TrimSpace(body)
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(trimmed, &env) == nil && len(env.Error) > 0 && env.Error[0] == '{' {
		return &Error{Status: resp.StatusCode, Envelope: append(json.RawMessage(nil), trimmed...)}
	}
	code := "rs_http_" + fmt.Sprint(resp.StatusCode)
	msg := fmt.Sprintf("the RS answered HTTP %d without a JSON error envelope", resp.StatusCode)
	if resp.StatusCode == http.StatusUnauthorized {
		code, msg = CodeInvalidToken, "the RS refused the token (HTTP 401)"
	}
	return &Error{Status: resp.StatusCode, Envelope: adapterEnvelope(code, msg, "")}
}

// MaxErrorBodySize bounds the body of an RS error answer read into memory:
// an error envelope is a few hundred bytes, so a longer body is cut (see
// cutStatusError) rather than read up to the data body bound.
const MaxErrorBodySize = 1 << 20

// maxCutMembers bounds the members of the error object kept from the
// first MaxErrorBodySize bytes of an error body too long to read whole.
const maxCutMembers = 32

// cutStatusError is the error of a failed RS answer whose body is longer
// than MaxErrorBodySize, from its first bytes: the envelope's error object
// reduced to its leading members complete within them (at most
// maxCutMembers), with truncated and error_body_cut_at added; when those
// hold neither its code nor its type, an adapter error naming the status.
func cutStatusError(resp *http.Response, prefix []byte) *Error {
	if obj, ok := leadingErrorMembers(prefix); ok && (obj["code"] != nil || obj["type"] != nil) {
		obj["truncated"] = json.RawMessage("true")
		obj["error_body_cut_at"] = json.RawMessage(strconv.Itoa(len(prefix)))
		b, err := json.Marshal(map[string]map[string]json.RawMessage{"error": obj})
		if err == nil {
			return &Error{Status: resp.StatusCode, Envelope: b}
		}
	}
	return &Error{Status: resp.StatusCode, Envelope: adapterEnvelope("rs_http_"+strconv.Itoa(resp.StatusCode),
		fmt.Sprintf("the RS answered HTTP %d with an error body longer than %d bytes and no readable error envelope in them", resp.StatusCode, len(prefix)), "")}
}

// leadingErrorMembers reads, from the first bytes of an RS error body, the
// members of its `error` object that are complete within them: at most
// maxCutMembers, the first of each key. The read stops at the first member
// cut off, or at one that ends the bytes (a number there may go on). A
// jsontext.Decoder reads the prefix as a stream that ends early, so it is
// bounded by len(prefix).
func leadingErrorMembers(prefix []byte) (map[string]json.RawMessage, bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(prefix), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return nil, false
		}
		if tok.String() == "error" {
			break
		}
		if err := dec.SkipValue(); err != nil || int(dec.InputOffset()) >= len(prefix) {
			return nil, false
		}
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	obj := map[string]json.RawMessage{}
	// One step per member, each past the last: bounded by len(prefix).
	for len(obj) < maxCutMembers && dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			break
		}
		key := tok.String()
		val, err := dec.ReadValue()
		if err != nil || int(dec.InputOffset()) >= len(prefix) {
			break
		}
		if _, dup := obj[key]; !dup {
			obj[key] = append(json.RawMessage(nil), val...)
		}
	}
	return obj, len(obj) > 0
}

func transportError(ctx context.Context, err error) *Error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &Error{Envelope: adapterEnvelope(CodeTimeout, "the RS did not answer in time; retry, or ask for less", "")}
	case errors.Is(err, context.Canceled):
		return &Error{Envelope: adapterEnvelope("cancelled", "the call was cancelled", "")}
	}
	// Transport error text is kept short; it never holds the token, which
	// travels only in a header.
	msg := err.Error()
	return &Error{Envelope: adapterEnvelope(CodeUnreachable, "the RS could not be reached: "+msg[:min(len(msg), 300)], "")}
}

// errTooLarge is a body longer than the read's limit.
var errTooLarge = errors.New("rs: body over the limit")

// readBody reads r whole, refusing it with errTooLarge once it passes max
// bytes (reading at most max+1, and nothing of a body declared longer).
// Its buffer is reserved from the call's account (package inflight)
// before it is allocated: firstReadBytes, doubling as bytes arrive up to
// the declared length (plus one) or max+1, so at most half is unused; a
// declared length within four times what has arrived is grown to at once.
// A reservation not free at once gives back what this read holds, then
// waits for the whole size within ctx, so reads never wait on one another
// while holding bytes. It stays with the account until the call is done
// (outside any call: while the read lasts); a refused body's is given back
// at once. With keepPrefix, a body over max is read to max+1 bytes however
// long it says it is and returned beside errTooLarge, for an error body
// whose first members still tell what went wrong.
func (c *Client) readBody(ctx context.Context, r io.Reader, declared, max int64, keepPrefix bool) (body []byte, err error) {
	acct := inflight.FromContext(ctx)
	if acct == nil {
		acct = c.inflight.OpenFor(ctx)
		defer acct.Close()
	}
	if declared > max && !keepPrefix {
		// The RS says how long the body is: too long, so none of it is
		// read (closing it drops the connection rather than drain it).
		return nil, errTooLarge
	}
	var reserved int64
	defer func() {
		if err != nil {
			acct.Release(reserved)
		}
	}()
	reserve := func(size int64) error {
		if !acct.TryReserve(size - reserved) {
			acct.Release(reserved)
			reserved = 0
			if err := acct.Reserve(ctx, size); err != nil {
				return err
			}
		}
		reserved = size
		return nil
	}
	// The buffer grows as bytes arrive, never ahead of them: a body that
	// declares 8 MiB and trickles holds a reservation of at most twice what
	// has arrived (and firstReadBytes at first), not what it declares, so
	// slow bodies cannot take the budget from others. A declared length
	// only caps the growth (one byte over, to see EOF without growing).
	limit := max + 1
	if declared >= 0 {
		limit = min(declared, max) + 1
	}
	size := min(limit, firstReadBytes)
	if err := reserve(size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for {
		if int64(len(buf)) > max {
			if !keepPrefix {
				buf = nil
			}
			return buf, errTooLarge
		}
		if len(buf) == cap(buf) {
			next := min(max+1, 2*int64(cap(buf)))
			if int64(cap(buf)) < limit {
				next = min(limit, next)
				// A declared length within four times what has arrived
				// is grown to at once: the body is copied once fewer
				// (about one byte allocated per body byte less).
				if declared >= 0 && limit <= 4*int64(cap(buf)) {
					next = limit
				}
			}
			if err := reserve(next); err != nil {
				return nil, err
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		n, rerr := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch { // at EOF past max, the loop's top refuses the body
		case rerr == io.EOF && int64(len(buf)) <= max:
			return buf, nil
		case rerr != nil && rerr != io.EOF:
			return nil, rerr
		}
	}
}

type bodyLimitKey struct{}

type bodyLimit struct {
	max    int64
	refuse func(max int64) *Error
}

// WithBodyLimit returns ctx under which every RS body is read up to max
// bytes instead of the client's Options.MaxBodySize: a longer body is not read
// further and the request fails with refuse(max), or with
// rs_response_too_large when refuse is nil. A call at detail "full" uses it
// to stop at its reply ceiling rather than hold a body it cannot return.
func WithBodyLimit(ctx context.Context, max int64, refuse func(max int64) *Error) context.Context {
	return context.WithValue(ctx, bodyLimitKey{}, bodyLimit{max: max, refuse: refuse})
}

// CodeServerBusy is the code of a call refused because the process held
// its limit of bytes in flight for other calls until the call's deadline.
const CodeServerBusy = "server_busy"

// BusyError is the typed error of a reservation of bytes in flight that
// could not be had.
func BusyError(e *inflight.BusyError) *Error {
	msg := fmt.Sprintf("the server is holding its limit of %d bytes for calls in flight and no room for %d more bytes freed up within this call's budget; retry shortly, or ask for less (compact detail, a smaller limit, a fields projection, a field window)", e.Max, e.Want)
	if e.Err == nil {
		msg = fmt.Sprintf("this call needs %d bytes in flight, more than the server's limit of %d; ask for less (compact detail, a smaller limit, a fields projection, a field window)", e.Want, e.Max)
	}
	return &Error{Envelope: adapterEnvelope(CodeServerBusy, msg, "")}
}

// RouteOther is the route template of a request that matches no known route.
const RouteOther = "other"

// extraRoutes are RS paths the adapter calls outside the OpenAPI document.
var extraRoutes = []string{"/" + ".well-known/oauth-protected-resource"}

// routeTemplate is one RS path template, as reported and split into
// segments for matching.
type routeTemplate struct {
	path string
	segs []string
}

// routeTemplates are the path templates of spec.OpenAPI (the document
// gen/rsclient is generated from) plus extraRoutes. The set is fixed at build
// time, which bounds the route label of RS metrics.
var routeTemplates = sync.OnceValue(func() []routeTemplate {
	var doc struct {
		Paths map[string]yaml.Node `yaml:"paths"`
	}
	_ = yaml.Unmarshal(spec.OpenAPI, &doc)
	var out []routeTemplate
	add := func(p string) {
		p = strings.Trim(p, "/")
		out = append(out, routeTemplate{path: "/" + p, segs: strings.Split(p, "/")})
	}
	for p := range doc.Paths {
		add(p)
	}
	for _, p := range extraRoutes {
		add(p)
	}
	return out
})

// Route maps an escaped request path below the provider URL's path to its route
// template (e.g. /v1/streams/{stream}/records/{id}), never echoing a path
// parameter; a path that matches no template is RouteOther. When several
// templates match, the one with the most literal segments wins.
func (c *Client) Route(path string) string {
	rel, ok := strings.CutPrefix(path, c.base.EscapedPath())
	if !ok {
		return RouteOther
	}
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	best, bestLiterals := RouteOther, -1
	for _, tmpl := range routeTemplates() {
		if len(tmpl.segs) != len(segs) {
			continue
		}
		literals := 0 // -1: no match
		for i, t := range tmpl.segs {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") && segs[i] != "" {
				continue
			}
			if t != segs[i] {
				literals = -1
				break
			}
			literals++
		}
		if literals > bestLiterals {
			best, bestLiterals = tmpl.path, literals
		}
	}
	return best
}
