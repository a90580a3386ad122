package transport

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/splice"
)

// The stdio side reads newline-delimited JSON-RPC itself, rather than
// through mcp-go's StdioServer, and hands each message to HandleMessage:
// one walk of each line (pendingRequestID) both routes it and counts it as
// owed an answer, a line is bounded before it is held whole, and each
// request is served on the goroutine that read it, one that served requests
// before (see stdioReader and callPool), its stack grown and in cache.

// Bounds of one stdio session.
const (
	// maxStdioLine bounds one line of stdin (one JSON-RPC message or
	// batch); a longer line is answered with a parse error and its bytes
	// past the bound are dropped as they arrive, never held.
	maxStdioLine = 16 << 20
	// maxStdioCalls bounds the requests served at once; the line reader
	// waits for a free one before it reads on (notifications are served
	// on the reader itself and wait too).
	maxStdioCalls = 16
	// stdioDrainTimeout bounds how long EOF on stdin (or a cancelled
	// context) waits for the answers still owed.
	stdioDrainTimeout = 30 * time.Second
	// stdioReadBuffer is the line reader's buffer; a longer line is
	// gathered from several reads.
	stdioReadBuffer = 64 << 10
)

// stdioSessions numbers the sessions of this process (each its own mcp-go
// session), so ServeStdio can run more than once at a time.
var stdioSessions atomic.Int64

// ServeStdio serves s over newline-delimited JSON-RPC on in/out until in
// reaches EOF or ctx is cancelled (both end it with nil). At EOF the
// requests already read are answered first (within stdioDrainTimeout), so a
// client that closes its end early loses nothing; a cancelled ctx cancels
// them and waits within the same bound. out carries only MCP messages, one
// per line; diagnostics go to errLog (default slog.Default()). Values in
// ctx (such as WithBearer) reach every handler.
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, errLog *slog.Logger) error {
	if s == nil {
		return errors.New("transport: nil MCP server")
	}
	errLog = cmp.Or(errLog, slog.Default())
	sess := &stdioSession{id: fmt.Sprintf("stdio-%d", stdioSessions.Add(1)), notes: make(chan mcp.JSONRPCNotification, 16)}
	if err := s.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("transport: stdio: %w", err)
	}
	defer s.UnregisterSession(context.WithoutCancel(ctx), sess.id)
	// Values the calls return by reference (package splice) are written
	// into their reply lines by the writer.
	store := splice.NewStore()
	defer store.Close()
	w := &lineWriter{dst: out, store: store, log: errLog}
	reqCtx, cancelRequests := context.WithCancel(splice.WithStore(s.WithContext(ctx, sess), store))
	defer cancelRequests()

	go sess.forward(reqCtx, w)
	pool := newCallPool(maxStdioCalls)
	r := &stdioReader{ctx: reqCtx, s: s, w: w, pool: pool,
		lines: lineReader{r: bufio.NewReaderSize(in, stdioReadBuffer), max: maxStdioLine},
		done:  make(chan error, 1)}
	pool.spawn(r.read)
	var err error
	select {
	case err = <-r.done:
	case <-ctx.Done():
		// The reader may stay blocked in in.Read; it serves nothing more
		// once reqCtx ends.
		cancelRequests()
	}
	pool.shut(ctx, stdioDrainTimeout, cancelRequests)
	if err != nil {
		return fmt.Errorf("transport: stdio: %w", err)
	}
	return nil
}

// stdioReader is the reading side of a session. One goroutine of the pool
// reads at a time; the one that reads a request passes the reading on and
// serves it itself, rather than hand it to one that must be woken (a
// wake-up between threads costs a call tens of microseconds on a small
// machine).
type stdioReader struct {
	ctx   context.Context
	s     *server.MCPServer
	w     *lineWriter
	pool  *callPool
	lines lineReader
	// done gets the reading's end once: nil at EOF, when ctx ends or the
	// pool is shut, else the read error. Capacity 1, so it never waits.
	done chan error
}

// read reads lines until it reads a request, serving every other message
// itself. A request waits for a free call slot (maxStdioCalls); then the
// reading goes on on another goroutine of the pool, and this one serves
// the request and reports that it held a slot. At EOF or a read error a
// request on the last line is served here before the end is reported.
func (r *stdioReader) read() (served bool) {
	for {
		line, cut, err := r.lines.next()
		if r.ctx.Err() != nil {
			r.done <- nil
			return served
		}
		switch {
		case cut:
			r.w.write(parseError)
		case len(bytes.TrimSpace(line)) == 0:
		default:
			if id, ok := pendingRequestID(line); ok {
				if !r.pool.acquire(r.ctx) {
					r.done <- nil
					return false
				}
				handedOn := err == nil && r.pool.spawn(r.read)
				r.w.write(handle(r.ctx, r.s, line, id))
				if handedOn {
					return true
				}
				served = true
				if err == nil { // the pool is shut: nothing more is read
					r.done <- nil
					return served
				}
				break
			}
			if !json.Valid(line) {
				r.w.write(parseError)
				break
			}
			if res := handle(r.ctx, r.s, line, nil); res != nil {
				r.w.write(res)
			}
		}
		if err == io.EOF {
			r.done <- nil
			return served
		}
		if err != nil {
			r.done <- err
			return served
		}
	}
}

// parseError answers a line that is not JSON, or is longer than
// maxStdioLine.
var parseError = mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(nil),
	Error: mcp.NewJSONRPCErrorDetails(mcp.PARSE_ERROR, "Parse error", nil)}

// handle runs one message through mcp-go. A panic that escapes mcp-go's own
// recovery is answered as an internal error carrying the request's id (a
// notification's is dropped), so one message cannot end the session.
func handle(ctx context.Context, s *server.MCPServer, line, id []byte) (res mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			res = nil
			if id != nil {
				var v any
				_ = json.Unmarshal(id, &v)
				res = mcp.NewJSONRPCError(mcp.NewRequestId(v), mcp.INTERNAL_ERROR, fmt.Sprintf("internal error: %v", r), nil)
			}
		}
	}()
	return s.HandleMessage(ctx, json.RawMessage(line))
}

// lineReader returns the lines of r, each in memory of its own, holding at
// most max bytes of one: a longer line is reported cut, its rest dropped.
type lineReader struct {
	r   *bufio.Reader
	max int
}

// next returns the next line without its newline, whether it was cut, and
// the read error that ended it (io.EOF after a last line without newline).
func (l *lineReader) next() (line []byte, cut bool, err error) {
	for {
		frag, ferr := l.r.ReadSlice('\n')
		if ferr == nil && line == nil && !cut && len(frag)-1 <= l.max {
			// The whole line in one read, as a client writes it.
			return append([]byte(nil), frag[:len(frag)-1]...), false, nil
		}
		body := frag
		if ferr == nil {
			body = frag[:len(frag)-1]
		}
		if !cut {
			if len(line)+len(body) > l.max {
				cut, line = true, nil
			} else {
				line = append(line, body...)
			}
		}
		if ferr == bufio.ErrBufferFull {
			continue
		}
		return line, cut, ferr
	}
}

// lineWriter writes each message as one line, one at a time, with the
// values its call returned by reference in place and a resource read's
// error carrying its JSON-RPC code (see ResourceError).
type lineWriter struct {
	mu     sync.Mutex
	dst    io.Writer
	store  *splice.Store
	log    *slog.Logger
	failed bool // a write failed; logged once
}

func (w *lineWriter) write(msg mcp.JSONRPCMessage) {
	if msg == nil {
		return
	}
	b, err := EncodeMessage(msg)
	if err != nil {
		w.log.Error("stdio: encoding a reply", "err", err)
		return
	}
	b = showErrorText(rewriteResourceError(append(b, '\n')))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.store.Pending() {
		// The spliced values hold no line break (splice.Value compacts
		// them), so the line stays one line.
		err = w.store.Expand(w.dst, b)
	} else {
		_, err = w.dst.Write(b)
	}
	if err != nil && !w.failed {
		w.failed = true
		w.log.Error("stdio: writing to stdout", "err", err)
	}
}

// EncodeMessage is json.Marshal(msg), byte for byte, as the stdio transport
// writes each message (the benchmarks encode the server half of a call with
// it too). A tool call's answer is put together from its parts:
// encoding/json would check and copy the result's own MarshalJSON output
// once more, whole, to compact it and escape HTML in it, and that output
// (json.Marshal of a map) is already both.
func EncodeMessage(msg mcp.JSONRPCMessage) ([]byte, error) {
	r, _ := msg.(mcp.JSONRPCResponse)
	res, _ := r.Result.(*mcp.CallToolResult)
	if v, ok := r.Result.(mcp.CallToolResult); ok {
		res = &v
	}
	if res == nil {
		return json.Marshal(msg)
	}
	version, err1 := json.Marshal(r.JSONRPC)
	id, err2 := json.Marshal(r.ID)
	result, err3 := res.MarshalJSON()
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(`{"jsonrpc":,"id":,"result":}`)+len(version)+len(id)+len(result)+1)
	b = append(append(b, `{"jsonrpc":`...), version...)
	b = append(append(b, `,"id":`...), id...)
	b = append(append(b, `,"result":`...), result...)
	return append(b, '}'), nil
}

// callPool runs the session's goroutines: at most max serve a request at
// once (each holding one of max slots from acquire until its function
// reports it), and one more reads. Work goes to the goroutine idle last
// (idle is a stack), so sequential calls run on stacks grown to what a call
// needs; a goroutine is started only when none is idle: never more than max+1.
type callPool struct {
	slots  chan struct{} // one per request being served; capacity max
	mu     sync.Mutex
	idle   []chan func() bool // most recently idle last
	closed bool
	calls  sync.WaitGroup // requests acquired and not yet done
}

func newCallPool(max int) *callPool {
	return &callPool{slots: make(chan struct{}, max)}
}

// acquire takes a slot for one request, waiting for a free one; false when
// ctx ended first or the pool is shut.
func (p *callPool) acquire(ctx context.Context) bool {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		<-p.slots
		return false
	}
	p.calls.Add(1)
	return true
}

// spawn runs f on an idle goroutine of the pool or a new one; f reports
// whether it served a request acquired for it (whose slot is then given
// back). False when the pool is shut.
func (p *callPool) spawn(f func() bool) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	var ch chan func() bool
	if n := len(p.idle); n > 0 {
		ch, p.idle = p.idle[n-1], p.idle[:n-1]
		p.mu.Unlock()
	} else {
		p.mu.Unlock()
		ch = make(chan func() bool, 1)
		go p.work(ch)
	}
	ch <- f
	return true
}

// work runs the functions sent on ch until the pool is shut.
func (p *callPool) work(ch chan func() bool) {
	for f := range ch {
		served := f()
		if served {
			p.calls.Done()
		}
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.idle = append(p.idle, ch)
		}
		p.mu.Unlock()
		// The slot is given back once this goroutine is listed idle, so
		// the next request finds it rather than starting another.
		if served {
			<-p.slots
		}
		if closed {
			return
		}
	}
}

// shut takes no more requests, ends the idle goroutines, and waits at most
// d for the requests started; when ctx ends first, cancel (the requests'
// context) is called and the wait goes on within the same d.
func (p *callPool) shut(ctx context.Context, d time.Duration, cancel func()) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ch := range idle {
		close(ch)
	}
	done := make(chan struct{})
	go func() { p.calls.Wait(); close(done) }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
		cancel()
		select {
		case <-done:
		case <-timer.C:
		}
	}
}

// stdioSession is the one client session of a stdio connection.
type stdioSession struct {
	id          string
	notes       chan mcp.JSONRPCNotification
	initialized atomic.Bool
	info        atomic.Pointer[mcp.Implementation]
	caps        atomic.Pointer[mcp.ClientCapabilities]
}

func (s *stdioSession) SessionID() string                                   { return s.id }
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }
func (s *stdioSession) Initialize()                                         { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool                                   { return s.initialized.Load() }
func (s *stdioSession) GetClientInfo() mcp.Implementation                   { return deref(s.info.Load()) }
func (s *stdioSession) SetClientInfo(info mcp.Implementation)               { s.info.Store(&info) }
func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities       { return deref(s.caps.Load()) }
func (s *stdioSession) SetClientCapabilities(caps mcp.ClientCapabilities)   { s.caps.Store(&caps) }

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// forward writes the notifications mcp-go sends the session until ctx ends.
func (s *stdioSession) forward(ctx context.Context, w *lineWriter) {
	for {
		select {
		case n := <-s.notes:
			w.write(n)
		case <-ctx.Done():
			return
		}
	}
}

// pendingRequestID returns the raw id of a JSON-RPC request line: an object
// with a non-empty string "method" and an "id" other than null, as decoding
// it would find them (names matched without regard to case, the last of a
// repeated member winning); ok is false for anything else (a notification,
// an answer, a batch, invalid JSON). Every stdio line passes here, so it is
// read once at its top level by a pooled jsontext.Decoder (jsonpool), which
// checks it and builds no values: a decode costs several times as much
// (BenchmarkPendingRequestID).
func pendingRequestID(line []byte) (id []byte, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	var method []byte
	methodBad := false
	if !walkObject(line, func(key, val []byte) {
		switch {
		case memberIs(key, "id"):
			id = val
		case memberIs(key, "method"):
			// null leaves a decoded string as it was; a value of another
			// type fails the decode, whatever follows it.
			switch {
			case val[0] == '"':
				method = val
			case string(val) != "null":
				methodBad = true
			}
		}
	}) {
		return nil, false
	}
	// A method that is not a string fails the decode; "" is no request.
	if methodBad || len(method) < 3 || method[0] != '"' || len(id) == 0 || string(id) == "null" {
		return nil, false
	}
	return id, true
}

// walkObject calls fn with each member of obj in order (quoted name, raw
// value, read in place) and reports whether obj is one valid JSON object as
// json.Valid finds it, with nothing after it; fn may have seen members of
// an obj found invalid further on.
func walkObject(obj []byte, fn func(key, val []byte)) bool {
	return walkDecoded(obj, func(d *jsonpool.Reader, key []byte) error {
		val, err := d.ReadValue()
		if err == nil {
			fn(key, val)
		}
		return err
	})
}

// walkDecoded is walkObject for a reader of the member's value itself:
// fn is called with each quoted name and must read the value from d (one
// ReadValue, or a walk of an object with walkMembers).
func walkDecoded(obj []byte, fn func(d *jsonpool.Reader, key []byte) error) bool {
	d := jsonpool.Get(obj)
	defer jsonpool.Put(d)
	if !walkMembers(d, fn) {
		return false
	}
	_, err := d.ReadToken() // nothing but white space may follow
	return err == io.EOF
}

// walkMembers reads the object that comes next in d, calling fn with each
// quoted name as walkDecoded does; it reports whether the object is valid.
func walkMembers(d *jsonpool.Reader, fn func(d *jsonpool.Reader, key []byte) error) bool {
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' { // a valid object: as many members as bytes
		key, err := d.ReadValue()
		if err != nil || fn(d, key) != nil {
			return false
		}
	}
	tok, err := d.ReadToken()
	return err == nil && tok.Kind() == '}'
}

// memberIs reports whether the quoted member name key decodes to name,
// ignoring case as encoding/json does when it fills a struct field.
func memberIs(key []byte, name string) bool {
	k := key[1 : len(key)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		// Invalid UTF-8 and lone surrogates read as U+FFFD, as
		// encoding/json reads them; the error says only that there were some.
		k, _ = jsontext.AppendUnquote(nil, key)
	}
	return bytes.EqualFold(k, []byte(name))
}
