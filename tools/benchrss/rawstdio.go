package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const (
	// rawReplyLimit bounds one line the bare stdio client reads; a longer
	// reply ends the run (the workload's replies are tens of KB).
	rawReplyLimit = 4 << 20
	// rawReadBuffer is the first size of the line buffer (grown up to rawReplyLimit).
	rawReadBuffer = 64 << 10
	// rawSkipLimit bounds the lines without an id skipped awaiting a reply.
	rawSkipLimit = 100
	// rawProtocol is the revision the bare client asks for: the newest one
	// with the initialize handshake, so requests need no per-request _meta.
	rawProtocol = mcp.ProtocolVersion20251125
	// stderrTail is how much of the raw child's stderr errors quote.
	stderrTail = 4 << 10
)

// rawClient is a bare MCP client of a stdio server: newline-delimited
// JSON-RPC, a request line with an increasing id, then its reply line, of
// which only id, error and result.isError are decoded. I/O honours the
// call's deadline where the pipes can (os.Pipe files do). After any error
// the client is unusable: a reply may be half read.
type rawClient struct {
	w      io.Writer
	src    io.Reader      // under lines, for its read deadline
	lines  *bufio.Scanner // reply lines, at most rawReplyLimit bytes each
	req    []byte         // request line, reused
	idText []byte         // the current id as JSON, reused
	nextID int64
}

func newRawClient(r io.Reader, w io.Writer) *rawClient {
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 0, rawReadBuffer), rawReplyLimit+2)
	lines.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if atEOF && len(data) > 0 && bytes.IndexByte(data, '\n') < 0 {
			return 0, nil, io.ErrUnexpectedEOF // a reply cut off
		}
		return bufio.ScanLines(data, atEOF)
	})
	return &rawClient{w: w, src: r, lines: lines, nextID: 1}
}

// rawReply is the part of a reply the bare client decodes.
type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
}

// initialize makes the handshake: initialize, then notifications/initialized.
func (c *rawClient) initialize(ctx context.Context) error {
	params := `{"protocolVersion":"` + rawProtocol + `","capabilities":{},"clientInfo":{"name":"benchrss-raw","version":"0"}}`
	if err := c.roundTrip(ctx, "initialize", []byte(params)); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	_, err := io.WriteString(c.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return err
}

// callTool sends tools/call with params ({"name","arguments"}); isError fails.
func (c *rawClient) callTool(ctx context.Context, params []byte) error {
	return c.roundTrip(ctx, "tools/call", params)
}

// roundTrip writes one request line and reads until its reply, skipping at
// most rawSkipLimit lines without an id. method must need no escaping.
func (c *rawClient) roundTrip(ctx context.Context, method string, params []byte) error {
	id := c.nextID
	c.nextID++
	c.idText = strconv.AppendInt(c.idText[:0], id, 10)
	c.req = fmt.Appendf(c.req[:0], `{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}`+"\n", c.idText, method, params)
	if err := c.setDeadlines(ctx); err != nil {
		return err
	}
	if _, err := c.w.Write(c.req); err != nil {
		return fmt.Errorf("request %d: writing: %w", id, err)
	}
	for skipped := 0; ; skipped++ { // bounded by rawSkipLimit
		if !c.lines.Scan() {
			err := c.lines.Err()
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("reply line longer than %d bytes", rawReplyLimit)
			}
			return fmt.Errorf("request %d: reading the reply: %w", id, cmp.Or(err, io.EOF))
		}
		done, err := c.check(c.lines.Bytes(), id)
		if done || err != nil {
			return err
		}
		if skipped >= rawSkipLimit {
			return fmt.Errorf("request %d: no reply within %d lines", id, rawSkipLimit)
		}
	}
}

// check decodes a line read for request id: done when it is its success,
// neither done nor err when it has no id (a notification, a blank line).
func (c *rawClient) check(line []byte, id int64) (done bool, err error) {
	if len(line) == 0 {
		return false, nil
	}
	var r rawReply
	if err := json.Unmarshal(line, &r); err != nil {
		return false, fmt.Errorf("request %d: reply is not a JSON-RPC message: %w: %.200s", id, err, line)
	}
	noID := len(r.ID) == 0 || string(r.ID) == "null"
	switch {
	case noID && r.Method != "":
		return false, nil
	case r.Method != "":
		return false, fmt.Errorf("request %d: the server sent request %s (%s), which the bare client does not answer", id, r.ID, r.Method)
	case !bytes.Equal(r.ID, c.idText):
		return false, fmt.Errorf("request %d: reply has id %s", id, r.ID)
	case r.Error != nil:
		return false, fmt.Errorf("request %d: JSON-RPC error %d: %s", id, r.Error.Code, r.Error.Message)
	case r.Result == nil:
		return false, fmt.Errorf("request %d: reply has no result: %.200s", id, line)
	case r.Result.IsError:
		return false, fmt.Errorf("request %d: tool error: %.200s", id, line)
	}
	return true, nil
}

// setDeadlines gives the pipes that take one the deadline of ctx, if any.
func (c *rawClient) setDeadlines(ctx context.Context) error {
	d, _ := ctx.Deadline()
	if f, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		if err := f.SetWriteDeadline(d); err != nil {
			return err
		}
	}
	if f, ok := c.src.(interface{ SetReadDeadline(time.Time) error }); ok {
		return f.SetReadDeadline(d)
	}
	return nil
}

// rawChild is the server binary run over stdio for the bare client.
type rawChild struct {
	*rawClient
	cmd    *exec.Cmd
	stderr *tailBuffer
	exited chan error // receives the result of cmd.Wait
}

// startRawChild runs bin with args (in this environment) through the handshake.
func (m *meter) startRawChild(ctx context.Context, name, bin string, args []string) (*rawChild, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	tail := &tailBuffer{}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &rawChild{rawClient: newRawClient(stdout, stdin), cmd: cmd, stderr: tail, exited: make(chan error, 1)}
	go func() { c.exited <- cmd.Wait() }()
	ictx, cancel := m.callCtx(ctx)
	defer cancel()
	if err := c.initialize(ictx); err != nil {
		err = c.wrap(err)
		c.close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// close ends the child: EOF on its stdin, then stopChild.
func (c *rawChild) close() {
	_ = c.w.(io.Closer).Close()
	stopChild(c.cmd, c.exited)
}

// wrap adds the end of the child's stderr to err (not nil).
func (c *rawChild) wrap(err error) error {
	return fmt.Errorf("%w (raw stdio child's stderr ends: %q)", err, c.stderr.String())
}

// tailBuffer keeps the last stderrTail bytes written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte // at most 2*stderrTail bytes between trims
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if n > stderrTail {
		p = p[n-stderrTail:]
	}
	t.b = append(t.b, p...)
	if k := len(t.b); k > stderrTail {
		t.b = t.b[:copy(t.b, t.b[k-stderrTail:])]
	}
	return n, nil
}

// String returns the bytes kept.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
