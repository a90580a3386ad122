package pdpp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
)

// Facts of MCP Apps (specification 2026-01-26) as a host reads them.
const (
	appsExtension = "io.modelcontextprotocol/ui"
	appsMIMEType  = "text/html;profile=mcp-app"
	appsViewURI   = "ui://pdpp/evidence"
)

// appsViewTools are the tools whose results render in the evidence view.
var appsViewTools = []string{"search", "fetch", "read_record_field", "query_records"}

// checkAppsTool checks one listed tool's _meta (as JSON): the view tools
// name the evidence view in _meta.ui.resourceUri, the others name none.
func checkAppsTool(t *testing.T, name string, meta json.RawMessage) {
	t.Helper()
	var m struct {
		UI *struct {
			ResourceURI string `json:"resourceUri"`
		} `json:"ui"`
	}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &m); err != nil {
			t.Fatalf("%s _meta: %v", name, err)
		}
	}
	want := slices.Contains(appsViewTools, name)
	switch {
	case want && (m.UI == nil || m.UI.ResourceURI != appsViewURI):
		t.Errorf("%s: _meta %s does not name %s in ui.resourceUri", name, meta, appsViewURI)
	case !want && m.UI != nil:
		t.Errorf("%s: _meta %s names a view", name, meta)
	}
}

// externalRef finds what in a document could load anything: an attribute
// naming a source or target, a CSS url() or @import.
var externalRef = regexp.MustCompile(`(?i)\b(src|href|action|srcset|poster)\s*=|url\(|@import`)

// checkAppsView checks a resources/read of the view as a host reads it:
// one text document of the MCP Apps mime type within its budget, _meta.ui
// with every CSP list empty and prefersBorder set, and a document whose own
// CSP allows nothing external and that references nothing outside itself.
func checkAppsView(t *testing.T, uri, mimeType, text string, meta json.RawMessage) {
	t.Helper()
	if uri != appsViewURI || mimeType != appsMIMEType {
		t.Errorf("view read as %s (%s), want %s (%s)", uri, mimeType, appsViewURI, appsMIMEType)
	}
	if !strings.HasPrefix(text, "<!DOCTYPE html>") || !strings.Contains(text, "</html>") {
		t.Errorf("view is not a whole HTML document: %.80q", text)
	}
	if len(text) > mcptools.MaxViewEvidenceBytes*95/100 {
		t.Errorf("view is %d bytes, over 95%% of its budget %d", len(text), mcptools.MaxViewEvidenceBytes)
	}
	var m struct {
		UI struct {
			CSP           map[string][]string `json:"csp"`
			PrefersBorder *bool               `json:"prefersBorder"`
		} `json:"ui"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		t.Fatalf("view _meta %s: %v", meta, err)
	}
	for _, k := range []string{"connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"} {
		if v, ok := m.UI.CSP[k]; !ok || len(v) != 0 {
			t.Errorf("view _meta.ui.csp.%s = %v, want an empty list", k, v)
		}
	}
	if m.UI.PrefersBorder == nil || !*m.UI.PrefersBorder {
		t.Errorf("view _meta.ui.prefersBorder = %v, want true", m.UI.PrefersBorder)
	}
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(text)
	if csp == nil {
		t.Fatal("view has no Content-Security-Policy meta element")
	}
	for _, d := range []string{"default-src 'none'", "connect-src 'none'", "base-uri 'none'", "form-action 'none'", "script-src 'sha256-"} {
		if !strings.Contains(csp[1], d) {
			t.Errorf("view CSP %q lacks %q", csp[1], d)
		}
	}
	if strings.Contains(csp[1], "unsafe-inline") || strings.Contains(csp[1], "http") {
		t.Errorf("view CSP %q allows inline code or a remote origin", csp[1])
	}
	if loc := externalRef.FindStringIndex(text); loc != nil {
		t.Errorf("view references something outside itself: %q", text[max(0, loc[0]-40):min(len(text), loc[1]+40)])
	}
}

func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) == "null" || string(b) == "{}" {
		return nil
	}
	return b
}

// TestAppsViewOfficialSDK checks, with the official Go SDK client over
// stdio and HTTP at every revision served, the MCP Apps surface: the
// extension in the server's capabilities, each tool's _meta.ui and the
// view's resources/read.
func TestAppsViewOfficialSDK(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	forEachWire(t, demo.log.next, nil, func(t *testing.T, w *wireClient, _ *reqLog, version string) {
		caps := w.cs.InitializeResult().Capabilities
		if caps == nil || caps.Extensions[appsExtension] == nil {
			t.Errorf("capabilities %+v do not advertise %s", caps, appsExtension)
		}
		list, err := w.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			checkAppsTool(t, tool.Name, rawJSON(t, tool.Meta))
		}
		res, err := w.cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: appsViewURI})
		if err != nil {
			t.Fatalf("resources/read %s: %v", appsViewURI, err)
		}
		if len(res.Contents) != 1 {
			t.Fatalf("resources/read %s: %d contents", appsViewURI, len(res.Contents))
		}
		c := res.Contents[0]
		checkAppsView(t, c.URI, c.MIMEType, c.Text, rawJSON(t, c.Meta))
	})
}

// connectMCPGo serves s over kind ("stdio" on pipes, "http" the hosted
// handler) and initializes an mcp-go client at version.
func connectMCPGo(t *testing.T, s *server.MCPServer, kind, version string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	var c *client.Client
	switch kind {
	case "stdio":
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- transport.ServeStdio(ctx, s, inR, outW, slog.New(slog.DiscardHandler))
			_ = outW.Close()
		}()
		c = client.NewClient(mcptransport.NewIO(outR, inW, nil))
		t.Cleanup(func() {
			_ = c.Close()
			_ = inW.Close()
			cancel()
			<-done
		})
	case "http":
		h, err := transport.NewHTTPHandler(s, transport.HTTPConfig{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		if c, err = client.NewStreamableHttpClient(hs.URL + "/mcp"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("%s start: %v", kind, err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version, ClientInfo: mcp.Implementation{Name: "pdpp-apps-test", Version: "0"},
	}})
	if err != nil {
		t.Fatalf("%s initialize at %s: %v", kind, version, err)
	}
	if init.ProtocolVersion != version {
		t.Fatalf("%s: negotiated %s, want %s", kind, init.ProtocolVersion, version)
	}
	return c, init
}

// TestAppsViewMCPGo is TestAppsViewOfficialSDK with the mcp-go client; at
// 2026-07-28 it also asks server/discover.
func TestAppsViewMCPGo(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	for _, kind := range wireTransports {
		for _, version := range transport.DefaultProtocolVersions() {
			t.Run(kind+"/"+version, func(t *testing.T) {
				s, _ := wireServer(t, demo.log.next, nil)
				c, init := connectMCPGo(t, s, kind, version)
				ctx := context.Background()
				if init.Capabilities.Extensions[appsExtension] == nil {
					t.Errorf("initialize capabilities %+v do not advertise %s", init.Capabilities, appsExtension)
				}
				if mcp.IsModernProtocol(version) {
					d, err := c.Discover(ctx, mcp.DiscoverRequest{})
					if err != nil {
						t.Fatalf("server/discover: %v", err)
					}
					if d.Capabilities.Extensions[appsExtension] == nil {
						t.Errorf("server/discover capabilities %+v do not advertise %s", d.Capabilities, appsExtension)
					}
				}
				list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				for _, tool := range list.Tools {
					var meta json.RawMessage
					if tool.Meta != nil {
						meta = rawJSON(t, tool.Meta.AdditionalFields)
					}
					checkAppsTool(t, tool.Name, meta)
				}
				req := mcp.ReadResourceRequest{}
				req.Params.URI = appsViewURI
				res, err := c.ReadResource(ctx, req)
				if err != nil {
					t.Fatalf("resources/read %s: %v", appsViewURI, err)
				}
				if len(res.Contents) != 1 {
					t.Fatalf("resources/read %s: %d contents", appsViewURI, len(res.Contents))
				}
				tc, ok := res.Contents[0].(mcp.TextResourceContents)
				if !ok {
					t.Fatalf("resources/read %s: %T, want text", appsViewURI, res.Contents[0])
				}
				checkAppsView(t, tc.URI, tc.MIMEType, tc.Text, rawJSON(t, tc.Meta))
				lr, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
				if err != nil {
					t.Fatal(err)
				}
				if len(lr.Resources) != 1 || lr.Resources[0].URI != appsViewURI || lr.Resources[0].MIMEType != appsMIMEType {
					t.Errorf("resources/list = %+v, want the view alone", lr.Resources)
				}
			})
		}
	}
}

// TestAppsViewWithoutCredential: a server without a usable credential
// still serves the view (a host renders the tools' not_connected error in
// it), and still refuses every RS-backed resource.
func TestAppsViewWithoutCredential(t *testing.T) {
	s := pdpp.NewServer(pdpp.New(pdpp.Config{}), pdpp.ServerOptions{
		Unavailable: &pdpp.Unavailable{Code: "not_connected", Message: "run pdpp-mcp-server connect"}})
	c, _ := startInProcess(t, s, "apps-test")
	req := mcp.ReadResourceRequest{}
	req.Params.URI = appsViewURI
	res, err := c.ReadResource(context.Background(), req)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %v %+v", appsViewURI, err, res)
	}
	tc, _ := res.Contents[0].(mcp.TextResourceContents)
	checkAppsView(t, tc.URI, tc.MIMEType, tc.Text, rawJSON(t, tc.Meta))
	req.Params.URI = "pdpp://stream/notes"
	if _, err := c.ReadResource(context.Background(), req); err == nil || !strings.Contains(err.Error(), "not_connected") {
		t.Errorf("resources/read pdpp://stream/notes without a credential: %v, want not_connected", err)
	}
}
