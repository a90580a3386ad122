package benchmarks

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
)

// seen is one request as the RS received it.
type seen struct {
	path   string
	query  url.Values
	auth   string
	accept string
}

// recorder keeps the requests that reach the RS.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, seen{path: req.URL.Path, query: req.URL.Query(), auth: req.Header.Get("Authorization"), accept: req.Header.Get("Accept")})
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

// take returns the requests recorded since the last take.
func (r *recorder) take() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

// TestWorkloadDirectMatchesAdapter checks what the benchmarks compare: for
// every measured call, in process (stdio mode) and through the HTTP transport
// stack, the adapter (after its one-time token check) sends the RS exactly one
// request, the same one the direct call sends, and both answers carry the
// same records and text.
func TestWorkloadDirectMatchesAdapter(t *testing.T) {
	modes := []struct {
		name    string
		connect func(t *testing.T, rsURL string) *client.Client
	}{
		{"in-process", func(t *testing.T, rsURL string) *client.Client { return inProcessClient(t, rsURL) }},
		{"http", func(t *testing.T, rsURL string) *client.Client { return httpClient(t, startAdapterHTTP(t, rsURL)) }},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			var rec recorder
			rsURL := startRS(t, rec.wrap)
			direct := directClient(t, rsURL)
			mcpc := mode.connect(t, rsURL)

			// The first call made with a token also reads GET /v1/schema once
			// to check the token kind; later calls must not repeat it.
			if _, err := callTool(mcpc, callNamed(t, "search")); err != nil {
				t.Fatal(err)
			}
			if first := rec.take(); len(first) != 2 || first[0].path != "/v1/schema" {
				t.Fatalf("first adapter call sent %d RS requests %v, want the token check then the search", len(first), first)
			}
			for _, call := range Workload() {
				t.Run(call.Name, func(t *testing.T) {
					res, err := callTool(mcpc, call)
					if err != nil {
						t.Fatal(err)
					}
					viaAdapter := rec.take()
					got, _, err := callDirect(direct, call)
					if err != nil {
						t.Fatal(err)
					}
					viaDirect := rec.take()
					if len(viaAdapter) != 1 || len(viaDirect) != 1 {
						t.Fatalf("RS requests: adapter %d, direct %d; want one each (adapter %v)", len(viaAdapter), len(viaDirect), viaAdapter)
					}
					a, d := viaAdapter[0], viaDirect[0]
					if a.path != d.path || !reflect.DeepEqual(a.query, d.query) {
						t.Errorf("adapter requested %s?%s, direct %s?%s", a.path, a.query.Encode(), d.path, d.query.Encode())
					}
					if a.auth != "Bearer "+ClientToken || a.auth != d.auth || a.accept != d.accept {
						t.Errorf("headers differ: adapter auth %t accept %q, direct auth %t accept %q",
							a.auth == "Bearer "+ClientToken, a.accept, d.auth == "Bearer "+ClientToken, d.accept)
					}
					if err := sameAnswer(res, got); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// sameAnswer compares an adapter result with the direct RS model.
func sameAnswer(res *mcp.CallToolResult, direct any) error {
	switch m := direct.(type) {
	case *rsclient.SearchResultList:
		var out struct {
			Results []struct {
				ID string `json:"id"`
			} `json:"results"`
		}
		if err := structured(res, &out); err != nil {
			return err
		}
		var want, got []string
		for _, h := range m.Data {
			want = append(want, h.ConnectionId+"/"+h.Stream+":"+h.RecordKey)
		}
		for _, r := range out.Results {
			got = append(got, r.ID)
		}
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			return fmt.Errorf("search ids: adapter %v, direct %v", got, want)
		}
	case *rsclient.RecordList:
		var out struct {
			Records []struct {
				ID string `json:"id"`
			} `json:"records"`
			HasMore    bool   `json:"has_more"`
			NextCursor string `json:"next_cursor"`
		}
		if err := structured(res, &out); err != nil {
			return err
		}
		var want, got []string
		for _, r := range m.Data {
			want = append(want, r.ConnectionId+"/"+string(r.Stream)+":"+r.Id)
		}
		for _, r := range out.Records {
			got = append(got, r.ID)
		}
		cursor := ""
		if m.NextCursor != nil {
			cursor = *m.NextCursor
		}
		if len(want) != QueryLimit || !reflect.DeepEqual(got, want) || out.HasMore != m.HasMore || out.NextCursor != cursor {
			return fmt.Errorf("query ids: adapter %v (has_more %t, cursor %q), direct %v (has_more %t, cursor %q)",
				got, out.HasMore, out.NextCursor, want, m.HasMore, cursor)
		}
	case *rsclient.Record:
		var out struct {
			ID       string `json:"id"`
			Text     string `json:"text"`
			Metadata struct {
				RecordID string `json:"record_id"`
			} `json:"metadata"`
		}
		if err := structured(res, &out); err != nil {
			return err
		}
		var data struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Data, &data)
		text := data.Text
		if out.ID != FetchID || out.Metadata.RecordID != m.Id || len(text) < 20000 || !strings.Contains(out.Text, text) {
			return fmt.Errorf("fetch: adapter id %q record %q with %d text bytes; direct record %q with %d text bytes",
				out.ID, out.Metadata.RecordID, len(out.Text), m.Id, len(text))
		}
	case *rsclient.FieldWindow:
		var out struct {
			ID     string `json:"id"`
			Text   string `json:"text"`
			Window struct {
				StartChars int `json:"start_chars"`
				EndChars   int `json:"end_chars"`
			} `json:"window"`
			// A compact window's text lives in content[]; text_at says where.
			TextAt *struct {
				Content   int `json:"content"`
				StartByte int `json:"start_byte"`
				EndByte   int `json:"end_byte"`
			} `json:"text_at"`
		}
		if err := structured(res, &out); err != nil {
			return err
		}
		if at := out.TextAt; out.Text == "" && at != nil && at.Content < len(res.Content) {
			if tc, ok := mcp.AsTextContent(res.Content[at.Content]); ok && at.StartByte <= at.EndByte && at.EndByte <= len(tc.Text) {
				out.Text = tc.Text[at.StartByte:at.EndByte]
			}
		}
		w := m.Window
		if out.ID != FetchID || out.Text != w.Text || out.Window.StartChars != w.StartChars || out.Window.EndChars != w.EndChars || w.Text == "" {
			return fmt.Errorf("window: adapter %q [%d,%d) %d bytes; direct [%d,%d) %d bytes",
				out.ID, out.Window.StartChars, out.Window.EndChars, len(out.Text), w.StartChars, w.EndChars, len(w.Text))
		}
	default:
		return fmt.Errorf("unexpected direct model %T", direct)
	}
	return nil
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", millis(7), 99, 7 * time.Millisecond},
		{"median of odd count, unsorted", millis(5, 1, 3), 50, 3 * time.Millisecond},
		{"median of even count takes the lower", millis(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 100 values", millis(seq(100)...), 99, 99 * time.Millisecond},
		{"p99 of 10 values is the max", millis(seq(10)...), 99, 10 * time.Millisecond},
		{"p100", millis(2, 9, 4), 100, 9 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.in...)
			if got := Percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("input reordered: %v", tc.in)
				}
			}
		})
	}
}

// seq returns 1..n.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestRatioSE(t *testing.T) {
	tests := []struct {
		name string
		a, f []time.Duration
		want float64
	}{
		{"no pairs", nil, nil, 0},
		{"one pair", millis(2), millis(1), 0},
		{"unpaired", millis(2, 2), millis(1), 0},
		{"a fixed multiple has no spread", millis(20, 40, 60), millis(10, 20, 30), 0},
		// R = 1; the residuals +-1 have sd sqrt(4/3), over sqrt(4)*10.
		{"spread around the ratio", millis(11, 9, 11, 9), millis(10, 10, 10, 10), math.Sqrt(4.0/3) / 20},
		{"zero floor", millis(1, 2), millis(0, 0), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RatioSE(tc.a, tc.f); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("RatioSE = %v, want %v", got, tc.want)
			}
		})
	}
}

// millis is the durations of v in milliseconds.
func millis(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}
