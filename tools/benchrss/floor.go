package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

// floorChildFlag makes benchrss a floor child: it serves the floor
// (benchmarks.NewFloorServer) over stdio against the RS URL it names.
const floorChildFlag = "floor-child"

// serveFloor serves the floor over stdin and stdout until stdin or ctx ends.
func serveFloor(ctx context.Context, rsURL string) error {
	direct, err := benchmarks.NewDirectClient(rsURL, benchmarks.ClientToken, benchmarks.NewHTTPClient())
	if err != nil {
		return err
	}
	return server.NewStdioServer(benchmarks.NewFloorServer(direct)).Listen(ctx, os.Stdin, os.Stdout)
}

// startFloors starts the floor children through their handshakes: the floor
// driven by the mcp-go stdio client (as the adapter) and, with -stdio-raw,
// the floor and the bare floor by the bare client (as the raw child).
func (m *meter) startFloors(ctx context.Context, lat latencies) ([]stdioPath, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("floor: %w", err)
	}
	args := []string{"-" + floorChildFlag, m.rsURL}
	mc, err := client.NewStdioMCPClientWithOptions(self, nil, args)
	if err != nil {
		return nil, nil, fmt.Errorf("floor child: %w", err)
	}
	closeAll := func() { _ = mc.Close() }
	ictx, cancel := m.callCtx(ctx)
	defer cancel()
	if _, err := initialize(ictx, mc); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("floor child: initialize: %w", err)
	}
	paths := []stdioPath{{lat.floor, func(_ int, call benchmarks.Call) func(context.Context) error {
		return viaMCP(mc, "floor: ", benchmarks.Call{Name: call.Name, Tool: benchmarks.FloorTool(call)})
	}}}
	if !m.opt.stdioRaw {
		return paths, closeAll, nil
	}
	// The floor is sent the call's own arguments (its tool ignores them),
	// so both servers decode the same request.
	params := toolParams(m.work, benchmarks.FloorTool)
	for _, f := range []struct {
		name string
		args []string
		into map[string][]time.Duration
	}{{"raw floor", args, lat.rawFloor}, {"bare floor", []string{"-" + bareFloorChildFlag, m.rsURL}, lat.bareFloor}} {
		c, err := m.startRawChild(ctx, f.name+" child", self, f.args)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		prev := closeAll
		closeAll = func() { prev(); c.close() }
		paths = append(paths, stdioPath{f.into, func(i int, call benchmarks.Call) func(context.Context) error {
			return viaRaw(c, f.name, call, params[i%len(m.work)])
		}})
	}
	return paths, closeAll, nil
}

// bareFloorChildFlag makes benchrss a bare floor child (no MCP library).
const bareFloorChildFlag = "bare-floor-child"

// bareLineLimit bounds one request line the bare floor reads (the bare
// client's requests are a few hundred bytes).
const bareLineLimit = 64 << 10

// serveBareFloor answers newline-delimited JSON-RPC on in/out, one request
// at a time, with no MCP library or JSON encoder: a request line (at most
// bareLineLimit bytes) is decoded for id, method and tool name only;
// initialize gets a fixed result, notifications nothing, tools/call of a
// floor tool the call's direct RS request (as the floor) with bytes
// concatenated around the RS body: the least a stdio server can do, so
// floor/direct here is the stdio hop and the client's own reading.
func serveBareFloor(ctx context.Context, rsURL string, in io.Reader, out io.Writer) error {
	direct, err := benchmarks.NewDirectClient(rsURL, benchmarks.ClientToken, benchmarks.NewHTTPClient())
	if err != nil {
		return err
	}
	calls := map[string]benchmarks.Call{}
	for _, c := range benchmarks.Workload() {
		calls[benchmarks.FloorTool(c)] = c
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), bareLineLimit)
	w := bufio.NewWriterSize(out, 64<<10)
	var reply []byte
	for sc.Scan() { // one pass per request line, until EOF
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("bare floor: request line: %w", err)
		}
		if len(req.ID) == 0 {
			continue // a notification
		}
		reply = append(reply[:0], `{"jsonrpc":"2.0","id":`...)
		reply = append(reply, req.ID...)
		switch req.Method {
		case "initialize":
			reply = append(reply, `,"result":{"protocolVersion":"`+rawProtocol+`","capabilities":{"tools":{}},"serverInfo":{"name":"pdpp-bare-floor","version":"0"}}}`...)
		case "tools/call":
			c, ok := calls[req.Params.Name]
			if !ok {
				return fmt.Errorf("bare floor: no tool %q", req.Params.Name)
			}
			_, body, err := c.Direct(ctx, direct)
			if err != nil {
				return fmt.Errorf("bare floor: %s: %w", c.Name, err)
			}
			// A newline can only stand between tokens; one would break the
			// reply line, so the body must have none but its trailing one.
			body = bytes.TrimSpace(body)
			if bytes.IndexByte(body, '\n') >= 0 {
				return fmt.Errorf("bare floor: %s: the RS body is not on one line", c.Name)
			}
			reply = append(reply, `,"result":{"content":[{"type":"text","text":"RS body, `...)
			reply = strconv.AppendInt(reply, int64(len(body)), 10)
			reply = append(reply, ` bytes, in structuredContent.data"}],"structuredContent":{"data":`...)
			reply = append(reply, body...)
			reply = append(reply, `}}}`...)
		default:
			return fmt.Errorf("bare floor: method %q", req.Method)
		}
		reply = append(reply, '\n')
		if _, err := w.Write(reply); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}
