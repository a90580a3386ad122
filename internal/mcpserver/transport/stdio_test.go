package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// TestServeStdioAnswersBeforeEOF sends requests and closes stdin at once, as
// a pipe or a script does: every request, the slow one included, must still be
// answered (mcp-go alone cancels calls in flight at EOF).
func TestServeStdioAnswersBeforeEOF(t *testing.T) {
	in := strings.Join([]string{
		rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		rpc(2, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}}),
		rpc("three", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}),
		`[` + rpc(4, "tools/list", nil) + `]`,
	}, "\n") + "\n"
	var out testkit.Buffer
	start := time.Now()
	if err := ServeStdio(context.Background(), newTestServer(testTools{slowFor: 300 * time.Millisecond}), strings.NewReader(in), &out, discardLogger()); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("draining took too long")
	}
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && len(m.Result) > 0 {
			answered[string(m.ID)] = !strings.Contains(string(m.Result), "cancelled")
		}
	}
	for _, id := range []string{`1`, `2`, `"three"`} {
		if !answered[id] {
			t.Errorf("request %s was not answered (or was cancelled); output:\n%s", id, out.String())
		}
	}
}

// TestDrainEndsWithContext: a cancelled context ends ServeStdio at once,
// even while stdin blocks and a call is in flight (the call's context is
// cancelled and it is waited for).
func TestDrainEndsWithContext(t *testing.T) {
	in, feed := io.Pipe()
	defer feed.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out testkit.Buffer
	go func() {
		done <- ServeStdio(ctx, newTestServer(testTools{slowFor: time.Minute}), in, &out, discardLogger())
	}()
	go func() {
		_, _ = io.WriteString(feed, rpc(2, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}})+"\n")
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled context must end ServeStdio and its calls")
	}
}

// TestStdinLinesAreBounded feeds the line reader lines around its limit in
// reads of every size and checks a long line is reported cut, its bytes
// dropped, and the lines after it returned whole.
func TestStdinLinesAreBounded(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // a cut line as "CUT"
	}{
		{"short lines pass", "abc\nde\n", []string{"abc", "de"}},
		{"a line at the limit passes", "12345678\nx\n", []string{"12345678", "x"}},
		{"a long line is cut", "123456789abc\nx\n", []string{"CUT", "x"}},
		{"two long lines", "123456789\n123456789012\nok\n", []string{"CUT", "CUT", "ok"}},
		{"a cut last line without newline", "123456789abcdef", []string{"CUT"}},
		{"a last line without newline", "abc", []string{"abc"}},
		{"empty lines", "\n\n", []string{"", ""}},
	}
	for _, tc := range cases {
		for _, chunk := range []int{1, 3, 8, 9, 64} {
			t.Run(fmt.Sprintf("%s/reads of %d", tc.name, chunk), func(t *testing.T) {
				src := &chunkReader{data: []byte(tc.in), chunk: chunk}
				// bufio's smallest buffer (16 bytes) is over the limit, so
				// lines are also gathered across fills.
				l := lineReader{r: bufio.NewReaderSize(src, 16), max: 8}
				var got []string
				for {
					line, cut, err := l.next()
					switch {
					case cut:
						got = append(got, "CUT")
					case err == nil || len(line) > 0:
						got = append(got, string(line))
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			})
		}
	}
}

// TestCallPoolReusesAndBounds: sequential requests run on one goroutine,
// concurrent ones on at most the pool's bound (run waits for a free slot),
// and a shut pool takes no more.
func TestCallPoolReusesAndBounds(t *testing.T) {
	t.Run("sequential requests reuse one goroutine", func(t *testing.T) {
		p := newCallPool(4)
		ids := map[uint64]bool{}
		for range 20 {
			done := make(chan uint64)
			if !p.run(context.Background(), func() { done <- goroutineID() }) {
				t.Fatal("run refused")
			}
			ids[<-done] = true
			// Let the worker list itself idle before the next request.
			waitIdle(t, p, 1)
		}
		p.shut(context.Background(), time.Second, func() {})
		if len(ids) != 1 {
			t.Fatalf("20 sequential requests ran on %d goroutines, want 1", len(ids))
		}
	})
	t.Run("at most max at once", func(t *testing.T) {
		const max = 3
		p := newCallPool(max)
		var running, peak atomic.Int64
		release := make(chan struct{})
		started := make(chan struct{}, 10)
		go func() {
			for range 10 {
				p.run(context.Background(), func() {
					n := running.Add(1)
					for {
						old := peak.Load()
						if n <= old || peak.CompareAndSwap(old, n) {
							break
						}
					}
					started <- struct{}{}
					<-release
					running.Add(-1)
				})
			}
		}()
		for range max {
			<-started
		}
		select {
		case <-started:
			t.Fatal("a request started while max were running")
		case <-time.After(50 * time.Millisecond):
		}
		close(release)
		for range 10 - max {
			<-started
		}
		p.shut(context.Background(), 5*time.Second, func() {})
		if peak.Load() != max {
			t.Fatalf("peak %d requests at once, want %d", peak.Load(), max)
		}
	})
	t.Run("a shut pool refuses", func(t *testing.T) {
		p := newCallPool(2)
		p.shut(context.Background(), time.Second, func() {})
		if p.run(context.Background(), func() {}) {
			t.Fatal("run on a shut pool")
		}
	})
}

// run starts f as one request on a goroutine of the pool (acquire, then
// spawn), so the tests can drive the pool's bound and reuse directly. It
// waits for a free slot; false when ctx ended first or the pool is shut.
func (p *callPool) run(ctx context.Context, f func()) bool {
	if !p.acquire(ctx) {
		return false
	}
	if !p.spawn(func() bool { f(); return true }) {
		p.calls.Done()
		<-p.slots
		return false
	}
	return true
}

// waitIdle waits until n goroutines of p are idle.
func waitIdle(t *testing.T, p *callPool, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		p.mu.Lock()
		idle := len(p.idle)
		p.mu.Unlock()
		if idle == n && len(p.slots) == 0 {
			return
		}
	}
	t.Fatalf("the pool never had %d idle goroutines", n)
}

// goroutineID returns the running goroutine's id, read from its stack header.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// chunkReader hands out data at most chunk bytes a read.
type chunkReader struct {
	data  []byte
	chunk int
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), c.chunk)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// TestServeStdioSurvivesAnOverlongLine sends a line over the stdin limit and
// then a ping: the long line is answered with a parse error and the ping is
// still answered, so one bad line costs at most the limit in memory.
func TestServeStdioSurvivesAnOverlongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("a", maxStdioLine) + `"}}}`
	in := rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}) +
		"\n" + long + "\n" + rpc(2, "ping", nil) + "\n"
	var out testkit.Buffer
	if err := ServeStdio(context.Background(), newTestServer(testTools{}), strings.NewReader(in), &out, discardLogger()); err != nil {
		t.Fatal(err)
	}
	var parseErrors, pinged int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage     `json:"id"`
			Result json.RawMessage     `json:"result"`
			Error  *struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line is not JSON: %.200s", line)
		}
		switch {
		case m.Error != nil && m.Error.Code == -32700:
			parseErrors++
		case string(m.ID) == "2" && len(m.Result) > 0:
			pinged++
		case string(m.ID) == "7":
			t.Fatalf("the overlong call was served: %.200s", line)
		}
	}
	if parseErrors != 1 || pinged != 1 {
		t.Fatalf("parse errors %d, ping answers %d; output:\n%.2000s", parseErrors, pinged, out.String())
	}
}

// TestEncodeMessageMatchesMarshal: the tool-call answers EncodeMessage puts
// together, and every other message it leaves to encoding/json, are the
// bytes json.Marshal writes.
func TestEncodeMessageMatchesMarshal(t *testing.T) {
	text := "a <b> & \"c\" \u2028 \u2029 é \x01 \t\n end"
	meta := mcp.NewMetaFromMap(map[string]any{"pdpp/x": "<y>", "z": 1})
	msgs := map[string]mcp.JSONRPCMessage{
		"text result":       mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(7)), &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}),
		"raw structured":    mcp.NewJSONRPCResultResponse(mcp.NewRequestId("s\"1"), &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("t")}, RawStructuredContent: json.RawMessage(`{"a":"<&>","b":[1, 2],"c":"\u2028"}`)}),
		"structured value":  mcp.NewJSONRPCResultResponse(mcp.NewRequestId(1.5), &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"k": text}, Result: mcp.Result{Meta: meta}}),
		"error result":      mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(2)), &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("bad")}, IsError: true, Result: mcp.Result{ResultType: "complete"}}),
		"result by value":   mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(3)), mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}),
		"nil result":        mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(4)), (*mcp.CallToolResult)(nil)),
		"other result":      mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(5)), mcp.EmptyResult{}),
		"error":             parseError,
		"notification":      mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: "notifications/x"}},
		"image and content": mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(6)), &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text), mcp.NewImageContent("aGk=", "image/png")}}),
	}
	for name, msg := range msgs {
		t.Run(name, func(t *testing.T) {
			want, werr := json.Marshal(msg)
			got, err := EncodeMessage(msg)
			if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("EncodeMessage:\n%s (%v)\njson.Marshal:\n%s (%v)", got, err, want, werr)
			}
		})
	}
}

// TestServeStdioBoundsCallsInFlight sends three times maxStdioCalls slow
// calls at once: at most maxStdioCalls run at a time (the reader waits for
// a free one), and every call is answered once they are let go.
func TestServeStdioBoundsCallsInFlight(t *testing.T) {
	const calls = 3 * maxStdioCalls
	started := make(chan struct{}, calls)
	release := make(chan struct{})
	in, feed := io.Pipe()
	out := &testkit.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(context.Background(), newTestServer(testTools{slowStarted: started, slowRelease: release}), in, out, discardLogger())
	}()
	go func() {
		var b strings.Builder
		for i := range calls {
			b.WriteString(rpc(i+1, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}}) + "\n")
		}
		_, _ = io.WriteString(feed, b.String())
		_ = feed.Close()
	}()
	for range maxStdioCalls {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the first calls did not start")
		}
	}
	select {
	case <-started:
		t.Fatalf("more than %d calls ran at once", maxStdioCalls)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the calls were not all answered")
	}
	if n := strings.Count(out.String(), `"slow done"`); n != calls {
		t.Fatalf("%d of %d calls answered", n, calls)
	}
}

// readerIDs records, for each read that returns bytes, the goroutine that
// made it.
type readerIDs struct {
	r   io.Reader
	ids chan uint64
}

func (r *readerIDs) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if n > 0 {
		r.ids <- goroutineID()
	}
	return n, err
}

// TestServeStdioServesOnTheReader: a request is served by the goroutine that
// read its line (the reading having passed to another), not handed to one
// that must first be woken. A client that waits for each answer has each
// line arrive in a read of its own, so the two ids can be matched call by
// call.
func TestServeStdioServesOnTheReader(t *testing.T) {
	s := newTestServer(testTools{})
	s.AddTool(mcp.Tool{Name: "gid", Description: "The serving goroutine.", InputSchema: mcp.ToolInputSchema{Type: "object"}},
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strconv.FormatUint(goroutineID(), 10)), nil
		})
	in, feed := io.Pipe()
	outR, out := io.Pipe()
	reads := &readerIDs{r: in, ids: make(chan uint64, 64)}
	done := make(chan error, 1)
	go func() { done <- ServeStdio(context.Background(), s, reads, out, discardLogger()) }()
	replies := bufio.NewScanner(outR)
	served := map[uint64]bool{}
	for i := range 20 {
		if _, err := io.WriteString(feed, rpc(i+1, "tools/call", map[string]any{"name": "gid"})+"\n"); err != nil {
			t.Fatal(err)
		}
		if !replies.Scan() {
			t.Fatalf("no answer to call %d", i+1)
		}
		var reply struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(replies.Bytes(), &reply); err != nil || len(reply.Result.Content) != 1 {
			t.Fatalf("answer %d: %s", i+1, replies.Bytes())
		}
		reader := <-reads.ids
		if got := reply.Result.Content[0].Text; got != strconv.FormatUint(reader, 10) {
			t.Fatalf("call %d read on goroutine %d, served on %s", i+1, reader, got)
		}
		served[reader] = true
	}
	_ = feed.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The reading passes between goroutines that are kept: two, or a third
	// when the next line arrives before the goroutine that answered the
	// last one is listed idle; never one per call.
	if len(served) > 4 {
		t.Errorf("20 sequential calls were served on %d goroutines, want a few kept ones", len(served))
	}
}
