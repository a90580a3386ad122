package papercli

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
	ExitConfig      = 78
)

// Version is set at build time with -ldflags "-X .../internal/papercli.Version=v1.2.3";
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

// Env carries the process environment and streams so tests can run
// commands in-process.
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

const usageText = `paper-mcp-server: search and read a library of research papers (a read-only
paper snapshot: SQLite database + summary/source/translation assets) from MCP clients.

Usage:
  paper-mcp-server [stdio] --snapshot FILE (--assets DIR | --assets-base-url URL)
                                     serve MCP over stdio (what desktop clients launch)
  paper-mcp-server http --snapshot FILE (--assets DIR | --assets-base-url URL) [flags]
                                     serve MCP over Streamable HTTP at /mcp
  paper-mcp-server demo [--once] [--stdio] [--dir DIR]
                                     build a 30-paper demo snapshot and serve it
  paper-mcp-server version           print the version

Run "paper-mcp-server <command> --help" for the flags of a command.
Exit codes: 0 ok, 1 failure, 64 usage, 69 unavailable (address in use),
78 configuration (the snapshot or asset folder cannot be used).
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
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: logLevel(env.Getenv("PAPER_MCP_LOG_LEVEL"))}))
	err := dispatch(ctx, env, logger)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "paper-mcp-server: %v\n", err)
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
		case "-h", "--help", "-help", "help":
			fmt.Fprint(env.Stdout, usageText)
			return nil
		case "--version", "-version", "version":
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
	}
	fmt.Fprint(env.Stderr, usageText)
	return fail(ExitUsage, "unknown command %q", cmd)
}
