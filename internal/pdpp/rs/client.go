package rs

import (
	"bytes"
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
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/reqid"
)

// Defaults for a Client. DefaultTimeout is also the default budget of one
// tool call (see Options.Timeout).
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxBodySize = 8 << 20
)

// Connection bounds of the default RS transport. MaxConnsPerRSHost caps the
// connections open to the RS at once, dialling included: a burst of calls
// beyond it waits for a connection to free up, and that wait counts against
// the call's deadline (the caller's, or Options.Timeout), so it ends as
// rs_timeout rather than as an unbounded number of sockets. MaxIdleConnsPerRSHost
// keeps as many idle for reuse, so steady load does not redial.
const (
	MaxConnsPerRSHost     = 64
	MaxIdleConnsPerRSHost = 64
)

// TokenSource yields the bearer token for one call. stdio mode returns the
// cached client credential; HTTP mode returns the bearer of the current request.
type TokenSource func(ctx context.Context) (string, error)

// Client performs RS requests.
type Client struct {
	base    *url.URL
	http    *http.Client
	token   TokenSource
	maxBody int64
	timeout time.Duration
	observe func(method, route, status string, d time.Duration)
}

// Options configure a Client; zero values take the defaults.
type Options struct {
	// Timeout bounds one RS request only when the caller's context has no
	// deadline of its own; a caller that set one (the per-call budget of
	// the MCP server) decides alone how long its RS requests may take.
	Timeout     time.Duration
	MaxBodySize int64
	HTTPClient  *http.Client
	// Observe, when set, is told of every RS request once it ends: its
	// method, route template (see Route), status (the HTTP code, or timeout,
	// unreachable, cancelled) and duration. Used for metrics.
	Observe func(method, route, status string, d time.Duration)
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
	c := &Client{base: u, token: token, maxBody: opt.MaxBodySize, timeout: opt.Timeout, http: opt.HTTPClient, observe: opt.Observe}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBodySize
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.http == nil {
		c.http = &http.Client{Transport: newTransport(), CheckRedirect: noCrossOriginRedirect}
	}
	return c, nil
}

// newTransport is the default transport with the RS connection bounds.
func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost = MaxConnsPerRSHost
	tr.MaxIdleConnsPerHost = MaxIdleConnsPerRSHost
	return tr
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
	limit := c.maxBody
	if failed {
		limit = min(limit, MaxErrorBodySize)
	}
	body, err := readBody(resp.Body, resp.ContentLength, limit)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if int64(len(body)) > limit {
		if failed {
			return nil, cutStatusError(resp, body[:limit])
		}
		return nil, &Error{Status: resp.StatusCode, Envelope: adapterEnvelope("rs_response_too_large",
			fmt.Sprintf("the RS answer is larger than %d bytes; ask for less (smaller limit, fields projection, or a field window)", c.maxBody), "")}
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
	obj := e.Object()
	var m struct{ Code, Message string }
	_ = json.Unmarshal(obj, &m)
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
	if m.Code != "" {
		return m.Code
	}
	return m.Type
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
		code = CodeInvalidToken
		msg = "the RS refused the token (HTTP 401)"
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
// cut off, so it is bounded by len(prefix).
func leadingErrorMembers(prefix []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		if key != "error" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil, false
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, false
		}
		obj := map[string]json.RawMessage{}
		for len(obj) < maxCutMembers && dec.More() {
			t, err := dec.Token()
			k, ok := t.(string)
			var v json.RawMessage
			if err != nil || !ok || dec.Decode(&v) != nil {
				break
			}
			if _, dup := obj[k]; !dup {
				obj[k] = v
			}
		}
		return obj, len(obj) > 0
	}
	return nil, false
}

func transportError(ctx context.Context, err error) *Error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &Error{Envelope: adapterEnvelope(CodeTimeout, "the RS did not answer in time; retry, or ask for less", "")}
	case errors.Is(err, context.Canceled):
		return &Error{Envelope: adapterEnvelope("cancelled", "the call was cancelled", "")}
	}
	return &Error{Envelope: adapterEnvelope(CodeUnreachable, "the RS could not be reached: "+scrub(err.Error()), "")}
}

// scrub keeps transport error text short; it never contains the token, which
// travels only in a header.
func scrub(s string) string {
	if len(s) > 300 {
		return s[:300]
	}
	return s
}

// readBody reads at most max+1 bytes of r. A declared length of at most max
// sizes the buffer once (the read still stops at max+1 whatever the RS
// sends); otherwise the buffer grows as io.ReadAll grows it.
func readBody(r io.Reader, declared, max int64) ([]byte, error) {
	if declared < 0 || declared > max {
		return io.ReadAll(io.LimitReader(r, max+1))
	}
	var b bytes.Buffer
	b.Grow(int(declared) + bytes.MinRead)
	_, err := b.ReadFrom(io.LimitReader(r, max+1))
	return b.Bytes(), err
}
