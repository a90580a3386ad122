package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/benchmarks"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
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
	os.Exit(m.Run())
}

// TestFloorChildren starts both floor children as a run does (this binary
// again, over stdio, against a demo RS) and makes every workload call through
// each: each call is timed into its own path.
func TestFloorChildren(t *testing.T) {
	d, err := demors.New(demors.Config{Tokens: map[string]string{demors.GrantClient: benchmarks.ClientToken}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	defer func() { srv.Close(); _ = d.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &meter{opt: options{stdioRaw: true, callLimit: 30 * time.Second}, work: benchmarks.Workload(), rsURL: srv.URL}
	f, err := m.startFloors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	lat := newLatencies()
	for i, call := range m.work {
		steps := f.steps(ctx, m, i, lat)
		if len(steps) != 2 {
			t.Fatalf("%d floor steps, want 2 (mcp-go and raw)", len(steps))
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("%s: %v", call.Name, err)
			}
		}
		if len(lat.floor[call.Name]) != 1 || len(lat.rawFloor[call.Name]) != 1 {
			t.Errorf("%s: %d floor and %d raw floor times, want 1 each", call.Name, len(lat.floor[call.Name]), len(lat.rawFloor[call.Name]))
		}
	}
}
