package papers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// sourceEnv is a paper server over the fixture snapshot whose only asset is
// the source markdown of the ViT paper, with the given text, read from a
// local folder or over HTTP (chunked: an answer without Content-Length).
func sourceEnv(t testing.TB, text []byte, remote bool, lim *inflight.Limiter, extra ...map[string][]byte) *env {
	t.Helper()
	snap := fixture(t, false)
	st, err := store.Open(snap.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.Paper(t.Context(), id(snapshot.KeyViT))
	if err != nil || p.SourceHash == "" {
		t.Fatalf("fixture paper without source: %v", err)
	}
	dir := t.TempDir()
	rel := assets.SourcePath(p.SourceHash)
	files := map[string][]byte{rel: text}
	for _, m := range extra {
		maps.Copy(files, m)
	}
	for rel, b := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := assets.Config{Dir: dir}
	if remote {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(r.URL.Path, "/static/")))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			for len(b) > 0 { // flushed pieces: the answer is chunked
				n := min(len(b), 64<<10)
				_, _ = w.Write(b[:n])
				w.(http.Flusher).Flush()
				b = b[n:]
			}
		}))
		t.Cleanup(hs.Close)
		cfg = assets.Config{BaseURL: hs.URL + "/static/"}
	}
	loader, err := assets.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loader.Close() })
	e := &env{snap: snap, logs: &testkit.Buffer{}}
	h, err := New(Config{Store: st, Assets: loader, Logger: slog.New(slog.NewTextHandler(e.logs, nil)), InFlight: lim})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = NewServer(h, ServerOptions{Version: "test"})
	return e
}

// TestSourceReadBounded: get_paper_source, which reads only what max_chars
// can show and counts the rest as it streams past, answers exactly what
// cutting the whole text would: the same text, marker, total_chars,
// returned_chars and truncated, whatever the characters' widths, invalid
// bytes, and where the cut falls, from a local file and a chunked HTTP
// answer.
func TestSourceReadBounded(t *testing.T) {
	// Texts of 70-100 KB, each longer than the first read of a
	// mid-sized max_chars (max_chars x 4 + 64 bytes), so the rest is
	// counted as it streams past; maxes around and at their lengths.
	mixed := strings.Repeat("aé中😀", 10000) // 1-, 2-, 3- and 4-byte characters
	texts := []struct {
		name string
		text string
	}{
		{"ascii", strings.Repeat("abcdefghij", 7500)},
		{"mixed widths", mixed},
		{"4-byte only", strings.Repeat("😀", 17500)},
		{"invalid bytes", strings.Repeat("ab\xff\xe4\xb8", 15000) + "\xf0\x9f"},
		{"short", "hello, 世界"},
	}
	maxes := []int{1, 7, 12500, 17499, 17500, 40000, 250000}
	for _, remote := range []bool{false, true} {
		for _, tx := range texts {
			t.Run(fmt.Sprintf("remote=%v/%s", remote, tx.name), func(t *testing.T) {
				e := sourceEnv(t, []byte(tx.text), remote, nil)
				h := e.connect(t, "inprocess")
				for _, max := range maxes {
					want := truncate(tx.text, max, "Call get_paper_source again with a larger max_chars to read more.")
					r := h.call("get_paper_source", map[string]any{"paper_id": id(snapshot.KeyViT), "max_chars": max})
					if r.IsError {
						t.Fatalf("max_chars %d: %s", max, r.Text)
					}
					// Invalid bytes cross the wire as JSON encodes them.
					if wire(r.Text) != wire(want.Text) {
						t.Fatalf("max_chars %d: text differs (got %d bytes, want %d)", max, len(r.Text), len(want.Text))
					}
					if num(r.Structured["total_chars"]) != want.Total || num(r.Structured["returned_chars"]) != want.Returned ||
						r.Structured["truncated"] != want.Truncated {
						t.Fatalf("max_chars %d: %v, want total %d returned %d truncated %v", max, r.Structured, want.Total, want.Returned, want.Truncated)
					}
				}
			})
		}
	}
}

// TestConcurrentLargeSource: 16 concurrent get_paper_source calls over
// HTTP on an 8 MiB source hold a small multiple of what they show, not of
// the asset, and the process-wide limit bounds calls that show a lot; every
// answer is right. Reading the whole asset per call, as the server did,
// grows the heap by more than 16 x 8 MiB x 2 here.
func TestConcurrentLargeSource(t *testing.T) {
	const size = 8 << 20
	text := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	tests := []struct {
		name     string
		maxChars int
		limit    int64 // limiter of bytes in flight
		maxGrow  uint64
	}{
		{"default max_chars", DefaultMaxChars, DefaultMaxInFlightBytes, 48 << 20},
		{"max_chars 1,000,000 under an 8 MiB limit", 1000000, MinMaxInFlightBytes, 96 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim := inflight.New(tc.limit)
			var peakHeld atomic.Int64
			lim.OnIdle(func(peak int64) { peakHeld.Store(max(peakHeld.Load(), peak)) })
			e := sourceEnv(t, text, false, lim)
			h := e.connect(t, "http")
			grow, results := measureHeap(func() []result {
				out := make([]result, 16)
				var wg sync.WaitGroup
				for i := range out {
					wg.Go(func() {
						out[i] = h.call("get_paper_source", map[string]any{"paper_id": id(snapshot.KeyViT), "max_chars": tc.maxChars})
					})
				}
				wg.Wait()
				return out
			})
			marker := fmt.Sprintf("[truncated: showing the first %d of %d characters; %d characters cut.", tc.maxChars, size, size-tc.maxChars)
			for i, r := range results {
				if r.IsError || num(r.Structured["total_chars"]) != size || num(r.Structured["returned_chars"]) != tc.maxChars ||
					r.Structured["truncated"] != true || !strings.Contains(r.Text, marker) || !strings.HasPrefix(r.Text, string(text[:tc.maxChars])) {
					t.Fatalf("call %d: %v %.200s", i, r.Structured, r.Text)
				}
			}
			t.Logf("heap growth %d MiB (limit %d MiB), limiter peak %d KiB", grow>>20, tc.maxGrow>>20, peakHeld.Load()>>10)
			if peakHeld.Load() > tc.limit || peakHeld.Load() == 0 {
				t.Fatalf("limiter peak %d, want within (0, %d]", peakHeld.Load(), tc.limit)
			}
			if grow > tc.maxGrow {
				t.Fatalf("heap grew %d MiB during 16 calls, want at most %d MiB", grow>>20, tc.maxGrow>>20)
			}
		})
	}
}

// TestBudgetWaitsAndRefuses: a call waits for room in the limiter and is
// answered once room frees up; a read larger than the whole limit is
// refused at once with server_busy, not retryable.
func TestBudgetWaitsAndRefuses(t *testing.T) {
	vit := id(snapshot.KeyViT)
	bigSummary := []byte(`{"s":"` + strings.Repeat("x", 5<<20) + `"}`) // 2 x 5 MiB > 8 MiB
	tests := []struct {
		name      string
		hold      bool // the limiter is full when the call starts, for 200 ms
		tool      string
		args      map[string]any
		wantCode  string // "" for a result
		retryable bool
	}{
		{"waits for room, then answers", true, "get_paper_source", map[string]any{"paper_id": vit, "max_chars": 100}, "", false},
		{"whole summary over the limit", false, "get_paper_summary", map[string]any{"paper_id": vit}, CodeServerBusy, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim := inflight.New(MinMaxInFlightBytes)
			e := sourceEnv(t, []byte(strings.Repeat("y", 1000)), false, lim, map[string][]byte{assets.PreferredSummaryPath(vit): bigSummary})
			h := e.connect(t, "inprocess")
			start := time.Now()
			if tc.hold {
				hold := lim.Open()
				if err := hold.Reserve(t.Context(), MinMaxInFlightBytes); err != nil {
					t.Fatal(err)
				}
				time.AfterFunc(200*time.Millisecond, hold.Close)
			}
			r := h.call(tc.tool, tc.args)
			took := time.Since(start)
			if tc.wantCode == "" {
				if r.IsError || num(r.Structured["total_chars"]) != 1000 {
					t.Fatalf("%v %s", r.Structured, r.Text)
				}
				if tc.hold && took < 200*time.Millisecond {
					t.Fatalf("answered after %v, before the limiter had room", took)
				}
				return
			}
			if code := errorCode(t, r); code != tc.wantCode || r.Structured["retryable"] != tc.retryable || took > time.Second {
				t.Fatalf("%s after %v: %v", code, took, r.Structured)
			}
			if lim.Held() != 0 {
				t.Fatalf("%d bytes still held after the call", lim.Held())
			}
		})
	}
}

// measureHeap runs f and returns the highest live heap seen above the heap
// before it (sampled every millisecond) and f's result.
func measureHeap[T any](f func() T) (uint64, T) {
	// The live heap is measured at the collector's default target,
	// whatever GOGC the test run was given.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var s runtime.MemStats
		for {
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > peak.Load() {
				peak.Store(s.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	out := f()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base, out
	}
	return 0, out
}

// wire is s as it reads after a JSON round trip (each invalid byte U+FFFD).
func wire(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// TestChunkedSummaryReadWhole: a summary served without Content-Length is
// read whole, reserved a piece at a time, and answered exactly.
func TestChunkedSummaryReadWhole(t *testing.T) {
	vit := id(snapshot.KeyViT)
	for _, n := range []int{10, wholeChunk - 20, wholeChunk, 3*wholeChunk + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			summary := `{"s":"` + strings.Repeat("z", n) + `"}`
			lim := inflight.New(MinMaxInFlightBytes)
			e := sourceEnv(t, []byte("x"), true, lim, map[string][]byte{assets.PreferredSummaryPath(vit): []byte(summary)})
			r := e.connect(t, "inprocess").call("get_paper_summary", map[string]any{"paper_id": vit, "max_chars": 1000000})
			if r.IsError || r.Text != summary || num(r.Structured["total_chars"]) != len(summary) {
				t.Fatalf("%d bytes answered, want %d: %v", len(r.Text), len(summary), r.Structured)
			}
			if lim.Held() != 0 {
				t.Fatalf("%d bytes still held", lim.Held())
			}
		})
	}
}
