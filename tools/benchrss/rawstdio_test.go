package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// TestRawClientLines feeds the bare client canned server output for request
// id 1 and checks which replies it accepts.
func TestRawClientLines(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`
	long := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("x", 3*rawReadBuffer) + `"}]}}`
	tests := []struct {
		name    string
		out     string // what the server writes
		wantErr string // "" for success
	}{
		{"reply", ok + "\n", ""},
		{"CRLF line ending", ok + "\r\n", ""},
		{"notification and blank line first", `{"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n\n" + ok + "\n", ""},
		{"reply longer than the read buffer", long + "\n", ""},
		{"reply over the line cap", `{"id":1,"x":"` + strings.Repeat("x", rawReplyLimit) + `"}` + "\n", "longer than"},
		{"other id", strings.Replace(ok, `"id":1`, `"id":2`, 1) + "\n", "reply has id 2"},
		{"string id", strings.Replace(ok, `"id":1`, `"id":"1"`, 1) + "\n", `reply has id "1"`},
		{"tool error", strings.Replace(ok, `"isError":false`, `"isError":true`, 1) + "\n", "tool error"},
		{"JSON-RPC error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad params"}}` + "\n", "-32602: bad params"},
		{"no result", `{"jsonrpc":"2.0","id":1}` + "\n", "no result"},
		{"server request", `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" + ok + "\n", "does not answer"},
		{"not JSON", "hello\n", "not a JSON-RPC message"},
		{"no reply", "", "EOF"},
		{"reply cut off", ok[:40], "unexpected EOF"},
		{"only notifications", strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/progress"}`+"\n", rawSkipLimit+2), "no reply within"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sent bytes.Buffer
			c := newRawClient(strings.NewReader(tc.out), &sent)
			err := c.callTool(context.Background(), []byte(`{"name":"search","arguments":{"q":"a"}}`))
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("callTool = %v, want error containing %q", err, tc.wantErr)
			}
			want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"a"}}}` + "\n"
			if sent.String() != want {
				t.Errorf("request line = %q, want %q", sent.String(), want)
			}
		})
	}
}

// TestRawClientIDs checks that the handshake sends initialize and then
// notifications/initialized, and that each request takes the next id.
func TestRawClientIDs(t *testing.T) {
	reply := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n" }
	var sent bytes.Buffer
	c := newRawClient(strings.NewReader(reply("1")+reply("2")+reply("3")), &sent)
	ctx := context.Background()
	if err := c.initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.callTool(ctx, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(sent.String(), "\n"), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("request line %q: %v", line, err)
		}
		got = append(got, string(m.ID)+" "+m.Method)
	}
	want := []string{"1 initialize", " notifications/initialized", "2 tools/call", "3 tools/call"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests = %q, want %q", got, want)
	}
}

// TestRawClientDeadline checks that a server that never answers ends the
// call at the context's deadline.
func TestRawClientDeadline(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	c := newRawClient(pr, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.callTool(ctx, []byte(`{}`))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("callTool = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("callTool returned after %s", d)
	}
}

// TestRawClientAgainstServer drives the adapter's stdio server (over pipes,
// against the demo RS) with the bare client: every workload call succeeds,
// and a call the server refuses fails.
func TestRawClientAgainstServer(t *testing.T) {
	rsURL := startDemoRS(t)
	token := func(context.Context) (string, error) { return benchmarks.ClientToken, nil }
	rc, err := rs.New(rsURL, token, rs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mcpSrv := pdpp.NewServer(pdpp.New(pdpp.Config{RS: rc, Token: token}), pdpp.ServerOptions{})

	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- transport.ServeStdio(ctx, mcpSrv, inR, outW, slog.New(slog.DiscardHandler))
		_ = outW.Close()
	}()
	defer func() {
		_ = inW.Close()
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		_ = inR.Close()
		_ = outR.Close()
	}()

	c := newRawClient(outR, inW)
	if err := c.initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, call := range benchmarks.Workload() {
		params, err := json.Marshal(map[string]any{"name": call.Tool, "arguments": call.Args})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.callTool(ctx, params); err != nil {
			t.Errorf("%s: %v", call.Name, err)
		}
	}
	if err := c.callTool(ctx, []byte(`{"name":"fetch","arguments":{"id":"no-such-record"}}`)); err == nil {
		t.Error("fetch of a bad id: no error")
	}
}
