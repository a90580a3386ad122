package papers

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
)

// benchQueries rotate through the benchmark: single words, phrases, OR.
var benchQueries = []string{
	"attention", "diffusion sampling", "graph OR kernel", "robotics control",
	"contrastive representation", "bayesian inference", "sparse attention decoder", "federated privacy",
}

var (
	bigOnce sync.Once
	bigSnap *snapshot.Snapshot
	bigErr  error
)

// bigSnapshot builds the 10,000-paper snapshot once; only benchmarks call
// it, so plain go test never pays for it.
func bigSnapshot(b *testing.B) *snapshot.Snapshot {
	bigOnce.Do(func() {
		start := time.Now()
		bigSnap, bigErr = snapshot.Build(filepath.Join(testRoot, "big"), snapshot.Generated(10000, 42), snapshot.Options{})
		b.Logf("built a 10,000-paper snapshot in %s", time.Since(start).Round(time.Millisecond))
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigSnap
}

// serverOver builds the MCP server over a snapshot with local assets.
func serverOver(tb testing.TB, snap *snapshot.Snapshot) *server.MCPServer {
	tb.Helper()
	st, err := store.Open(snap.DBPath)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	loader, err := assets.New(assets.Config{Dir: snap.AssetsDir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { loader.Close() })
	h, err := New(Config{Store: st, Assets: loader})
	if err != nil {
		tb.Fatal(err)
	}
	return NewServer(h, ServerOptions{})
}

// bareSearch runs store.SearchSQL directly, scanning every row: the SQL
// cost without MCP, argument checks, snippet shaping or JSON.
func bareSearch(ctx context.Context, db *sql.DB, expr string) (int, error) {
	rows, err := db.QueryContext(ctx, store.SearchSQL, expr, 10, 0, "\uE000", "\uE001")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, title, year, venue, snip string
		var score float64
		if err := rows.Scan(&id, &title, &year, &venue, &snip, &score); err != nil {
			return 0, err
		}
		n++
	}
	return n, rows.Err()
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSearchPapers times search_papers (limit 10) through an MCP
// client on a 10,000-paper snapshot; ns/op is the MCP call. After each
// call, with the timer stopped, it times the bare search statement with
// the same query, and reports the p50 of both and their ratio.
func BenchmarkSearchPapers(b *testing.B) {
	snap := bigSnapshot(b)
	srv := serverOver(b, snap)
	dsn, err := store.DSN(snap.DBPath, false)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	exprs := make([]string, len(benchQueries))
	for i, q := range benchQueries {
		exprs[i] = store.RewriteQuery(q)
	}
	for _, kind := range []string{"inprocess", "http"} {
		b.Run(kind, func(b *testing.B) {
			h := (&env{srv: srv}).connect(b, kind)
			ctx := context.Background()
			var mcpTimes, sqlTimes []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q := benchQueries[i%len(benchQueries)]
				t0 := time.Now()
				res, err := h.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "search_papers", Arguments: map[string]any{"query": q}}})
				mcpTimes = append(mcpTimes, time.Since(t0))
				if err != nil || res.IsError {
					b.Fatalf("search %q: %v %+v", q, err, res)
				}
				b.StopTimer()
				t1 := time.Now()
				if _, err := bareSearch(ctx, db, exprs[i%len(exprs)]); err != nil {
					b.Fatal(err)
				}
				sqlTimes = append(sqlTimes, time.Since(t1))
				b.StartTimer()
			}
			b.StopTimer()
			m, s := p50(mcpTimes), p50(sqlTimes)
			b.ReportMetric(float64(m.Microseconds()), "p50-µs")
			b.ReportMetric(float64(s.Microseconds()), "sql-p50-µs")
			b.ReportMetric(float64(m)/float64(s), "ratio")
		})
	}
}

// TestSearchSmoke is the cheap stand-in for the benchmark in plain go
// test: a small generated snapshot, the same queries through MCP, and the
// same hits as the bare statement.
func TestSearchSmoke(t *testing.T) {
	snap, err := snapshot.Build(t.TempDir(), snapshot.Generated(40, 42), snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: serverOver(t, snap), snap: snap}
	h := e.connect(t, "inprocess")
	dsn, _ := store.DSN(snap.DBPath, false)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range benchQueries {
		t.Run(q, func(t *testing.T) {
			r := h.call("search_papers", map[string]any{"query": q})
			if r.IsError {
				t.Fatalf("error: %s", r.Text)
			}
			n, err := bareSearch(context.Background(), db, store.RewriteQuery(q))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(r.Structured["results"].([]any)); got != n {
				t.Fatalf("MCP returned %d hits, the bare statement %d", got, n)
			}
		})
	}
}
