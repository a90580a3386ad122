package cmdkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// Env carries the process environment and streams, so commands can run
// in-process in tests.
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// ExitError is an error that decides the process exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Fail returns an error with an exit code and a formatted message.
func Fail(code int, format string, args ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, args...)}
}

// WithCode wraps err so that it exits with code.
func WithCode(code int, err error) error { return &ExitError{Code: code, Err: err} }

// Version returns override when set (by -ldflags -X), else what the build
// info says of this build (see BuildVersion).
func Version(override string) string {
	if override != "" {
		return override
	}
	bi, _ := debug.ReadBuildInfo()
	return BuildVersion(bi)
}

// BuildVersion names a build from its info: the main module's version (a
// release tag, or the pseudo-version go build stamps from the VCS), else the
// first 12 hex digits of the VCS revision (with "+dirty" when the tree had
// changes), else "devel" (go run, go test, or a build without VCS stamping).
func BuildVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// FlagSet is a flag.FlagSet whose flags take their defaults from environment
// variables, which the help text names.
type FlagSet struct {
	*flag.FlagSet
	env Env
}

// NewFlagSet returns the flags of one subcommand of program prog.
func NewFlagSet(env Env, prog, name, synopsis string) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: %s %s\n\nFlags (environment variable in brackets):\n", prog, synopsis)
		fs.PrintDefaults()
	}
	return &FlagSet{FlagSet: fs, env: env}
}

func withEnvName(usage, envName string) string {
	if envName == "" {
		return usage
	}
	return usage + " [" + envName + "]"
}

// Str defines a string flag defaulting to $envName when set.
func (f *FlagSet) Str(p *string, name, envName, def, usage string) {
	if v := f.env.Getenv(envName); envName != "" && v != "" {
		def = v
	}
	f.StringVar(p, name, def, withEnvName(usage, envName))
}

// Bool defines a boolean flag defaulting to $envName when set (see ParseBool),
// else to def. A value ParseBool refuses is a usage error naming the variable,
// never read as false.
func (f *FlagSet) Bool(p *bool, name, envName string, def bool, usage string) error {
	err := fromEnv(f, envName, &def, ParseBool, "%s=%q: %v")
	f.BoolVar(p, name, def, withEnvName(usage, envName))
	return err
}

// fromEnv sets *def to $envName parsed, when it is named and set; a value
// parse refuses is a usage error formatted with the name, the value and the
// parse error.
func fromEnv[T any](f *FlagSet, envName string, def *T, parse func(string) (T, error), format string) error {
	v := f.env.Getenv(envName)
	if envName == "" || v == "" {
		return nil
	}
	x, err := parse(v)
	if err != nil {
		return Fail(ExitUsage, format, envName, v, err)
	}
	*def = x
	return nil
}

// ParseBool reads an environment boolean: 1, true, yes (on) or 0, false, no
// (off), in any case, surrounding white space ignored.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no":
		return false, nil
	}
	return false, errors.New("not a boolean; use 1/0, true/false or yes/no")
}

// Dur defines a duration flag defaulting to $envName when set.
func (f *FlagSet) Dur(p *time.Duration, name, envName string, def time.Duration, usage string) error {
	err := fromEnv(f, envName, &def, time.ParseDuration, "%[1]s=%[2]q is not a duration such as 30s")
	f.DurationVar(p, name, def, withEnvName(usage, envName))
	return err
}

// Int64 defines an integer flag defaulting to $envName when set.
func (f *FlagSet) Int64(p *int64, name, envName string, def int64, usage string) error {
	parse := func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
	err := fromEnv(f, envName, &def, parse, "%[1]s=%[2]q is not an integer")
	f.Int64Var(p, name, def, withEnvName(usage, envName))
	return err
}

// Int defines an integer flag defaulting to $envName when set.
func (f *FlagSet) Int(p *int, name, envName string, def int, usage string) error {
	err := fromEnv(f, envName, &def, strconv.Atoi, "%[1]s=%[2]q is not an integer")
	f.IntVar(p, name, def, withEnvName(usage, envName))
	return err
}

// Parse parses args: --help gives flag.ErrHelp, a bad flag a usage error.
func (f *FlagSet) Parse(args []string) error {
	err := f.FlagSet.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return Fail(ExitUsage, "%v", err)
}

// ParseNoArgs is Parse for commands that take no positional arguments.
func (f *FlagSet) ParseNoArgs(args []string) error {
	if err := f.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return Fail(ExitUsage, "unexpected arguments %q", f.Args())
	}
	return nil
}

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Command runs one subcommand with its remaining arguments.
type Command func(ctx context.Context, env Env, log *slog.Logger, args []string) error

// Program is a command line made of subcommands.
type Program struct {
	Name        string             // program name, prefixed to error lines
	Usage       string             // printed for --help
	Version     func() string      // printed for --version / version
	LogLevelEnv string             // environment variable naming the log level
	Default     string             // subcommand run when the first argument is a flag or absent
	Commands    map[string]Command // subcommands by name
}

// Main runs the program until it ends or SIGINT/SIGTERM arrives, and returns
// the exit code.
func (p Program) Main(env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return p.MainContext(ctx, env)
}

// MainContext runs the program until it ends or ctx is cancelled.
func (p Program) MainContext(ctx context.Context, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: LogLevel(env.Getenv(p.LogLevelEnv))}))
	err := p.dispatch(ctx, env, log)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "%s: %v\n", p.Name, err)
	if ee, ok := errors.AsType[*ExitError](err); ok {
		return ee.Code
	}
	return ExitFailure
}

func (p Program) dispatch(ctx context.Context, env Env, log *slog.Logger) error {
	args := env.Args
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "-help", "help":
			fmt.Fprint(env.Stdout, p.Usage)
			return nil
		case "--version", "-version", "version":
			fmt.Fprintln(env.Stdout, p.Version())
			return nil
		}
	}
	name := p.Default
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if cmd, ok := p.Commands[name]; ok {
		return cmd(ctx, env, log, args)
	}
	// One line, not buried under the usage text.
	names := append(slices.Collect(maps.Keys(p.Commands)), "version")
	slices.Sort(names)
	return Fail(ExitUsage, "unknown command %q (commands: %s); run %q for usage", name, strings.Join(names, ", "), p.Name+" --help")
}

// LogLevel parses debug|info|warn|error (default info, the zero Level).
func LogLevel(s string) slog.Level {
	return map[string]slog.Level{"debug": slog.LevelDebug, "warn": slog.LevelWarn, "error": slog.LevelError}[strings.ToLower(s)]
}

// FinishServing ends a demo that serves in the background: with once it stops
// the server (cancel) and waits for it; otherwise it says so on w and waits
// until the server ends. A stop caused by ctx is a normal end.
func FinishServing(ctx context.Context, w io.Writer, once bool, cancel context.CancelFunc, served <-chan error) error {
	if once {
		cancel()
	} else {
		fmt.Fprintln(w, "\nServing until Ctrl-C.")
	}
	err := <-served
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
