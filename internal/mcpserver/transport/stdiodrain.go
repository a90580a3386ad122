package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/splice"
)

// stdioDrainTimeout bounds how long EOF on stdin waits for answers still owed
// (a cancelled context ends the wait at once).
const stdioDrainTimeout = 30 * time.Second

// pendingCalls counts the JSON-RPC requests read from stdin that have not been
// answered on stdout yet, so EOF on stdin can wait for them: a client that
// writes its requests and closes its end (a pipe, a script) still gets every
// answer, where mcp-go alone would cancel the calls in flight.
type pendingCalls struct {
	mu      sync.Mutex
	pending map[string]bool
	idle    *sync.Cond
}

func newPendingCalls() *pendingCalls {
	p := &pendingCalls{pending: map[string]bool{}}
	p.idle = sync.NewCond(&p.mu)
	return p
}

// message is the part of a JSON-RPC message that tells requests from answers.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// ids returns the messages of one line: a message or a batch.
func ids(line []byte) []message {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []message
		_ = json.Unmarshal(line, &batch)
		return batch
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []message{m}
}

// sawInput records a request read from stdin. Batches are not recorded:
// mcp-go's stdio server answers a batch line with one parse error whose id is
// null, which could never be matched.
func (p *pendingCalls) sawInput(line []byte) {
	id, ok := pendingRequestID(line)
	if !ok {
		return
	}
	p.mu.Lock()
	p.pending[string(id)] = true
	p.mu.Unlock()
}

func (p *pendingCalls) sawOutput(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := answeredID(line, p.pending); ok {
		// The common case, found without decoding the whole reply.
		delete(p.pending, id)
		if len(p.pending) == 0 {
			p.idle.Broadcast()
		}
		return
	}
	for _, m := range ids(line) {
		if m.Method == "" && len(m.ID) > 0 {
			delete(p.pending, string(m.ID))
		}
	}
	if len(p.pending) == 0 {
		p.idle.Broadcast()
	}
}

// answeredID recognises an answer to a pending request by the prefix mcp-go
// writes for every response, {"jsonrpc":"2.0","id":<id>,"result": (or
// "error":), so a large reply is not decoded just to read its id. It looks
// at most the prefix's length into line for each pending id; anything else
// is left to ids.
func answeredID(line []byte, pending map[string]bool) (string, bool) {
	const head = `{"jsonrpc":"2.0","id":`
	if !bytes.HasPrefix(line, []byte(head)) {
		return "", false
	}
	rest := line[len(head):]
	for id := range pending {
		if len(rest) > len(id) && string(rest[:len(id)]) == id {
			after := rest[len(id):]
			if bytes.HasPrefix(after, []byte(`,"result":`)) || bytes.HasPrefix(after, []byte(`,"error":`)) {
				return id, true
			}
		}
	}
	return "", false
}

// waitIdle blocks until every request read so far has been answered, d
// passes, or ctx ends.
func (p *pendingCalls) waitIdle(ctx context.Context, d time.Duration) {
	giveUp := func() {
		p.mu.Lock()
		p.pending = map[string]bool{}
		p.idle.Broadcast()
		p.mu.Unlock()
	}
	timer := time.AfterFunc(d, giveUp)
	defer timer.Stop()
	stop := context.AfterFunc(ctx, giveUp)
	defer stop()
	p.mu.Lock()
	for len(p.pending) > 0 {
		p.idle.Wait()
	}
	p.mu.Unlock()
}

// maxTrackedLine bounds the partial line kept for request tracking; a longer
// line is passed through untracked (mcp-go answers it as it can).
const maxTrackedLine = 16 << 20

// lineScanner calls fn with each complete newline-terminated line it is fed.
type lineScanner struct {
	partial  []byte
	overflow bool
	fn       func([]byte)
}

func (s *lineScanner) feed(b []byte) {
	if n := len(b); n > 0 && n <= maxTrackedLine && len(s.partial) == 0 && !s.overflow &&
		b[n-1] == '\n' && bytes.IndexByte(b[:n-1], '\n') < 0 {
		// One whole line, as mcp-go writes each message: no copy.
		if n > 1 {
			s.fn(b[:n-1])
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.add(b)
			return
		}
		s.add(b[:i])
		s.flush()
		b = b[i+1:]
	}
}

func (s *lineScanner) add(b []byte) {
	if s.overflow || len(s.partial)+len(b) > maxTrackedLine {
		s.overflow, s.partial = true, s.partial[:0]
		return
	}
	s.partial = append(s.partial, b...)
}

func (s *lineScanner) flush() {
	if !s.overflow && len(s.partial) > 0 {
		s.fn(s.partial)
	}
	s.partial, s.overflow = s.partial[:0], false
}

// drainingReader passes stdin through, recording the requests it carries, and
// holds back EOF until the answers owed have been written. It also bounds a
// line: mcp-go reads each line whole into memory, so a line longer than
// maxStdioLine is cut there and ended with a newline (mcp-go answers the cut
// line with a parse error), and the rest of it, up to its own newline, is
// dropped unread by anything else.
type drainingReader struct {
	ctx  context.Context
	src  io.Reader
	p    *pendingCalls
	scan lineScanner
	// lineLen is how many bytes of the current line were passed on;
	// dropping is set while the rest of a cut line is skipped.
	lineLen  int
	dropping bool
	maxLine  int // maxStdioLine; smaller in tests
}

// maxStdioLine bounds one line of stdin (one JSON-RPC message or batch).
const maxStdioLine = maxTrackedLine

func newDrainingReader(ctx context.Context, src io.Reader, p *pendingCalls) *drainingReader {
	r := &drainingReader{ctx: ctx, src: src, p: p, maxLine: maxStdioLine}
	r.scan.fn = p.sawInput
	return r
}

func (r *drainingReader) Read(b []byte) (int, error) {
	n, err := r.src.Read(b)
	// A read whose bytes were all dropped is retried, for bufio gives up
	// after a run of empty reads; each retry consumes input, so the loop
	// ends with the source.
	for err == nil && n > 0 {
		if n = r.bound(b[:n]); n > 0 {
			break
		}
		n, err = r.src.Read(b)
	}
	if err != nil && n > 0 {
		n = r.bound(b[:n])
	}
	r.scan.feed(b[:n])
	if err == io.EOF {
		if n > 0 {
			return n, nil // hand over the data first; the next Read ends the stream
		}
		r.scan.flush()
		r.p.waitIdle(r.ctx, stdioDrainTimeout)
	}
	return n, err
}

// bound applies the line limit to b in place and returns how many bytes of b
// to pass on. Cutting a line drops at least one byte, so the newline that
// ends the cut line always fits.
func (r *drainingReader) bound(b []byte) int {
	out := 0
	for in := 0; in < len(b); {
		i := bytes.IndexByte(b[in:], '\n')
		end := len(b)
		if i >= 0 {
			end = in + i // the line's newline, or the end of b
		}
		switch {
		case r.dropping:
			// skip the rest of a cut line, its newline included
		case r.lineLen+(end-in) > r.maxLine:
			keep := r.maxLine - r.lineLen
			out += copy(b[out:], b[in:in+keep])
			b[out] = '\n'
			out++
			r.dropping = true
		default:
			out += copy(b[out:], b[in:end])
			r.lineLen += end - in
			if i >= 0 {
				b[out] = '\n'
				out++
			}
		}
		if i < 0 {
			break
		}
		r.lineLen, r.dropping = 0, false
		in = end + 1
	}
	return out
}

// answerWriter passes stdout through and records the answers written. mcp-go
// writes each message as one line in one Write; a line that is a resource
// read's error is rewritten to carry its JSON-RPC code (see ResourceError),
// and a line that carries values by reference (package splice) is written
// with the values in place, part by part.
type answerWriter struct {
	dst   io.Writer
	store *splice.Store
	mu    sync.Mutex
	scan  lineScanner
}

func newAnswerWriter(dst io.Writer, p *pendingCalls, store *splice.Store) *answerWriter {
	w := &answerWriter{dst: dst, store: store}
	w.scan.fn = p.sawOutput
	return w
}

func (w *answerWriter) Write(b []byte) (int, error) {
	out := b
	if len(b) > 0 && b[len(b)-1] == '\n' && bytes.IndexByte(b[:len(b)-1], '\n') < 0 {
		out = rewriteResourceError(b)
	}
	if w.store.Pending() {
		// The spliced values hold no line break (splice.Value compacts
		// them), so the line stays one line; its ids are the same with or
		// without them, so the tracking reads the line as encoded.
		if err := w.store.Expand(w.dst, out); err != nil {
			return 0, err
		}
		w.mu.Lock()
		w.scan.feed(out)
		w.mu.Unlock()
		return len(b), nil
	}
	n, err := w.dst.Write(out)
	w.mu.Lock()
	w.scan.feed(out[:n])
	w.mu.Unlock()
	if err == nil && n == len(out) {
		n = len(b)
	} else if n > len(b) {
		n = len(b)
	}
	return n, err
}
