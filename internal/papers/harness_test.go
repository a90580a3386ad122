package papers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/snapshot"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/store"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// testRoot holds the snapshots built once per test binary run.
var testRoot string

func TestMain(m *testing.M) { testkit.RunInTempDir(m, "papers-test-", &testRoot) }

var (
	fixtures   = map[bool]*snapshot.Snapshot{}
	fixturesMu sync.Mutex
)

// fixture builds (once) the fixture snapshot, current or legacy.
func fixture(t testing.TB, legacy bool) *snapshot.Snapshot {
	t.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if s, ok := fixtures[legacy]; ok {
		return s
	}
	s, err := snapshot.BuildFixture(filepath.Join(testRoot, fmt.Sprintf("fixture-legacy-%v", legacy)), legacy)
	if err != nil {
		t.Fatalf("build fixture: %v", err)
	}
	fixtures[legacy] = s
	return s
}

// id is the paper_id of a fixture key.
func id(key string) string { return snapshot.PaperID(key) }

// assetServer serves an asset folder over HTTP under /static/, records the
// paths asked for, and can delay chosen paths.
type assetServer struct {
	*httptest.Server
	mu    sync.Mutex
	seen  []string
	delay map[string]time.Duration // path below /static/ -> delay
}

func newAssetServer(t testing.TB, dir string, delay map[string]time.Duration) *assetServer {
	t.Helper()
	as := &assetServer{delay: delay}
	files := http.StripPrefix("/static/", http.FileServer(http.Dir(dir)))
	as.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		as.seen = append(as.seen, r.URL.Path)
		as.mu.Unlock()
		if d, ok := as.delay[strings.TrimPrefix(r.URL.Path, "/static/")]; ok {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(as.Close)
	return as
}

func (as *assetServer) requested() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]string(nil), as.seen...)
}

// envOptions choose the snapshot and how assets are reached.
type envOptions struct {
	legacy       bool
	remoteAssets bool                     // assets only through an HTTP asset server
	delay        map[string]time.Duration // remote asset paths answered late
	timeout      time.Duration            // asset fetch timeout
}

// env is a paper MCP server over a fixture snapshot.
type env struct {
	snap   *snapshot.Snapshot
	srv    *server.MCPServer
	assets *assetServer // nil with local assets
	logs   *testkit.Buffer
}

func newEnv(t testing.TB, opt envOptions) *env {
	t.Helper()
	snap := fixture(t, opt.legacy)
	st, err := store.Open(snap.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{snap: snap, logs: &testkit.Buffer{}}
	cfg := assets.Config{Dir: snap.AssetsDir, Timeout: opt.timeout}
	if opt.remoteAssets {
		e.assets = newAssetServer(t, snap.AssetsDir, opt.delay)
		cfg = assets.Config{BaseURL: e.assets.URL + "/static/", Timeout: opt.timeout}
	}
	loader, err := assets.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loader.Close() })
	h, err := New(Config{Store: st, Assets: loader, Logger: slog.New(slog.NewTextHandler(e.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = NewServer(h, ServerOptions{Version: "test"})
	return e
}

// Client kinds every scenario runs through.
var clientKinds = []string{"stdio", "http"}

// harness is one initialized MCP client of an env.
type harness struct {
	t       testing.TB
	kind    string
	c       *client.Client
	init    *mcp.InitializeResult
	schemas map[string]*jsonschema.Schema
}

// connect starts the transport of kind around the env's server and
// returns an initialized client: "stdio" runs transport.ServeStdio over
// pipes, "http" the hosted /mcp handler behind httptest, "inprocess"
// mcp-go's in-process client.
func (e *env) connect(t testing.TB, kind string) *harness {
	t.Helper()
	var c *client.Client
	var err error
	switch kind {
	case "stdio":
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- transport.ServeStdio(ctx, e.srv, inR, outW, slog.New(slog.NewTextHandler(io.Discard, nil)))
			outW.Close()
		}()
		c = client.NewClient(mcptransport.NewIO(outR, inW, nil))
		t.Cleanup(func() {
			c.Close()
			inW.Close()
			cancel()
			<-done
		})
	case "http":
		handler, herr := transport.NewHTTPHandler(e.srv, transport.HTTPConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if herr != nil {
			t.Fatal(herr)
		}
		hs := httptest.NewServer(handler)
		t.Cleanup(hs.Close)
		c, err = client.NewStreamableHttpClient(hs.URL + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	case "inprocess":
		c, err = client.NewInProcessClient(e.srv)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	default:
		t.Fatalf("unknown client kind %q", kind)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("%s start: %v", kind, err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "papers-test", Version: "1"},
	}})
	if err != nil {
		t.Fatalf("%s initialize: %v", kind, err)
	}
	h := &harness{t: t, kind: kind, c: c, init: init, schemas: map[string]*jsonschema.Schema{}}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range list.Tools {
		h.schemas[tool.Name] = compileSchema(t, tool.Name, outputSchemaOf(t, tool))
	}
	return h
}

// outputSchemaOf is the outputSchema of a listed tool as JSON.
func outputSchemaOf(t testing.TB, tool mcp.Tool) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(b, &wire); err != nil || len(wire.OutputSchema) == 0 {
		t.Fatalf("tool %s has no outputSchema: %v", tool.Name, err)
	}
	return wire.OutputSchema
}

func compileSchema(t testing.TB, name string, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("tool %s: outputSchema: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("tool %s: outputSchema does not compile: %v", name, err)
	}
	return s
}

// result is one tool call's outcome, decoded.
type result struct {
	IsError    bool
	Text       string
	Structured map[string]any
}

// call calls a tool through the client and checks that structuredContent
// is present and validates against the tool's outputSchema.
func (h *harness) call(tool string, args map[string]any) result {
	h.t.Helper()
	res, err := h.c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		h.t.Fatalf("%s %s: %v", h.kind, tool, err)
	}
	var out result
	out.IsError = res.IsError
	var texts []string
	for _, c := range res.Content {
		tc, ok := c.(mcp.TextContent)
		if !ok {
			h.t.Fatalf("%s: content %T is not text", tool, c)
		}
		texts = append(texts, tc.Text)
	}
	out.Text = strings.Join(texts, "\n")
	if res.StructuredContent == nil {
		h.t.Fatalf("%s: no structuredContent", tool)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out.Structured); err != nil {
		h.t.Fatalf("%s: structuredContent is not an object: %s", tool, raw)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		h.t.Fatal(err)
	}
	if s := h.schemas[tool]; s != nil {
		if err := s.Validate(inst); err != nil {
			h.t.Fatalf("%s: structuredContent does not validate against outputSchema: %v\n%s", tool, err, raw)
		}
	}
	return out
}

// read reads a resource through the client.
func (h *harness) read(uri string) (*mcp.ReadResourceResult, error) {
	return h.c.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
}

// readText reads a resource that must succeed with one text content.
func (h *harness) readText(uri string) mcp.TextResourceContents {
	h.t.Helper()
	res, err := h.read(uri)
	if err != nil {
		h.t.Fatalf("%s read %s: %v", h.kind, uri, err)
	}
	if len(res.Contents) != 1 {
		h.t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		h.t.Fatalf("read %s: content %T", uri, res.Contents[0])
	}
	return tc
}

// eachClient runs f once per client kind, each with a fresh client of e.
func eachClient(t *testing.T, e *env, f func(t *testing.T, h *harness)) {
	for _, kind := range clientKinds {
		t.Run(kind, func(t *testing.T) { f(t, e.connect(t, kind)) })
	}
}

// asset reads a fixture asset file.
func asset(t testing.TB, snap *snapshot.Snapshot, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(snap.AssetsDir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// errorCode is the error code of an error result, failing when the result
// is not an error.
func errorCode(t testing.TB, r result) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("not an error result: %s", r.Text)
	}
	code, _ := r.Structured["error"].(string)
	if code == "" {
		t.Fatalf("error result without a code: %v", r.Structured)
	}
	if !strings.HasPrefix(r.Text, code) {
		t.Fatalf("error text %q does not start with code %q", r.Text, code)
	}
	return code
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// storePaper reads a paper straight from the env's snapshot.
func (e *env) storePaper(paperID string) (*store.Paper, error) {
	st, err := store.Open(e.snap.DBPath)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Paper(context.Background(), paperID)
}
