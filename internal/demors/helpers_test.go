package demors_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
)

// Fixed tokens used by every test server.
var testTokens = map[string]string{
	demors.GrantClient: "test-client-token",
	demors.GrantNarrow: "test-narrow-token",
	demors.GrantOwner:  "test-owner-token",
}

// rs is one running demo RS under httptest.
type rs struct {
	srv  *demors.Server
	http *httptest.Server
}

func newRS(t testing.TB) *rs {
	t.Helper()
	s, err := demors.New(demors.Config{Tokens: testTokens})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &rs{srv: s, http: ts}
}

// response is one decoded HTTP answer.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request with the named grant's token ("" sends no Authorization header).
func (r *rs) do(t testing.TB, method, path, grant string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if grant != "" {
		tok := testTokens[grant]
		if tok == "" {
			tok = grant // an explicit raw token
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.http.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, path, err, raw)
		}
	}
	return out
}

func (r *rs) get(t testing.TB, path, grant string) response {
	t.Helper()
	return r.do(t, http.MethodGet, path, grant, nil)
}

// mustStatus fails unless the response has the status.
func (resp response) mustStatus(t testing.TB, want int) response {
	t.Helper()
	if resp.status != want {
		t.Fatalf("status = %d, want %d; body: %s", resp.status, want, resp.raw)
	}
	return resp
}

// errCode returns error.code of an error envelope.
func (resp response) errCode() string {
	e, _ := resp.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (resp response) errField(name string) any {
	e, _ := resp.body["error"].(map[string]any)
	return e[name]
}

// at walks a decoded JSON value by keys and array indexes ("data", 0, "id").
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any) string            { s, _ := v.(string); return s }
func num(v any) float64           { f, _ := v.(float64); return f }
func list(v any) []any            { a, _ := v.([]any); return a }
func object(v any) map[string]any { m, _ := v.(map[string]any); return m }

// warningCodes lists meta.warnings[].code.
func warningCodes(body map[string]any) []string {
	var out []string
	for _, w := range list(at(body, "meta", "warnings")) {
		out = append(out, str(at(w, "code")))
	}
	return out
}

func q(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return path + "?" + v.Encode()
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }
