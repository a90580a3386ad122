package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// TestMain lets the test binary stand in for benchrss as a floor child:
// startFloors runs os.Executable() with -floor-child, which here is this
// binary.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "-"+floorChildFlag {
		if err := serveFloor(context.Background(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == "-"+bareFloorChildFlag {
		if err := serveBareFloor(context.Background(), os.Args[2], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFloorChildren starts both floor children as a run does (this binary
// again, over stdio, against a demo RS) and makes every workload call through
// each: each call is timed into its own path.
func TestFloorChildren(t *testing.T) {
	rsURL := startDemoRS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &meter{opt: options{stdioRaw: true, callLimit: 30 * time.Second}, work: benchmarks.Workload(), rsURL: rsURL}
	lat := newLatencies()
	paths, closeFloors, err := m.startFloors(ctx, lat)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFloors()
	if len(paths) != 3 {
		t.Fatalf("%d floor paths, want 3 (mcp-go, raw and bare)", len(paths))
	}
	for i, call := range m.work {
		for _, p := range paths {
			if err := m.step(ctx, p.into, call.Name, p.via(i, call))(); err != nil {
				t.Fatalf("%s: %v", call.Name, err)
			}
		}
		if len(lat.floor[call.Name]) != 1 || len(lat.rawFloor[call.Name]) != 1 || len(lat.bareFloor[call.Name]) != 1 {
			t.Errorf("%s: %d floor, %d raw floor and %d bare floor times, want 1 each",
				call.Name, len(lat.floor[call.Name]), len(lat.rawFloor[call.Name]), len(lat.bareFloor[call.Name]))
		}
	}
}

// TestBareFloorReplies checks the bare floor's lines: a fixed initialize
// result, nothing for a notification, and for each floor tool a valid reply
// whose structuredContent.data is the RS body; an unknown tool ends it.
func TestBareFloorReplies(t *testing.T) {
	rsURL := startDemoRS(t)
	direct, err := benchmarks.NewDirectClient(rsURL, benchmarks.ClientToken, benchmarks.NewHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	work := benchmarks.Workload()
	for i, c := range work {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`+"\n", i+1, benchmarks.FloorTool(c))
	}
	var out bytes.Buffer
	if err := serveBareFloor(t.Context(), rsURL, strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(work)+1 {
		t.Fatalf("%d reply lines, want %d", len(lines), len(work)+1)
	}
	var init struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &init); err != nil || init.ID != 0 || init.Result.ProtocolVersion != rawProtocol {
		t.Fatalf("initialize reply %q (%v)", lines[0], err)
	}
	for i, c := range work {
		var r struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				StructuredContent struct {
					Data json.RawMessage `json:"data"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(lines[i+1]), &r); err != nil {
			t.Fatalf("%s: reply %.200q: %v", c.Name, lines[i+1], err)
		}
		_, body, err := c.Direct(t.Context(), direct)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != i+1 || len(r.Result.Content) != 1 || !bytes.Equal(r.Result.StructuredContent.Data, bytes.TrimSpace(body)) {
			t.Errorf("%s: reply id %d, %d content items, data %d bytes; want id %d, 1 item, the %d-byte RS body",
				c.Name, r.ID, len(r.Result.Content), len(r.Result.StructuredContent.Data), i+1, len(bytes.TrimSpace(body)))
		}
	}
	err = serveBareFloor(t.Context(), rsURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`+"\n"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), `no tool "search"`) {
		t.Errorf("unknown tool: %v", err)
	}
}

// startDemoRS serves a demo RS with the fixed client token on a loopback
// port until the test ends, and returns its URL.
func startDemoRS(t *testing.T) string {
	t.Helper()
	d, err := demors.New(demors.Config{Tokens: map[string]string{demors.GrantClient: benchmarks.ClientToken}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() { srv.Close(); _ = d.Close() })
	return srv.URL
}
