package cli

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/tokencheck"
)

// TestHTTPMadeUpBearersLimited: a client sending a new made-up bearer with
// every request costs the RS at most its bucket of token checks (20, then 5
// a second), not one schema read per request; the requests past it are
// answered 503 with Retry-After without an RS read, and no data request
// reaches the RS.
func TestHTTPMadeUpBearersLimited(t *testing.T) {
	rs := newFaultRS(t)
	mcpURL := startHTTP(t, rs.url)
	rs.take()
	start := time.Now()
	statuses := map[int]int{}
	for i := range 200 {
		resp, _ := mcpPost(t, mcpURL, fmt.Sprintf("made-up-%d", i), "2025-06-18", listBody)
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
	}
	elapsed := time.Since(start)
	paths := rs.take()
	onlySchemaReads(t, paths)
	// Each check reads the compact schema view once (the demo RS has it).
	allowed := tokencheck.DefaultCheckBurst + int(elapsed.Seconds()*tokencheck.DefaultChecksPerSecond) + 1
	if len(paths) > allowed || statuses[http.StatusUnauthorized]+statuses[http.StatusServiceUnavailable] != 200 {
		t.Fatalf("200 made-up bearers in %v: %d RS reads (want at most %d), statuses %v", elapsed, len(paths), allowed, statuses)
	}
	if statuses[http.StatusUnauthorized] < tokencheck.DefaultCheckBurst {
		t.Fatalf("statuses %v: the burst was not answered 401", statuses)
	}
}
