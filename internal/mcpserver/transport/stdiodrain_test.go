package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

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

func TestPendingCallsTracking(t *testing.T) {
	cases := []struct {
		name     string
		in, out  []string
		wantOpen int
	}{
		{"request answered", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}, 0},
		{"notification owes nothing", []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`}, nil, 0},
		{"unanswered", []string{`{"jsonrpc":"2.0","id":"a","method":"ping"}`}, nil, 1},
		{"server request is not an answer", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}, []string{`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}`}, 1},
		{"batch not tracked (stdio answers it with a null-id parse error)", []string{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`}, nil, 0},
		{"null id owes nothing", []string{`{"jsonrpc":"2.0","id":null,"method":"ping"}`}, nil, 0},
		{"garbage ignored", []string{`{not json`, ``}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPendingCalls()
			for _, l := range tc.in {
				p.sawInput([]byte(l))
			}
			for _, l := range tc.out {
				p.sawOutput([]byte(l))
			}
			if len(p.pending) != tc.wantOpen {
				t.Fatalf("open %d, want %d", len(p.pending), tc.wantOpen)
			}
		})
	}
}

func TestDrainEndsWithContext(t *testing.T) {
	p := newPendingCalls()
	p.sawInput([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.waitIdle(ctx, time.Minute); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled context must end the drain")
	}
}

// TestAnsweredID: the prefix check recognises mcp-go's responses to pending
// ids and leaves everything else to the full decode.
func TestAnsweredID(t *testing.T) {
	pending := map[string]bool{"1": true, `"three"`: true}
	tests := []struct {
		name, line, want string
		ok               bool
	}{
		{"result", `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, "1", true},
		{"error", `{"jsonrpc":"2.0","id":"three","error":{"code":-32601,"message":"x"}}`, `"three"`, true},
		{"id only a prefix of a pending one", `{"jsonrpc":"2.0","id":12,"result":{}}`, "", false},
		{"not pending", `{"jsonrpc":"2.0","id":7,"result":{}}`, "", false},
		{"a request from the server", `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}`, "", false},
		{"other member order", `{"id":1,"jsonrpc":"2.0","result":{}}`, "", false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message"}`, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := answeredID([]byte(tc.line), pending)
			if got != tc.want || ok != tc.ok {
				t.Errorf("answeredID(%s) = %q, %t; want %q, %t", tc.line, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestStdinLinesAreBounded feeds the reader lines around its limit in reads
// of every size and checks a long line is cut at the limit and ended there,
// its rest dropped, and the lines after it passed on whole.
func TestStdinLinesAreBounded(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"short lines pass", "abc\nde\n", "abc\nde\n"},
		{"a line at the limit passes", "12345678\nx\n", "12345678\nx\n"},
		{"a long line is cut and ended", "123456789abc\nx\n", "12345678\nx\n"},
		{"two long lines", "123456789\n123456789012\nok\n", "12345678\n12345678\nok\n"},
		{"a cut last line without newline", "123456789abcdef", "12345678\n"},
		{"empty lines", "\n\n", "\n\n"},
	}
	for _, tc := range cases {
		for _, chunk := range []int{1, 3, 8, 9, 64} {
			t.Run(fmt.Sprintf("%s/reads of %d", tc.name, chunk), func(t *testing.T) {
				src := &chunkReader{data: []byte(tc.in), chunk: chunk}
				r := newDrainingReader(context.Background(), src, newPendingCalls())
				r.maxLine = 8
				got, err := io.ReadAll(bufio.NewReaderSize(r, 16))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tc.want {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			})
		}
	}
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
