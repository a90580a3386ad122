package cmdkit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

func envWith(vars map[string]string, args ...string) (Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return vars[k] }}, &out, &errb
}

func TestFlagDefaultsFromEnvironment(t *testing.T) {
	cases := []struct {
		name    string
		vars    map[string]string
		args    []string
		want    string
		wantDur time.Duration
		wantN   int64
		wantB   bool
		err     string
	}{
		{"defaults", nil, nil, "def", time.Second, 7, false, ""},
		{"from env", map[string]string{"X_S": "env", "X_D": "3s", "X_N": "9", "X_B": "TRUE"}, nil, "env", 3 * time.Second, 9, true, ""},
		{"flag beats env", map[string]string{"X_S": "env"}, []string{"--s", "flag"}, "flag", time.Second, 7, false, ""},
		{"bad duration", map[string]string{"X_D": "soon"}, nil, "", 0, 0, false, "X_D"},
		{"bad integer", map[string]string{"X_N": "many"}, nil, "", 0, 0, false, "X_N"},
		{"boolean 1", map[string]string{"X_B": "1"}, nil, "def", time.Second, 7, true, ""},
		{"boolean yes", map[string]string{"X_B": " Yes "}, nil, "def", time.Second, 7, true, ""},
		{"boolean 0", map[string]string{"X_B": "0"}, nil, "def", time.Second, 7, false, ""},
		{"boolean No", map[string]string{"X_B": "No"}, nil, "def", time.Second, 7, false, ""},
		{"boolean False", map[string]string{"X_B": "False"}, nil, "def", time.Second, 7, false, ""},
		{"bad boolean", map[string]string{"X_B": "on"}, nil, "", 0, 0, false, "X_B"},
		{"bad boolean 2", map[string]string{"X_B": "enabled"}, nil, "", 0, 0, false, "X_B"},
		{"bad flag", nil, []string{"--nope"}, "", 0, 0, false, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, _, _ := envWith(tc.vars)
			f := NewFlagSet(env, "prog", "cmd", "cmd [flags]")
			var s string
			var d time.Duration
			var n int64
			var b bool
			f.Str(&s, "s", "X_S", "def", "a string")
			err := errors.Join(f.Bool(&b, "b", "X_B", false, "a switch"), f.Dur(&d, "d", "X_D", time.Second, "a duration"), f.Int64(&n, "n", "X_N", 7, "a number"))
			if err == nil {
				err = f.Parse(tc.args)
			}
			if tc.err != "" {
				var ee *ExitError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &ee) || ee.Code != ExitUsage {
					t.Fatalf("want usage error naming %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil || s != tc.want || d != tc.wantDur || n != tc.wantN || b != tc.wantB {
				t.Fatalf("got %q %v %d %v err=%v", s, d, n, b, err)
			}
		})
	}
}

func TestProgramExitCodes(t *testing.T) {
	p := Program{
		Name: "prog", Usage: "usage text\n", Version: func() string { return "v9" }, Default: "run",
		Commands: map[string]Command{
			"run": func(ctx context.Context, env Env, log *slog.Logger, args []string) error {
				f := NewFlagSet(env, "prog", "run", "run")
				return f.ParseNoArgs(args)
			},
			"conf": func(context.Context, Env, *slog.Logger, []string) error {
				return Fail(ExitConfig, "no config")
			},
			"boom": func(context.Context, Env, *slog.Logger, []string) error { return errors.New("plain") },
		},
	}
	cases := []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{nil, ExitOK, "", ""},
		{[]string{"--help"}, ExitOK, "usage text", ""},
		{[]string{"version"}, ExitOK, "v9", ""},
		{[]string{"run", "--help"}, ExitOK, "", "Usage: prog run"},
		{[]string{"run", "extra"}, ExitUsage, "", "unexpected arguments"},
		{[]string{"conf"}, ExitConfig, "", "prog: no config"},
		{[]string{"boom"}, ExitFailure, "", "prog: plain"},
		{[]string{"nope"}, ExitUsage, "", `unknown command "nope"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			env, out, errb := envWith(nil, tc.args...)
			if code := p.MainContext(context.Background(), env); code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.errs) {
				t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
			}
		})
	}
}

func TestHTTPFlagsConfig(t *testing.T) {
	env, _, _ := envWith(map[string]string{"P_ALLOWED_ORIGINS": "https://a.example, ,https://b.example", "P_CORS": "true"})
	f := NewFlagSet(env, "prog", "http", "http")
	var h HTTPFlags
	if err := h.Register(f, "P_", "127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	if err := f.Parse([]string{"--max-body-bytes", "2048"}); err != nil {
		t.Fatal(err)
	}
	cfg := h.Config(nil)
	if cfg.Listen != "127.0.0.1:9" || !cfg.CORS || cfg.MaxBodyBytes != 2048 || strings.Join(cfg.AllowedOrigins, "|") != "https://a.example|https://b.example" {
		t.Fatalf("config %+v", cfg)
	}
}

// TestMaxConcurrentRequestsFlag: the concurrent request cap comes from the
// flag, else the environment, else the transport default; a negative value
// is refused when the configuration is settled.
func TestMaxConcurrentRequestsFlag(t *testing.T) {
	cases := []struct {
		name    string
		vars    map[string]string
		args    []string
		want    int // in the Config the flags build
		wantEff int // after the transport's defaults
		wantErr string
	}{
		{"default", nil, nil, transport.DefaultMaxConcurrentRequests, transport.DefaultMaxConcurrentRequests, ""},
		{"from env", map[string]string{"P_MAX_CONCURRENT_REQUESTS": "32"}, nil, 32, 32, ""},
		{"flag beats env", map[string]string{"P_MAX_CONCURRENT_REQUESTS": "32"}, []string{"--max-concurrent-requests", "2"}, 2, 2, ""},
		{"zero means the default", nil, []string{"--max-concurrent-requests", "0"}, 0, transport.DefaultMaxConcurrentRequests, ""},
		{"negative refused", nil, []string{"--max-concurrent-requests", "-1"}, -1, 0, "max concurrent requests"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, _, _ := envWith(tc.vars)
			f := NewFlagSet(env, "prog", "http", "http")
			var h HTTPFlags
			if err := h.Register(f, "P_", "127.0.0.1:9"); err != nil {
				t.Fatal(err)
			}
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg := h.Config(nil)
			if cfg.MaxConcurrentRequests != tc.want {
				t.Fatalf("MaxConcurrentRequests %d, want %d", cfg.MaxConcurrentRequests, tc.want)
			}
			eff, err := cfg.Effective()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Effective: %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || eff.MaxConcurrentRequests != tc.wantEff {
				t.Fatalf("effective cap %d (%v), want %d", eff.MaxConcurrentRequests, err, tc.wantEff)
			}
		})
	}
}

// TestBodyReadingFlags: the bounds of the body-reading phase come from the
// flags, else the environment, else the transport defaults; a per-client
// cap above the whole cap counts as the whole, and a negative bound is
// refused when the configuration is settled.
func TestBodyReadingFlags(t *testing.T) {
	cases := []struct {
		name               string
		vars               map[string]string
		args               []string
		timeout            time.Duration
		readers, perClient int
		wantErr            string
	}{
		{"defaults", nil, nil, transport.DefaultBodyReadTimeout, transport.DefaultMaxBodyReaders, transport.DefaultMaxBodyReadersPerClient, ""},
		{"from env", map[string]string{"P_BODY_READ_TIMEOUT": "2s", "P_MAX_BODY_READERS": "40", "P_MAX_BODY_READERS_PER_CLIENT": "40"}, nil, 2 * time.Second, 40, 40, ""},
		{"flags beat env", map[string]string{"P_MAX_BODY_READERS": "40"}, []string{"--max-body-readers", "64", "--body-read-timeout", "5s"}, 5 * time.Second, 64, transport.DefaultMaxBodyReadersPerClient, ""},
		{"per client at most the whole", nil, []string{"--max-body-readers", "8"}, transport.DefaultBodyReadTimeout, 8, 8, ""},
		{"negative refused", nil, []string{"--max-body-readers", "-1"}, 0, 0, 0, "max body readers"},
		{"negative timeout refused", nil, []string{"--body-read-timeout", "-1s"}, 0, 0, 0, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, _, _ := envWith(tc.vars)
			f := NewFlagSet(env, "prog", "http", "http")
			var h HTTPFlags
			if err := h.Register(f, "P_", "127.0.0.1:9"); err != nil {
				t.Fatal(err)
			}
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			eff, err := h.Config(nil).Effective()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Effective: %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || eff.BodyReadTimeout != tc.timeout || eff.MaxBodyReaders != tc.readers || eff.MaxBodyReadersPerClient != tc.perClient {
				t.Fatalf("effective %v %d %d (%v), want %v %d %d", eff.BodyReadTimeout, eff.MaxBodyReaders, eff.MaxBodyReadersPerClient, err, tc.timeout, tc.readers, tc.perClient)
			}
		})
	}
}

func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Serve(context.Background(), http.NotFoundHandler(), transport.HTTPConfig{Listen: ln.Addr().String(), Logger: slog.New(slog.DiscardHandler)})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUnavailable || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("want an unavailable exit naming --listen, got %v", err)
	}
}

// TestBuildVersion: a build names itself by its module version, else its VCS
// revision, else "devel"; never "dev" or "(devel)".
func TestBuildVersion(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "devel"},
		{"release tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127120000-0123456789ab+dirty"}}, "v0.0.0-20261127120000-0123456789ab+dirty"},
		{"revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, "0123456789ab"},
		{"modified tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, "0123456789ab+dirty"},
		{"nothing stamped", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := BuildVersion(tc.bi); got != tc.want {
				t.Fatalf("BuildVersion = %q, want %q", got, tc.want)
			}
		})
	}
	if got := Version("v9"); got != "v9" {
		t.Fatalf("an -ldflags override must win: %q", got)
	}
}
