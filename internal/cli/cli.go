package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

// Exit codes (sysexits-style).
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 64
	ExitUnavailable = 69
	ExitNoPerm      = 77
	ExitConfig      = 78
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=v1.2.3";
// otherwise the module version from the build info is used.
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Env carries the process environment and streams so tests can run commands
// in-process.
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// exitError is an error with an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

const usageText = `pdpp-mcp-server: read a PDPP personal-data server from MCP clients through a
grant-scoped client token (never an owner token).

Usage:
  pdpp-mcp-server [stdio] [flags]   serve MCP over stdio (what desktop clients launch)
  pdpp-mcp-server http [flags]      serve MCP over Streamable HTTP at /mcp
  pdpp-mcp-server demo [flags]      start the embedded demo RS and the MCP server together
  pdpp-mcp-server demo-rs [flags]   start only the embedded demo RS and write its client credential
  pdpp-mcp-server search QUERY      search from the terminal (same evidence cards as MCP)
  pdpp-mcp-server read-field ID FIELD
                                    read one bounded window of a field from the terminal
  pdpp-mcp-server version           print the version

Run "pdpp-mcp-server <command> --help" for the flags of a command.
Exit codes: 0 ok, 1 failure, 64 usage, 69 demo address unavailable, 77 owner token refused,
78 configuration (no or bad credential: run "pdpp connect <provider-url>").
`

// Main runs the command line until it ends or SIGINT/SIGTERM arrives, and
// returns the exit code.
func Main(env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return MainContext(ctx, env)
}

// MainContext runs the command line until it ends or ctx is cancelled.
func MainContext(ctx context.Context, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: logLevel(env.Getenv("PDPP_MCP_LOG_LEVEL"))}))
	err := dispatch(ctx, env, logger)
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "pdpp-mcp-server: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitFailure
}

func logLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

func dispatch(ctx context.Context, env Env, log *slog.Logger) error {
	args := env.Args
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "-help":
			fmt.Fprint(env.Stdout, usageText)
			return nil
		case "--version", "-version":
			fmt.Fprintln(env.Stdout, version())
			return nil
		}
	}
	cmd := "stdio"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "stdio":
		return runStdio(ctx, env, log, args)
	case "http":
		return runHTTP(ctx, env, log, args)
	case "demo":
		return runDemo(ctx, env, log, args)
	case "demo-rs":
		return runDemoRS(ctx, env, log, args)
	case "search":
		return runSearch(ctx, env, log, args)
	case "read-field":
		return runReadField(ctx, env, log, args)
	case "version":
		fmt.Fprintln(env.Stdout, version())
		return nil
	case "help":
		fmt.Fprint(env.Stdout, usageText)
		return nil
	}
	fmt.Fprint(env.Stderr, usageText)
	return fail(ExitUsage, "unknown command %q", cmd)
}
