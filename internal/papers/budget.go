package papers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
)

// Bytes in flight: every asset a call reads is reserved in the process-wide
// limiter (package inflight) before it is read, twice over (the bytes read
// and the text made from them), and held until the call returns. A text
// shown up to max_chars is read only up to what those characters can take
// (utf8.UTFMax bytes each, plus readSlack); the rest is counted as it
// streams past, in countChunk pieces, so the whole is never held.
const (
	// DefaultMaxInFlightBytes bounds the bytes all calls hold at once for
	// assets: room for one whole asset of assets.DefaultMaxBytes.
	DefaultMaxInFlightBytes = 2 * assets.DefaultMaxBytes
	// MinMaxInFlightBytes is the smallest limit accepted: room for a text
	// at the largest max_chars (1,000,000).
	MinMaxInFlightBytes = 8 << 20
	// readSlack is read past max_chars*UTFMax bytes to tell a text that ends
	// there from one that goes on.
	readSlack = 64
	// countChunk is the buffer that counts the characters past the cut.
	countChunk = 32 << 10
	// wholeChunk is reserved at a time while reading an asset whose size
	// the source does not say (a chunked HTTP answer).
	wholeChunk = 256 << 10
	// maxBudgetWait bounds how long a call waits for room in the limiter.
	maxBudgetWait = 30 * time.Second
)

// CodeServerBusy is the code of a call refused for want of bytes in flight.
const CodeServerBusy = "server_busy"

// budgetMiddleware gives each tool call an account of bytes in flight, in
// its tenant's share (the transport names the tenant in ctx),
// closed when the call returns.
func (h *Handlers) budgetMiddleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		acct := h.inflight.OpenFor(ctx)
		defer acct.Close()
		return next(inflight.WithAccount(ctx, acct), req)
	}
}

// resourceBudget is budgetMiddleware for resource reads.
func (h *Handlers) resourceBudget(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		acct := h.inflight.OpenFor(ctx)
		defer acct.Close()
		return next(inflight.WithAccount(ctx, acct), req)
	}
}

// reserve takes n bytes for the call of ctx, waiting at most maxBudgetWait.
func (h *Handlers) reserve(ctx context.Context, n int64) error {
	acct := inflight.FromContext(ctx)
	if acct == nil {
		return nil // a handler called outside the server's middleware
	}
	ctx, cancel := context.WithTimeout(ctx, maxBudgetWait)
	defer cancel()
	return acct.Reserve(ctx, n)
}

// busyError is the tool error of a reservation that could not be had.
func busyError(err error, paperID string) *toolError {
	be, _ := errors.AsType[*inflight.BusyError](err)
	te := &toolError{Code: CodeServerBusy, PaperID: paperID, Fields: map[string]any{"retryable": be.Err != nil}}
	if be.Err == nil {
		te.Message = fmt.Sprintf("reading this asset needs %d bytes in flight, more than the server's limit of %d", be.Want, be.Max)
		te.Next = "Ask for less with a smaller max_chars."
	} else {
		te.Message = fmt.Sprintf("the server is holding its limit of %d bytes for calls in flight and no room for %d more bytes freed up in time", be.Max, be.Want)
		te.Next = "Retry shortly, or ask for less with a smaller max_chars."
	}
	return te
}

// readText reads the text asset at rel and keeps its first max characters
// (see truncate), holding at most max*UTFMax+readSlack bytes of it, reserved
// before they are read.
func (h *Handlers) readText(ctx context.Context, rel string, max int, hint string) (cut, error) {
	rc, size, err := h.assets.Open(ctx, rel)
	if err != nil {
		return cut{}, err
	}
	defer rc.Close()
	limit := int64(max)*utf8.UTFMax + readSlack
	if size >= 0 && size < limit {
		limit = size
	}
	if err := h.reserve(ctx, 2*limit); err != nil {
		return cut{}, err
	}
	buf := make([]byte, limit)
	n, err := io.ReadFull(rc, buf)
	buf = buf[:n]
	more := true
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		more = false
	case err != nil:
		return cut{}, err
	case size == limit:
		more = false // the whole known size is read; a file grown since is read as it was
	}
	// The first max characters take at most max*UTFMax bytes, all in buf.
	end, kept := 0, 0
	for end < len(buf) && kept < max {
		_, sz := utf8.DecodeRune(buf[end:])
		end += sz
		kept++
	}
	if !more && end == len(buf) {
		return cut{Text: string(buf), Total: kept, Returned: kept}, nil
	}
	total := kept
	rest, err := countRunes(buf[end:], rc, more)
	if err != nil {
		return cut{}, err
	}
	total += rest
	text := append(buf[:end], truncationMarker(max, total, hint)...)
	return cut{Text: string(text), Total: total, Returned: max, Truncated: true}, nil
}

// readWhole reads the asset at rel whole, its bytes reserved before they
// are read: at once when its size is known, wholeChunk at a time otherwise.
func (h *Handlers) readWhole(ctx context.Context, rel string) ([]byte, error) {
	rc, size, err := h.assets.Open(ctx, rel)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size >= 0 {
		if err := h.reserve(ctx, 2*size); err != nil {
			return nil, err
		}
		buf := make([]byte, size)
		n, err := io.ReadFull(rc, buf)
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, err
		}
		return buf[:n], nil
	}
	var buf []byte
	for {
		if err := h.reserve(ctx, 2*wholeChunk); err != nil {
			return nil, err
		}
		at := len(buf)
		buf = slices.Grow(buf, wholeChunk)[:at+wholeChunk]
		n, err := io.ReadFull(rc, buf[at:])
		buf = buf[:at+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// countRunes counts the characters of head followed, when more, by the rest
// of r, as utf8.RuneCount would count them all together, reading r
// countChunk bytes at a time (r bounds its own length).
func countRunes(head []byte, r io.Reader, more bool) (int, error) {
	if !more {
		return utf8.RuneCount(head), nil
	}
	n, tail := countComplete(head)
	buf := make([]byte, countChunk)
	carry := copy(buf, tail)
	for {
		m, err := r.Read(buf[carry:])
		end := carry + m
		if err == io.EOF {
			return n + utf8.RuneCount(buf[:end]), nil
		}
		if err != nil {
			return 0, err
		}
		c, rest := countComplete(buf[:end])
		n += c
		carry = copy(buf, rest)
	}
}

// countComplete counts the characters of p up to a last one that more
// bytes could still complete, and returns that incomplete tail (at most
// UTFMax-1 bytes: only the last rune start can begin one).
func countComplete(p []byte) (int, []byte) {
	i := len(p)
	for k := len(p) - 1; k >= 0 && k > len(p)-utf8.UTFMax; k-- {
		if utf8.RuneStart(p[k]) {
			if !utf8.FullRune(p[k:]) {
				i = k
			}
			break
		}
	}
	return utf8.RuneCount(p[:i]), p[i:]
}
