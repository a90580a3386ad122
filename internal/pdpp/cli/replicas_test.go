package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// servingAddr finds the bound address in the server's startup log line.
var servingAddr = regexp.MustCompile(`msg="serving MCP over HTTP" addr=(\S+)`)

// startReplica runs the built binary's http command against provider on a
// free loopback port, and returns its base URL once it serves. The process
// gets SIGTERM at cleanup.
func startReplica(t *testing.T, bin, provider string) string {
	t.Helper()
	cmd := exec.Command(bin, "http", "--provider-url", provider, "--listen", "127.0.0.1:0")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingAddr.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case addr := <-found:
		return "http://" + addr
	case <-time.After(20 * time.Second):
		t.Fatal("replica did not start")
	}
	return ""
}

// rotatingTransport sends each JSON-RPC request (a message with an id) to
// the next replica in turn; notifications go where the last request went.
type rotatingTransport struct {
	mu       sync.Mutex
	replicas []string
	next     int
	served   []string // "method@replica", in order
}

func (rt *rotatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	_ = req.Body.Close()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	rt.mu.Lock()
	i := (rt.next + len(rt.replicas) - 1) % len(rt.replicas)
	if msg.ID != nil {
		i = rt.next
		rt.next = (rt.next + 1) % len(rt.replicas)
		rt.served = append(rt.served, fmt.Sprintf("%s@%d", msg.Method, i))
	}
	target := rt.replicas[i]
	rt.mu.Unlock()
	out := req.Clone(req.Context())
	u := *req.URL
	u.Host = target[len("http://"):]
	out.URL, out.Host = &u, ""
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	return http.DefaultTransport.RoundTrip(out)
}

// TestSessionAcrossReplicas runs three replicas of the built binary against
// one demo RS and sends each request of one client session to a different
// replica: nothing a replica keeps is needed by another.
func TestSessionAcrossReplicas(t *testing.T) {
	dir := t.TempDir()
	buildLikeImage(t, readDockerfile(t), dir, "v0-replicas", "./cmd/pdpp-mcp-server")
	bin := filepath.Join(dir, "pdpp-mcp-server")
	provider := demoRS(t)
	var replicas []string
	for range 3 {
		replicas = append(replicas, startReplica(t, bin, provider))
	}

	tests := []struct {
		version, handshake string
	}{
		{mcp.ProtocolVersion20251125, "initialize"},
		{mcp.ProtocolVersion20260728, "server/discover"},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			rt := &rotatingTransport{replicas: replicas}
			sessionAcross(t, rt, tc.version)
			want := []string{tc.handshake + "@0", "tools/list@1", "tools/call@2", "tools/call@0", "tools/call@1"}
			if fmt.Sprint(rt.served) != fmt.Sprint(want) {
				t.Errorf("requests went %v, want %v", rt.served, want)
			}
		})
	}
}

// sessionAcross runs one client session through rt: the handshake, tools/list,
// a search, its next page and the read continuation of its first hit.
func sessionAcross(t *testing.T, rt *rotatingTransport, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.NewStreamableHttpClient(rt.replicas[0]+"/mcp",
		mcptransport.WithHTTPBasicClient(&http.Client{Transport: rt}),
		mcptransport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + fixedTokens["client"]}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := startSession(ctx, c, version, "replica-test"); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
	}
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res := callTool(t, ctx, c, tool, args)
		if res.IsError {
			t.Fatalf("%s failed: %s", tool, textOf(res))
		}
		return res
	}
	type page struct {
		NextCursor *string `json:"next_cursor"`
		Results    []struct {
			ID   string                `json:"id"`
			Next evidence.Continuation `json:"next"`
		} `json:"results"`
	}
	var first, second page
	if err := remarshal(call("search", map[string]any{"q": "zephyrmarker", "limit": 1}).StructuredContent, &first); err != nil {
		t.Fatal(err)
	}
	if first.NextCursor == nil || len(first.Results) != 1 || first.Results[0].Next.Tool == "" {
		t.Fatalf("the first page offers no cursor or continuation: %+v", first)
	}
	if err := remarshal(call("search", map[string]any{"q": "zephyrmarker", "limit": 1, "cursor": *first.NextCursor}).StructuredContent, &second); err != nil {
		t.Fatal(err)
	}
	if len(second.Results) != 1 || second.Results[0].ID == first.Results[0].ID {
		t.Fatalf("the next page (from another replica) did not continue the first: %+v", second)
	}
	cont := first.Results[0].Next
	call(cont.Tool, cont.Arguments)
}
