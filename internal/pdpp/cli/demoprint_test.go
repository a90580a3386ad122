package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/demoas"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// runServing runs a serving command in process until the test ends and
// returns its stdout and stderr as they are written.
func runServing(t *testing.T, args ...string) (stdout, stderr *testkit.Buffer) {
	t.Helper()
	stdout, stderr = &testkit.Buffer{}, &testkit.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		MainContext(ctx, Env{Args: args, Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr, Getenv: func(string) string { return "" }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return stdout, stderr
}

// waitFor waits until s is in b and returns b's contents, or fails.
func waitFor(t *testing.T, b, errb *testkit.Buffer, s string) string {
	t.Helper()
	out := b.WaitCount(s, 1, 60*time.Second)
	if !strings.Contains(out, s) {
		t.Fatalf("no %q within a minute:\n%s\nstderr:\n%s", s, out, errb.String())
	}
	return out
}

// TestDemoPrintsClientSettings: the demo that keeps serving prints the
// settings of each client, and every npx command names Inspector's major
// version and says which Node it needs and what fails without it.
func TestDemoPrintsClientSettings(t *testing.T) {
	stdout, stderr := runServing(t, "demo", "--listen", "127.0.0.1:0")
	out := waitFor(t, stdout, stderr, "Serving until Ctrl-C.")
	for _, want := range []string{"MCP over HTTP:  http://127.0.0.1:", "Node 22.19 or newer", "Arguments cannot be passed",
		"npx -y @modelcontextprotocol/inspector@2 --cli http://127.0.0.1:", "mcpServers", "vanish when it exits", "no token pasted",
		"Prometheus metrics: http://127.0.0.1:", "$ search"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	checkNPX(t, out)
}

// checkNPX fails when out has no npx command or one that does not pin
// Inspector's major version.
func checkNPX(t *testing.T, out string) {
	t.Helper()
	cmds := npxCommand.FindAllStringSubmatch(out, -1)
	if len(cmds) == 0 {
		t.Fatalf("no npx command in:\n%s", out)
	}
	for _, c := range cmds {
		if strings.TrimRight(c[1], "),") != "@modelcontextprotocol/inspector@2" {
			t.Errorf("npx runs %q, not @modelcontextprotocol/inspector@2", c[1])
		}
	}
}

var npxCommand = regexp.MustCompile(`npx -y (\S+)`)

var (
	printedHTTP   = regexp.MustCompile(`(?m)^  pdpp-mcp-server (http --provider-url \S+)$`)
	printedBearer = regexp.MustCompile(`(?m)^  Authorization: Bearer (\S+)$`)
)

// TestDemoRSPrintsBearer: demo-rs prints what an HTTP client needs, the
// bearer and the http command that serves it, and both work as printed:
// the printed command serves the demo RS over HTTP and the printed bearer
// runs the sample journey there.
func TestDemoRSPrintsBearer(t *testing.T) {
	for _, grant := range []string{"client", "narrow"} {
		t.Run(grant, func(t *testing.T) {
			stdout, stderr := runServing(t, "demo-rs", "--listen", "127.0.0.1:0", "--cache-root", t.TempDir(), "--grant", grant)
			out := waitFor(t, stdout, stderr, "Ctrl-C stops the demo RS.")
			checkNPX(t, out)
			cmd, bearer := printedHTTP.FindStringSubmatch(out), printedBearer.FindStringSubmatch(out)
			if cmd == nil || bearer == nil {
				t.Fatalf("demo-rs printed no http command or no bearer:\n%s", out)
			}
			if grant == "client" {
				// The printed command, on a free port instead of 8787.
				_, herr := runServing(t, append(strings.Fields(cmd[1]), "--listen", "127.0.0.1:0")...)
				log := waitFor(t, herr, herr, "serving MCP over HTTP")
				addr := servingAddr.FindStringSubmatch(log)
				if addr == nil {
					t.Fatalf("no address in %s", log)
				}
				var journey bytes.Buffer
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := runJourney(ctx, &journey, "http://"+addr[1]+"/mcp", bearer[1]); err != nil {
					t.Fatalf("journey with the printed bearer: %v\n%s", err, journey.String())
				}
			}
		})
	}
}

// TestDemoLoopbackCIMD: with --demo-allow-loopback-cimd, demo-rs's
// authorization server takes a client metadata document served over TLS on
// 127.0.0.1 (self-signed) as the client's registration, and that client
// completes the code flow and reads the demo RS with its token; without
// the switch the same client_id is refused on a page naming the switch. No
// other command accepts the switch.
func TestDemoLoopbackCIMD(t *testing.T) {
	const redirect = "http://127.0.0.1:9/callback"
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"client_id":"https://`+r.Host+r.URL.Path+`","client_name":"Local CIMD client","redirect_uris":["`+redirect+`"],`+
			`"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`)
	}))
	t.Cleanup(doc.Close)
	clientID := doc.URL + "/client.json"
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := func(t *testing.T, extra ...string) string {
		t.Helper()
		stdout, stderr := runServing(t, append([]string{"demo-rs", "--listen", "127.0.0.1:0", "--cache-root", t.TempDir(), "--auto-consent"}, extra...)...)
		out := waitFor(t, stdout, stderr, "Ctrl-C stops the demo RS.")
		m := regexp.MustCompile(`demo RS listening on (\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no RS URL in:\n%s", out)
		}
		return m[1]
	}
	cfg := func(rs string) *oauth2.Config {
		return &oauth2.Config{ClientID: clientID, RedirectURL: redirect,
			Endpoint: oauth2.Endpoint{AuthURL: rs + "/oauth/authorize", TokenURL: rs + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	}

	t.Run("with the switch", func(t *testing.T) {
		rs := start(t, demoas.LoopbackDocumentsFlag)
		c := cfg(rs)
		verifier := oauth2.GenerateVerifier()
		resp, err := noFollow.Get(c.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("connector_id", "loom")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("code") == "" {
			t.Fatalf("authorize: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		tok, err := c.Exchange(context.Background(), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		req, _ := http.NewRequest(http.MethodGet, rs+"/v1/streams", nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		got, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got.Body.Close()
		if got.StatusCode != http.StatusOK {
			t.Fatalf("the CIMD client's token on /v1/streams: %d", got.StatusCode)
		}
	})
	t.Run("without it", func(t *testing.T) {
		rs := start(t)
		resp, err := noFollow.Get(cfg(rs).AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("connector_id", "loom")))
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(page), demoas.LoopbackDocumentsFlag) {
			t.Fatalf("%d, want 400 naming %s:\n%s", resp.StatusCode, demoas.LoopbackDocumentsFlag, page)
		}
	})
	t.Run("other commands refuse it", func(t *testing.T) {
		code, _, errOut := run(t, "http", "--provider-url", "http://127.0.0.1:9", demoas.LoopbackDocumentsFlag)
		if code == 0 || !strings.Contains(errOut, strings.TrimPrefix(demoas.LoopbackDocumentsFlag, "--")) {
			t.Fatalf("http with %s: exit %d\n%s", demoas.LoopbackDocumentsFlag, code, errOut)
		}
	})
}

// TestPortTakenBeforeMetrics: an MCP address in use fails the command
// before its metrics listener says it is serving.
func TestPortTakenBeforeMetrics(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, args := range [][]string{
		{"demo", "--listen", busy.Addr().String(), "--once"},
		{"http", "--provider-url", "http://127.0.0.1:9", "--listen", busy.Addr().String(), "--metrics-listen", "127.0.0.1:0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, errOut := run(t, args...)
			if code != 69 || !strings.Contains(errOut, "pick another address with --listen") {
				t.Fatalf("exit %d, want 69 naming --listen:\n%s", code, errOut)
			}
			if strings.Contains(errOut, "serving probes and metrics") {
				t.Fatalf("metrics said they were serving before the port clash:\n%s", errOut)
			}
		})
	}
}
