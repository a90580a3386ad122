package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The body of a /mcp POST is read, whole and size-checked, before the
// request may take one of the MaxConcurrentRequests slots: a peer that sends
// its headers and then trickles (or withholds) its body waits outside the
// slots, in a phase of its own with its own bounds.
//
//   - A body of at most promptBodyBytes (by its Content-Length) that arrives
//     within promptWindow needs nothing more: that is every usual JSON-RPC
//     request, and at most maxPromptReads requests wait for theirs at once.
//   - Any other body (larger, of unknown length, or not in within the
//     window) needs a reading place: at most MaxBodyReaders requests hold one
//     at once, and at most MaxBodyReadersPerClient from one client address
//     (an IPv4 address, or the /64 of an IPv6 one, where one host usually
//     has many). A request that finds none is answered 503 at once, its body
//     left unread, and its connection is closed.
//   - A body must arrive within BodyReadTimeout of the moment its reading
//     starts; a slower one is answered 408 and its connection closed.
//
// So slow peers compete with each other for reading places, never with the
// prompt requests of other clients nor for the slots that calls need, and a
// reading place is held no longer than BodyReadTimeout. Refusals are counted
// in Metrics.

// promptBodyBytes, promptWindow and maxPromptReads bound the prompt path:
// while at most maxPromptReads requests wait up to promptWindow each for a
// body of at most promptBodyBytes, they hold at most 64 MiB between them.
const (
	promptBodyBytes = 64 << 10
	promptWindow    = 250 * time.Millisecond
	maxPromptReads  = 1024
)

// readerPlaces hands out the places of the body-reading phase: at most max
// at once, at most perClient at once for one client key. The map holds one
// entry per client key with a place taken, so it never has more than max
// entries.
type readerPlaces struct {
	mu        sync.Mutex
	max       int
	perClient int
	inUse     int
	byClient  map[netip.Prefix]int // places held per client key; at most max entries
}

func newReaderPlaces(max, perClient int) *readerPlaces {
	return &readerPlaces{max: max, perClient: perClient, byClient: make(map[netip.Prefix]int)}
}

// Shed reasons of the body-reading phase.
const (
	reasonReadersBusy       = "body_readers_busy"
	reasonClientReadersBusy = "client_body_readers_busy"
	reasonBodyReadTimeout   = "body_read_timeout"
)

// take reserves a place for client, or returns the reason it cannot (and no
// place). A reserved place is given back with release.
func (p *readerPlaces) take(client netip.Prefix) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse >= p.max {
		return reasonReadersBusy
	}
	if p.byClient[client] >= p.perClient {
		return reasonClientReadersBusy
	}
	p.inUse++
	p.byClient[client]++
	return ""
}

func (p *readerPlaces) release(client netip.Prefix) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inUse--
	if n := p.byClient[client] - 1; n > 0 {
		p.byClient[client] = n
	} else {
		delete(p.byClient, client)
	}
}

// clientKey is the address a request's reading place is counted against:
// the remote IPv4 address, or the /64 prefix of a remote IPv6 address. A
// remote address that does not parse (not a TCP peer) shares one key.
func clientKey(remoteAddr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	addr := ap.Addr().Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	pfx, _ := addr.Prefix(bits)
	return pfx
}

// bodyReadData is the data member of a body-phase refusal.
type bodyReadData struct {
	Reason                  string `json:"reason"`
	MaxBodyReaders          int    `json:"max_body_readers,omitempty"`
	MaxBodyReadersPerClient int    `json:"max_body_readers_per_client,omitempty"`
	BodyReadTimeout         string `json:"body_read_timeout,omitempty"`
}

// bodyReadMiddleware reads the whole body once, under BodyReadTimeout, on
// the prompt path or within a reading place (see above), refusing more than
// MaxBodyBytes with 413, and keeps it for the later stages. It runs before
// the concurrency cap, so no slot is held while a body is still arriving.
func (st *settings) bodyReadMiddleware(next http.Handler) http.Handler {
	places := newReaderPlaces(st.MaxBodyReaders, st.MaxBodyReadersPerClient)
	prompt := make(chan struct{}, maxPromptReads) // one token per request on the prompt path
	warn := &busyWarning{log: st.logger, message: "refusing /mcp requests: body-reading places taken (slow or stalled senders)",
		attrs: []any{"max_body_readers", st.MaxBodyReaders, "max_body_readers_per_client", st.MaxBodyReadersPerClient}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, x := withExchange(r)
		if r.ContentLength > st.MaxBodyBytes {
			st.bodyTooLarge(w)
			return
		}
		rc := http.NewResponseController(w)
		// The body's own deadline, from now. Once the body has been read to
		// its end net/http lifts it (its background read of the idle
		// connection starts without one), so it never cuts the call that
		// follows, which its own deadline bounds. A writer that cannot set
		// one (not a real connection) leaves the server's ReadTimeout in
		// charge.
		_ = rc.SetReadDeadline(time.Now().Add(st.BodyReadTimeout))
		read := make(chan bodyResult, 1)
		start := func() {
			go func() {
				b, err := readBody(r.Body, r.ContentLength, st.MaxBodyBytes)
				read <- bodyResult{b, err}
			}()
		}

		var res bodyResult
		reading, arrived := false, false // reading: a goroutine reads the body into read
		if r.ContentLength >= 0 && r.ContentLength <= promptBodyBytes {
			select {
			case prompt <- struct{}{}:
				reading = true
				start()
				timer := time.NewTimer(promptWindow)
				select {
				case res = <-read:
					arrived = true
				case <-timer.C:
				}
				timer.Stop()
				<-prompt
			default: // the prompt path is full: this one needs a place
			}
		}
		if !arrived {
			client := clientKey(r.RemoteAddr)
			if reason := places.take(client); reason != "" {
				abandonBody(w) // also ends a read in progress at once
				if reading {
					<-read // nothing may read the body once the handler returns
				}
				st.refuseReader(w, reason)
				warn.refused()
				return
			}
			if !reading {
				start()
			}
			res = <-read
			places.release(client)
		}
		body, err := res.body, res.err
		switch {
		case isTimeout(err):
			abandonBody(w)
			writeRPCError(w, http.StatusRequestTimeout, nil, codeServerLimit,
				fmt.Sprintf("the request body did not arrive within %v: send it whole and at once", st.BodyReadTimeout),
				bodyReadData{Reason: reasonBodyReadTimeout, BodyReadTimeout: st.BodyReadTimeout.String()})
			st.Metrics.BodyReadTimeout()
			return
		case err != nil:
			abandonBody(w)
			writeRPCError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "could not read the request body", nil)
			return
		case int64(len(body)) > st.MaxBodyBytes:
			st.bodyTooLarge(w)
			return
		}
		x.body, x.bodyRead = body, true
		x.env = peekEnvelope(body)
		x.rpcMethod = x.env.Method
		next.ServeHTTP(w, r)
	})
}

// bodyResult is what reading a body gave.
type bodyResult struct {
	body []byte
	err  error
}

// refuseReader answers a request that found no reading place: 503 with
// Retry-After and a JSON-RPC error naming the cap it met.
func (st *settings) refuseReader(w http.ResponseWriter, reason string) {
	data := bodyReadData{Reason: reason, MaxBodyReaders: st.MaxBodyReaders}
	msg := fmt.Sprintf("the server is reading the bodies of %d requests, its limit: send the body whole with the headers, or retry after a second", st.MaxBodyReaders)
	if reason == reasonClientReadersBusy {
		data = bodyReadData{Reason: reason, MaxBodyReadersPerClient: st.MaxBodyReadersPerClient}
		msg = fmt.Sprintf("the server is reading the bodies of %d requests from your address, its limit per client: send the body whole with the headers, or retry after a second", st.MaxBodyReadersPerClient)
	}
	w.Header().Set("Retry-After", busyRetryAfter)
	writeRPCError(w, http.StatusServiceUnavailable, nil, codeServerLimit, msg, data)
	st.Metrics.Shed(reason)
}

// bodyTooLarge answers 413 and leaves the rest of the body unread.
func (st *settings) bodyTooLarge(w http.ResponseWriter) {
	abandonBody(w)
	writeRPCError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST,
		"request body is larger than the server limit", map[string]int64{"max_body_bytes": st.MaxBodyBytes})
}

// abandonBody makes the reply close the connection and stops the server
// from reading what is left of the body after the reply (net/http would
// otherwise wait for up to 256 KiB of it from a peer that may never send
// it).
func abandonBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// presizeMax bounds the buffer reserved for a body from its declared length
// alone, before any of it has arrived: a peer that declares 1 MiB and sends
// one byte holds this much, not a megabyte.
const presizeMax = 64 << 10

// readBody reads at most max+1 bytes of r. A declared length sizes the
// buffer up to presizeMax; beyond that it grows as bytes arrive.
func readBody(r io.Reader, declared, max int64) ([]byte, error) {
	var b bytes.Buffer
	if declared > 0 {
		b.Grow(int(min(declared, presizeMax)) + bytes.MinRead)
	}
	_, err := b.ReadFrom(io.LimitReader(r, max+1))
	return b.Bytes(), err
}

// isTimeout reports whether a body read failed on its deadline.
func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
