package cli

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

var testRoot string

func TestMain(m *testing.M) { testkit.RunInTempDir(m, "papercli-test-", &testRoot) }

var (
	fixtureOnce sync.Once
	fixtureSnap *snapshot.Snapshot
	fixtureErr  error
)

func fixture(t testing.TB) *snapshot.Snapshot {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureSnap, fixtureErr = snapshot.BuildFixture(filepath.Join(testRoot, "fixture"), false)
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureSnap
}

// startHTTP serves the fixture through the same code path as the http
// command (opened snapshot, flags, transport) on a free loopback port and
// returns the /mcp URL.
func startHTTP(t *testing.T, h httpFlags) string {
	t.Helper()
	url, _ := startHTTPMetrics(t, h)
	return url
}

// startHTTPMetrics is startHTTP that also returns the address the metrics
// listener bound (empty when h configures none).
func startHTTPMetrics(t *testing.T, h httpFlags) (url, metricsAddr string) {
	t.Helper()
	snap := fixture(t)
	s := snapshotFlags{snapshot: snap.DBPath, assetsDir: snap.AssetsDir, assetTimeout: 10 * time.Second, serverName: "paper-snapshot"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	o, err := s.open(log)
	if err != nil {
		t.Fatal(err)
	}
	h.Listen = "127.0.0.1:0"
	if h.MaxBodyBytes == 0 {
		h.MaxBodyBytes = 1 << 20
	}
	t.Cleanup(func() { o.Close() }) // after the server stops: cleanups run last first
	addr, maddr := testkit.Serve(t, context.Background(), func(ctx context.Context, onListen, onMetrics func(net.Addr)) error {
		return serveHTTP(ctx, log, o, &h, onListen, onMetrics)
	})
	if maddr != nil {
		metricsAddr = maddr.String()
	}
	return "http://" + addr.String() + "/mcp", metricsAddr
}

// do sends one raw HTTP request to url.
func do(t *testing.T, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	resp, b := testkit.Do(t, method, url, body, header)
	return resp, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

const toolsListBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`

// servingAddr finds the bound address in the http command's startup log
// line.
var servingAddr = regexp.MustCompile(`msg="serving MCP over HTTP" addr=(\S+)`)

// writeOneTableDB writes a SQLite database holding one unrelated table.
func writeOneTableDB(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE todo (id INTEGER PRIMARY KEY, item TEXT)"); err != nil {
		t.Fatal(err)
	}
}
