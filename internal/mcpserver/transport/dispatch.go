package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/splice"
)

// dispatcher is the last /mcp stage. It hands each JSON-RPC message to
// mcp-go's Handle with a buffered writer whose CanStream is false: mcp-go
// then never upgrades a reply to text/event-stream (a notification sent
// during a call is dropped) and, stateless, never mints an Mcp-Session-Id.
// Before the reply is written any session header is removed and a non-JSON
// error from mcp-go is rewritten as a JSON-RPC error.
type dispatcher struct {
	st   *settings
	core *server.StreamableHTTPServer
}

// bufferedReply is an mcp-go HTTPResponseWriter that keeps the whole reply
// (at most limit bytes: a longer one is dropped and marked overflow, to be
// answered with an error) and cannot stream. A value in the request's
// splice store is kept by reference where its placeholder stood, counting
// at its own size against limit.
type bufferedReply struct {
	header   http.Header
	status   int
	spliced  [][]byte     // the reply before body: literal runs and spliced values, in order
	body     bytes.Buffer // the literal bytes after the last spliced value
	size     int64        // bytes held in spliced and body
	limit    int64
	overflow bool
	store    *splice.Store // nil: nothing to splice
	release  []func()      // gives back the spliced values' bytes; one per Write that took any
}

func (b *bufferedReply) Header() http.Header { return b.header }

func (b *bufferedReply) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedReply) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	if b.overflow {
		return len(p), nil
	}
	// The values taken are released when the request's store is closed,
	// after the reply is written.
	parts, size, done := b.store.Take(p)
	b.release = append(b.release, done)
	if b.size+size > b.limit {
		b.overflow = true
		b.spliced, b.body, b.size = nil, bytes.Buffer{}, 0
		return len(p), nil
	}
	for i, part := range parts {
		if i%2 == 0 {
			b.body.Write(part) // p is the encoder's buffer: copied
			continue
		}
		if b.body.Len() > 0 {
			b.spliced = append(b.spliced, bytes.Clone(b.body.Bytes()))
			b.body.Reset()
		}
		b.spliced = append(b.spliced, part)
	}
	b.size += size
	return len(p), nil
}

func (b *bufferedReply) Flush() {}

func (b *bufferedReply) CanStream() bool { return false }

// reply is a finished answer to one HTTP request or batch element: the
// spliced parts (if any) then body.
type reply struct {
	status  int
	header  http.Header
	spliced [][]byte
	body    []byte
	// keep: the reply carries answers of batch items that ran, which a
	// token rejection met later in the batch must not replace.
	keep bool
	// streamed: the reply has been written already (a batch that carried
	// spliced values); nothing is left to write.
	streamed bool
	// release gives back the bytes of the spliced values once they are
	// written (none: the request's store does it when it is closed).
	release []func()
}

func rpcErrorReply(status int, id json.RawMessage, code int, message string) reply {
	return reply{status: status, body: marshalRPCError(id, code, message, nil)}
}

// codeServerLimit is the server-defined JSON-RPC code of a request that ran
// into one of the server's bounds (reply size, request deadline).
const codeServerLimit = -32000

// limitData is the error data of a request that met a bound: a reason and
// the limit met (each refusal sets only its own, never zero).
type limitData struct {
	Reason                  string `json:"reason"`
	MaxBatchItems           int    `json:"max_batch_items,omitempty"`
	BatchItems              int    `json:"batch_items,omitempty"`
	MaxReplyBytes           int64  `json:"max_reply_bytes,omitempty"`
	RequestTimeout          string `json:"request_timeout,omitempty"`
	MaxBodyReaders          int    `json:"max_body_readers,omitempty"`
	MaxBodyReadersPerClient int    `json:"max_body_readers_per_client,omitempty"`
	BodyReadTimeout         string `json:"body_read_timeout,omitempty"`
	MaxBodyReadersPerPrefix int    `json:"max_body_readers_per_prefix,omitempty"`
	MinBodyRate             int64  `json:"min_body_rate,omitempty"`
	MaxConcurrentRequests   int    `json:"max_concurrent_requests,omitempty"`
	MaxUnverifiedRequests   int    `json:"max_unverified_requests,omitempty"`
}

func (d *dispatcher) replyTooLarge(id json.RawMessage) reply {
	return reply{status: http.StatusOK, body: marshalRPCError(id, codeServerLimit,
		fmt.Sprintf("the reply would be larger than the server limit of %d bytes: ask for less (smaller limit, a fields projection, a field window), or send fewer messages per batch", d.st.MaxReplyBytes),
		limitData{Reason: "reply_too_large", MaxReplyBytes: d.st.MaxReplyBytes})}
}

func (d *dispatcher) requestTimedOut(id json.RawMessage) []byte {
	return marshalRPCError(id, codeServerLimit,
		fmt.Sprintf("the request ran out of its %v deadline before this message was answered: retry it alone, or ask for less", d.st.RequestTimeout),
		limitData{Reason: "request_timeout", RequestTimeout: d.st.RequestTimeout.String()})
}

func (d *dispatcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body-read and protocol-version stages ran before (NewHTTPHandler).
	r, x := withExchange(r)
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeRPCError(w, http.StatusUnsupportedMediaType, x.env.ID, mcp.INVALID_REQUEST,
			"Content-Type must be application/json", nil)
		return
	}

	// One deadline for the whole request: when it passes, the calls still
	// running are cancelled (and their RS requests) and no batch item starts.
	ctx, cancel := context.WithTimeout(r.Context(), d.st.RequestTimeout)
	defer cancel()
	// Values the request's calls return by reference live until the reply
	// is written (or the request ends without one).
	store := splice.NewStore()
	defer store.Close()
	r = r.WithContext(splice.WithStore(ctx, store))

	header := forwardedHeader(r.Header)
	var out reply
	switch jsontext.Value(x.body).Kind() {
	case '[':
		x.rpcMethod = "batch"
		out = d.serveBatch(w, r, header, x)
	case '{':
		x.rpcMethod = x.env.Method
		out = d.serveOne(r, header, x.body, x.env, x.version)
	default:
		if json.Valid(x.body) {
			out = rpcErrorReply(http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "a JSON-RPC message must be an object")
		} else {
			out = rpcErrorReply(http.StatusBadRequest, nil, mcp.PARSE_ERROR, "request body is not valid JSON")
		}
	}
	if tokenRejected(r) && !out.keep {
		// The RS refused the bearer itself during a call: the client must
		// refresh it or authorize again.
		d.st.refuseInvalidToken(w, r)
		return
	}
	out.write(w)
}

func (rp reply) write(w http.ResponseWriter) {
	if rp.status == 0 || rp.streamed {
		// mcp-go wrote nothing: the client went away mid-call.
		return
	}
	h := w.Header()
	maps.Copy(h, rp.header)
	h.Del(server.HeaderKeySessionID)
	size := len(rp.body)
	for _, p := range rp.spliced {
		size += len(p)
	}
	if size > 0 {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(size))
	}
	w.WriteHeader(rp.status)
	for _, p := range rp.spliced {
		if _, err := w.Write(p); err != nil {
			return
		}
	}
	if len(rp.body) > 0 {
		_, _ = w.Write(rp.body)
	}
}

// forwardedHeader is the header set mcp-go sees: without Authorization
// (handlers read the token with BearerFromContext, so it cannot leak into a
// handler's logs), Cookie, and Mcp-Session-Id (a client-supplied id can
// never select or create per-session state).
func forwardedHeader(h http.Header) http.Header {
	out := h.Clone()
	out.Del("Authorization")
	out.Del(server.HeaderKeySessionID)
	out.Del("Cookie")
	return out
}

// serveOne answers one JSON-RPC message whose envelope is env.
func (d *dispatcher) serveOne(r *http.Request, header http.Header, msg []byte, env envelope, version string) reply {
	if jsontext.Value(msg).Kind() != '{' {
		return rpcErrorReply(http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "a JSON-RPC message must be an object")
	}
	switch mcp.MCPMethod(env.Method) {
	case mcp.MethodNotificationCancelled:
		// Without sessions every client shares mcp-go's in-flight table,
		// keyed by request id only, so honouring a cancellation could stop
		// another client's call. A client cancels by closing its request.
		d.st.logger.Debug("cancellation notification ignored on stateless endpoint")
		return reply{status: http.StatusAccepted}
	case mcp.MethodSubscriptionsListen:
		status := http.StatusOK
		if mcp.IsModernProtocol(version) {
			status = http.StatusNotFound
		}
		return rpcErrorReply(status, env.ID, mcp.METHOD_NOT_FOUND,
			"subscriptions/listen is not offered: this endpoint answers every request with one JSON reply and holds no streams open")
	case mcp.MethodInitialize:
		msg = d.clampInitialize(msg)
	case mcp.MethodPing:
		if mcp.IsModernProtocol(version) && len(env.ID) > 0 && string(env.ID) != "null" {
			// 2026-07-28 dropped ping and mcp-go refuses it there, but the
			// official Go SDK client (v1.8.0) still sends it, with no
			// per-request _meta. It is a liveness check that needs no
			// state: answer it here with the empty result.
			return reply{status: http.StatusOK, body: []byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{}}`)}
		}
	}

	buf := &bufferedReply{header: http.Header{}, limit: d.st.MaxReplyBytes, store: splice.FromContext(r.Context())}
	d.core.Handle(buf, &server.HTTPRequest{
		Method:  http.MethodPost,
		URL:     r.URL,
		Header:  header,
		Body:    msg,
		Context: r.Context(),
	})
	if buf.overflow {
		d.st.logger.Warn("reply over the reply size limit replaced by an error",
			"rpc_method", truncateField(env.Method), "max_reply_bytes", d.st.MaxReplyBytes)
		return d.replyTooLarge(env.ID)
	}
	if buf.status == 0 && len(env.ID) > 0 && errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		return reply{status: http.StatusOK, body: d.requestTimedOut(env.ID)}
	}
	rp := d.normalize(buf, env.ID)
	if env.Method == string(mcp.MethodResourcesRead) || env.Method == string(mcp.MethodToolsCall) {
		rp.body = rewriteResourceError(rp.body)
	}
	if len(rp.spliced) == 0 {
		rp.body = showErrorText(rp.body)
	}
	return rp
}

// normalize turns mcp-go's buffered output into a JSON-only reply.
func (d *dispatcher) normalize(buf *bufferedReply, id json.RawMessage) reply {
	rp := reply{status: buf.status, header: buf.header, spliced: buf.spliced, body: buf.body.Bytes(), release: buf.release}
	rp.header.Del(server.HeaderKeySessionID)
	if buf.size == 0 {
		return rp
	}
	mt, _, _ := mime.ParseMediaType(rp.header.Get("Content-Type"))
	switch mt {
	case "application/json":
		return rp
	case "text/event-stream":
		// Cannot happen with a writer that cannot stream; never pass it on.
		d.st.logger.Error("mcp-go produced an event stream on a JSON-only endpoint")
		return rpcErrorReply(http.StatusInternalServerError, id, mcp.INTERNAL_ERROR, "internal error: streaming reply refused")
	default:
		status, code := rp.status, mcp.INVALID_REQUEST
		if status < 400 {
			status = http.StatusInternalServerError
		}
		if status >= 500 {
			code = mcp.INTERNAL_ERROR
		}
		return rpcErrorReply(status, id, code, strings.TrimSpace(string(bytes.Join(append(slices.Clone(rp.spliced), rp.body), nil))))
	}
}

// clampInitialize makes initialize negotiate only configured revisions:
// mcp-go echoes any version it knows, so a request for one not configured
// is rewritten to ask for the newest configured handshake revision.
func (d *dispatcher) clampInitialize(msg []byte) []byte {
	var m, params map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || json.Unmarshal(m["params"], &params) != nil || params == nil {
		return msg
	}
	var requested string
	_ = json.Unmarshal(params["protocolVersion"], &requested)
	if d.st.supports(mcp.NegotiateLegacyVersion(requested)) {
		return msg
	}
	target := d.st.newestLegacy()
	if target == "" {
		return msg
	}
	params["protocolVersion"], _ = json.Marshal(target)
	m["params"], _ = json.Marshal(params)
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// serveBatch handles the JSON-RPC batch in x.body (its size left in x for
// Observe). Batches exist only in 2025-03-26; later revisions get 400. A
// batch of more than MaxBatchItems messages is refused whole before any
// item runs. Items run one after another under the request's deadline; no
// further item runs once the reply would pass MaxReplyBytes.
//
// No hold-and-wait: an item whose answer carries bytes of the budget in
// flight (a spliced value, such as a full reply's RS body) is written at
// once and its bytes given back before the next item runs (four batches of
// full calls once held each other's bytes until their deadlines). From
// then on, and once the answers gathered would pass BatchHeldBytes (so a
// batch holds at most that much whatever its item count: 16 compact answers
// of 32 KiB once held 512 KiB per request), the batch is streamed (chunked,
// no Content-Length): an item that would take it past MaxReplyBytes, and
// each after it, not run, is answered reply_too_large. Until then a reply
// over the cap is replaced by one error.
//
// A batch answers every item it ran. When the RS refuses the bearer itself
// (MarkTokenRejected) during the first item answered, ServeHTTP answers the
// whole request 401. Later, the items answered keep their answers (a
// created subscription's secret is shown only once), the refused item is
// its own error, and the items not run are answered -32001 invalid_token;
// the bearer's verdict has been evicted, so its next request gets the 401.
func (d *dispatcher) serveBatch(w http.ResponseWriter, r *http.Request, header http.Header, x *exchange) reply {
	version := x.version
	if version != mcp.ProtocolVersion20250326 {
		return rpcErrorReply(http.StatusBadRequest, nil, mcp.INVALID_REQUEST,
			"JSON-RPC batches are not accepted in protocol version "+version+": send one message per request")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(x.body, &items); err != nil {
		return rpcErrorReply(http.StatusBadRequest, nil, mcp.PARSE_ERROR, "request body is not valid JSON")
	}
	x.batchItems, x.batchSeen = len(items), true
	if len(items) == 0 {
		return rpcErrorReply(http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "empty batch")
	}
	if len(items) > d.st.MaxBatchItems {
		return reply{status: http.StatusBadRequest, body: marshalRPCError(nil, mcp.INVALID_REQUEST,
			fmt.Sprintf("a batch of %d messages is more than the server limit of %d; nothing was run: send at most %d messages per batch",
				len(items), d.st.MaxBatchItems, d.st.MaxBatchItems),
			limitData{Reason: "batch_too_large", MaxBatchItems: d.st.MaxBatchItems, BatchItems: len(items)})}
	}
	ctx := r.Context()
	b := &batchWriter{w: w, max: d.st.MaxReplyBytes}
	b.put([]byte{'['})
	// notRun answers the items not run yet with answer, each of an id.
	notRun := func(rest []json.RawMessage, answer func(id json.RawMessage) []byte) reply {
		for _, item := range rest {
			if env := peekEnvelope(item); len(env.ID) > 0 && !b.add(answer(env.ID)) {
				return d.batchTooLarge(b, rest)
			}
		}
		return b.end()
	}
	for i, item := range items {
		if tokenRejected(r) {
			// An earlier item met the refusal after others were answered.
			return notRun(items[i:], func(id json.RawMessage) []byte { return d.notRunRejected(r, id) })
		}
		if err := ctx.Err(); err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				if b.streaming {
					return b.end()
				}
				return reply{} // the client went away
			}
			// Out of time: the items not run yet are answered, not run.
			return notRun(items[i:], d.requestTimedOut)
		}
		env := peekEnvelope(item)
		var rp reply
		if env.Method == string(mcp.MethodInitialize) {
			rp.body = marshalRPCError(env.ID, mcp.INVALID_REQUEST, "initialize must not be part of a batch", nil)
		} else {
			rp = d.serveOne(r, header, item, env, version)
		}
		if b.answered == 0 && tokenRejected(r) {
			return reply{} // nothing answered yet: ServeHTTP answers 401
		}
		ok := true
		if len(rp.spliced) > 0 {
			ok = b.addSpliced(rp)
		} else if part := bytes.TrimSpace(rp.body); len(part) > 0 {
			ok = b.add(part)
		}
		if !ok {
			d.st.logger.Warn("batch reply over the reply size limit replaced by an error",
				"items", len(items), "answered", b.answered, "max_reply_bytes", d.st.MaxReplyBytes)
			return d.batchTooLarge(b, items[i:])
		}
		if b.failed {
			return b.end() // the client went away mid-reply
		}
	}
	return b.end()
}

// batchTooLarge ends a batch whose next answer would pass the reply cap:
// one error for the whole reply while nothing is written, else one for each
// item of rest that has an id.
func (d *dispatcher) batchTooLarge(b *batchWriter, rest []json.RawMessage) reply {
	if !b.streaming {
		return d.replyTooLarge(nil)
	}
	for _, item := range rest {
		if env := peekEnvelope(item); len(env.ID) > 0 {
			b.force(d.replyTooLarge(env.ID).body)
		}
	}
	return b.end()
}

// BatchHeldBytes bounds the answers a batch gathers before it streams them
// (see serveBatch): one compact reply's worth, a term of the worst-case heap
// per request (docs/deploy.md).
const BatchHeldBytes = 32 << 10

// batchWriter gathers a batch's answers, and streams them once one of them
// carries spliced values or they would pass BatchHeldBytes (see serveBatch).
type batchWriter struct {
	w         http.ResponseWriter
	max       int64  // MaxReplyBytes
	out       []byte // answers gathered and not written yet: at most BatchHeldBytes+1
	size      int64  // bytes of the reply so far, written or not
	answered  int
	streaming bool // the status line and the answers so far are written
	failed    bool // a write failed: the client is gone
}

// add appends one answer; false when it would take the reply past the cap.
func (b *batchWriter) add(p []byte) bool {
	if b.size+int64(len(p))+2 > b.max {
		return false
	}
	b.force(p)
	return true
}

// force appends one answer whatever its size (a short error); one that
// would take the answers gathered past BatchHeldBytes starts the stream.
func (b *batchWriter) force(p []byte) {
	if !b.streaming && len(b.out)+1+len(p) > BatchHeldBytes {
		b.start()
	}
	b.append(p)
}

// append adds one answer of parts, written or gathered as put does.
func (b *batchWriter) append(parts ...[]byte) {
	if b.answered > 0 {
		b.put([]byte{','})
	}
	for _, p := range parts {
		b.put(p)
		b.size += int64(len(p))
	}
	b.size++
	b.answered++
}

// put writes p when streaming, or gathers it: the callers keep the
// gathered answers within BatchHeldBytes+1 (the closing bracket), and so
// does their buffer, which grows at most to that.
func (b *batchWriter) put(p []byte) {
	if b.streaming {
		b.write(p)
		return
	}
	if need := len(b.out) + len(p); need > cap(b.out) {
		c := min(max(2*cap(b.out), need, 512), max(BatchHeldBytes+1, need))
		b.out = append(make([]byte, 0, c), b.out...)
	}
	b.out = append(b.out, p...)
}

// start writes the status line and the answers gathered so far; from then
// on the batch is streamed.
func (b *batchWriter) start() {
	b.streaming = true
	h := b.w.Header()
	h.Del(server.HeaderKeySessionID)
	h.Set("Content-Type", "application/json")
	b.w.WriteHeader(http.StatusOK)
	b.write(b.out)
	b.out = nil
}

// addSpliced writes rp, whose values are held by reference, straight after
// what was gathered before it, and gives its bytes back.
func (b *batchWriter) addSpliced(rp reply) bool {
	defer func() {
		for _, f := range rp.release {
			f()
		}
	}()
	parts := append(rp.spliced, bytes.TrimRight(rp.body, " \t\r\n"))
	n := int64(0)
	for _, p := range parts {
		n += int64(len(p))
	}
	if b.size+n+2 > b.max {
		return false
	}
	if !b.streaming {
		b.start()
	}
	b.append(parts...)
	return true
}

func (b *batchWriter) write(p []byte) {
	if b.failed || len(p) == 0 {
		return
	}
	if _, err := b.w.Write(p); err != nil {
		b.failed = true
	}
}

// end closes the batch: the reply to write (202 when no item had an
// answer), or (streaming) its last byte.
func (b *batchWriter) end() reply {
	if !b.streaming {
		if b.answered == 0 {
			return reply{status: http.StatusAccepted}
		}
		b.put([]byte{']'})
		return reply{status: http.StatusOK, header: http.Header{}, body: b.out, keep: true}
	}
	b.write([]byte{']'})
	return reply{status: http.StatusOK, streamed: true, keep: true}
}

// notRunRejected answers a batch item not run because the RS refused the
// bearer itself during an earlier item.
func (d *dispatcher) notRunRejected(r *http.Request, id json.RawMessage) []byte {
	return marshalRPCError(id, codeUnauthorized,
		"not run: the resource server no longer accepts the bearer token (expired, revoked or unknown); refresh it or authorize again, then send this message again",
		map[string]string{"reason": "invalid_token", "resource_metadata": d.st.metadataURL(r)})
}
