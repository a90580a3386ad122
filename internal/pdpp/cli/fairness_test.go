package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// loadClient keeps connections open for the load goroutines.
// loaders is how many connections loop full calls (a var so a baseline run can set it to 0).
var loaders = 24

var loadClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

// doErr is testkit.Do for goroutines: it returns the error instead of
// failing the test.
func doErr(ctx context.Context, method, url, body string, header map[string]string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := loadClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// fullTranscripts is a detail "full" page of the demo transcripts: about
// 1.1 MB, its RS body carried into the reply.
var fullTranscripts = map[string]any{"stream": "transcripts", "detail": "full", "limit": 50}

// smallSearch times one small search of the "narrow" token, a tenant of its
// own, and reports whether it was answered without error.
func smallSearch(t *testing.T, url string) (time.Duration, bool) {
	start := time.Now()
	resp, body, err := doErr(context.Background(), http.MethodPost, url, toolCall(1, "search", map[string]any{"q": "zephyrmarker", "limit": 3}),
		map[string]string{"Authorization": "Bearer " + fixedTokens["narrow"], "MCP-Protocol-Version": "2025-11-25"})
	ok := err == nil && resp.StatusCode == http.StatusOK && !strings.Contains(string(body), `"isError":true`)
	if !ok {
		t.Logf("small search: %v %v %.300s", err, resp, body)
	}
	return time.Since(start), ok
}

// TestBatchesOfFullCallsDoNotDeadlock: four 6-item batches of full calls
// on the demo transcripts (about 6.6 MB asked each, 26 MB in all against a
// 16 MiB budget) all finish, every item answered, and another token's
// small search meanwhile is answered. Before, each batch held its answered
// items' bytes while its next item waited, so all four stalled until their
// deadlines. What the test holds is progress, counted, not speed: the
// server's deadlines are set far out of reach, and a deadlock is a whole
// stallLimit in which no query_records call finishes while batches wait
// (one such call takes well under a second on an idle machine). How fast
// the other token is served beside such load is measured by
// TestOneTokenLoopingFullCallsLeavesOthersFast and make bench-fair, which
// runs the same at the default budget with 16-item batches (72 MB asked);
// here the batches are smaller, so the test costs a third as much under
// the race detector and still asks for more than the budget holds.
func TestBatchesOfFullCallsDoNotDeadlock(t *testing.T) {
	const perBatch = 6
	// stallLimit is how long no call may finish before the test calls it
	// a deadlock: far beyond one call on any machine that runs the suite
	// (the longest wait between two finished calls was 13 s, the whole run
	// 73 s, under the race detector at load 14).
	const stallLimit = 2 * time.Minute
	h := httpFlagsFor(demoRS(t))
	h.MetricsListen = "127.0.0.1:0"
	h.inFlightMax = 16 << 20
	// Out of the way: only the stall detector below decides.
	h.rsTimeout, h.RequestTimeout = 10*time.Minute, 15*time.Minute
	addr, metricsAddr := serveForTest(t, context.Background(), slog.New(slog.DiscardHandler), &h)
	url := "http://" + addr.String() + "/mcp"
	metricsURL := "http://" + metricsAddr.String() + "/metrics"
	items := make([]json.RawMessage, perBatch)
	for i := range items {
		items[i] = json.RawMessage(toolCall(i+1, "query_records", fullTranscripts))
	}
	batch, _ := json.Marshal(items)
	// A client without a deadline of its own: a batch ends when the
	// server answers it, or when the test ends (ctx).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

	var wg sync.WaitGroup
	codes := make(chan string, 4*perBatch)
	start := time.Now()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(batch)))
			if err != nil {
				codes <- err.Error()
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+fixedTokens["client"])
			req.Header.Set("MCP-Protocol-Version", "2025-03-26")
			resp, err := client.Do(req)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				codes <- fmt.Sprintf("batch failed: %v %v", err, resp)
				return
			}
			var answers []struct {
				Result *struct {
					IsError           bool            `json:"isError"`
					StructuredContent json.RawMessage `json:"structuredContent"`
				} `json:"result"`
				Error *struct {
					Data struct{ Reason string } `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &answers); err != nil || len(answers) != perBatch {
				codes <- fmt.Sprintf("batch reply: %v, %d answers: %s", err, len(answers), body[max(len(body)-700, 0):])
				return
			}
			for _, a := range answers {
				switch {
				case a.Error != nil:
					codes <- a.Error.Data.Reason
				case a.Result.IsError:
					var e struct{ Error struct{ Code string } }
					_ = json.Unmarshal(a.Result.StructuredContent, &e)
					codes <- e.Error.Code
				default:
					codes <- "ok"
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// Another token's small search, while the batches run: sent once a
	// first call has finished, so the batches' token is checked and its
	// first calls no longer wait for that check (counted, not timed).
	type searched struct {
		took time.Duration
		ok   bool
	}
	search := make(chan searched, 1)
	searching := false
	startSearch := func() {
		searching = true
		go func() {
			took, ok := smallSearch(t, url)
			search <- searched{took, ok}
		}()
	}
	// The stall detector: the count of finished query_records calls must
	// grow at least once in every stallLimit until the batches end. The
	// loop ends with the batches or at the first stall; it polls four
	// times a second.
	finished, progressAt, longest := 0.0, time.Now(), time.Duration(0)
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(250 * time.Millisecond):
			n, _ := testkit.Sample(testkit.Scrape(t, metricsURL), metrics.NameToolCalls, map[string]string{"tool": "query_records"})
			if n > 0 && !searching {
				startSearch()
			}
			if n > finished {
				longest = max(longest, time.Since(progressAt))
				finished, progressAt = n, time.Now()
			} else if time.Since(progressAt) > stallLimit {
				t.Fatalf("deadlock: no query_records call finished in %v, %v of %d finished", stallLimit, finished, 4*perBatch)
			}
		}
	}
	if !searching {
		startSearch() // the batches ended before the first poll saw a call
	}
	s := <-search
	if !s.ok {
		t.Errorf("another token's small search failed beside the batches (after %v)", s.took)
	}
	took := s.took
	fams := testkit.Scrape(t, metricsURL)
	for _, name := range []string{metrics.NameBudgetHeld, metrics.NameBudgetMax} {
		if _, found := testkit.Sample(fams, name, nil); !found {
			t.Errorf("/metrics has no %s", name)
		}
	}
	// No label names a token, its digest or a request id.
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				for _, tok := range fixedTokens {
					if strings.Contains(v, tok) {
						t.Errorf("%s{%s=%q} names a token", f.GetName(), l.GetName(), v)
					}
				}
				if strings.HasPrefix(v, "t:") || len(v) >= 32 && strings.Trim(v, "0123456789abcdef") == "" {
					t.Errorf("%s{%s=%q} looks like a digest or an id", f.GetName(), l.GetName(), v)
				}
			}
		}
	}
	close(codes)
	count := map[string]int{}
	for c := range codes {
		count[c]++
	}
	if count["server_busy"] > 0 || count["request_timeout"] > 0 || count["ok"] < 4*perBatch {
		t.Fatalf("answers by code %v, want every item answered", count)
	}
	t.Logf("4 batches in %v: %v; longest wait between finished calls %v; small search %v", time.Since(start), count, longest, took)
}

// TestOneTokenLoopingFullCallsLeavesOthersFast: one token loops full calls
// on 24 connections; another token's small searches keep a p95 of at most
// 0.75 s: the looping token holds at most its contended share of the
// request slots (four per CPU) while the other is served, and the byte
// budget lets the small search's reservations past its large ones.
func TestOneTokenLoopingFullCallsLeavesOthersFast(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("a latency bound: the race detector multiplies every call's CPU time")
	}
	h := httpFlagsFor(demoRS(t))
	url := startHTTPWith(t, &h)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, _, err := doErr(ctx, http.MethodPost, url, toolCall(1, "query_records", fullTranscripts),
					map[string]string{"Authorization": "Bearer " + fixedTokens["client"], "MCP-Protocol-Version": "2025-11-25"})
				if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
					time.Sleep(100 * time.Millisecond) // refused over its share: again soon
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	time.Sleep(300 * time.Millisecond) // the loop is under way
	var times []time.Duration
	for range 20 {
		took, ok := smallSearch(t, url)
		if !ok {
			t.Fatal("a small search failed beside the loop")
		}
		times = append(times, took)
		time.Sleep(50 * time.Millisecond)
	}
	slices.Sort(times)
	p95 := times[len(times)*95/100-1]
	if p95 > 750*time.Millisecond {
		t.Fatalf("small search p95 %v beside one token's 24 looping full calls, want at most 0.75s (all: %v)", p95, times)
	}
	t.Logf("small search p50 %v p95 %v", times[len(times)/2], p95)
}
