package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/benchmarks"
)

// floorChildFlag makes benchrss serve the floor (benchmarks.NewFloorServer)
// over stdio against the RS URL it names, instead of measuring: the floor
// children are benchrss itself, run again with this flag.
const floorChildFlag = "floor-child"

// serveFloor serves the floor over this process's stdin and stdout until
// stdin ends or ctx is cancelled.
func serveFloor(ctx context.Context, rsURL string) error {
	direct, err := benchmarks.NewDirectClient(rsURL, benchmarks.ClientToken, benchmarks.NewHTTPClient())
	if err != nil {
		return err
	}
	return server.NewStdioServer(benchmarks.NewFloorServer(direct)).Listen(ctx, os.Stdin, os.Stdout)
}

// floorChildren are the stdio floors the calls are set against: one driven
// by the mcp-go stdio client (as the adapter's first child is), and with
// -stdio-raw one driven by the bare client (as the raw child is).
type floorChildren struct {
	mcp    *client.Client
	raw    *rawChild
	params [][]byte // encoded tools/call params of each workload call's floor tool
}

// startFloors starts the floor children: this executable with
// -floor-child.
func (m *meter) startFloors(ctx context.Context) (*floorChildren, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	args := []string{"-" + floorChildFlag, m.rsURL}
	f := &floorChildren{params: make([][]byte, len(m.work))}
	for i, call := range m.work {
		if f.params[i], err = json.Marshal(map[string]any{"name": benchmarks.FloorTool(call), "arguments": map[string]any{}}); err != nil {
			return nil, err
		}
	}
	if f.mcp, err = client.NewStdioMCPClientWithOptions(self, nil, args); err != nil {
		return nil, fmt.Errorf("floor child: %w", err)
	}
	ictx, cancel := m.callCtx(ctx)
	defer cancel()
	if _, err := initialize(ictx, f.mcp); err != nil {
		f.close()
		return nil, fmt.Errorf("floor child: initialize: %w", err)
	}
	if m.opt.stdioRaw {
		if f.raw, err = startRawChild(ctx, self, nil, args); err != nil {
			f.close()
			return nil, fmt.Errorf("raw floor child: %w", err)
		}
		if err := f.raw.initialize(ictx); err != nil {
			err = f.raw.wrap(err)
			f.close()
			return nil, fmt.Errorf("raw floor child: %w", err)
		}
	}
	return f, nil
}

func (f *floorChildren) close() {
	if f.mcp != nil {
		_ = f.mcp.Close()
	}
	if f.raw != nil {
		f.raw.close()
	}
}

// steps returns the floor steps of workload call i: the mcp-go floor call
// into into.floor and, with a raw floor, the bare one into into.rawFloor.
func (f *floorChildren) steps(ctx context.Context, m *meter, i int, into latencies) []func() error {
	call := m.work[i%len(m.work)]
	floorCall := benchmarks.Call{Name: call.Name, Tool: benchmarks.FloorTool(call)}
	steps := []func() error{func() error {
		d, err := m.callAdapter(ctx, f.mcp, floorCall)
		into.floor[call.Name] = append(into.floor[call.Name], d)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		return nil
	}}
	if f.raw != nil {
		steps = append(steps, func() error {
			cctx, cancel := m.callCtx(ctx)
			defer cancel()
			start := time.Now()
			if err := f.raw.callTool(cctx, f.params[i%len(m.work)]); err != nil {
				return fmt.Errorf("%s raw floor: %w", call.Name, f.raw.wrap(err))
			}
			into.rawFloor[call.Name] = append(into.rawFloor[call.Name], time.Since(start))
			return nil
		})
	}
	return steps
}
