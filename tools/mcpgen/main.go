package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// oapiCommand runs oapi-codegen: the version go.mod pins as a tool.
var oapiCommand = []string{"go", "tool", "oapi-codegen"}

// run parses flags, generates, and writes or checks the output (see the
// package doc). It returns the process exit code: 0 on success, 1 when the
// catalog fails lint or a budget (or -check finds stale files), 2 on usage
// errors.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt options
	var oapiConfigs []string
	fs.StringVar(&opt.catalog, "catalog", "", "tool catalog YAML (required)")
	fs.StringVar(&opt.openapi, "openapi", "", "OpenAPI document that catalog operation/param references resolve against (optional)")
	fs.StringVar(&opt.instructions, "instructions", "", "server instructions file (required by lint)")
	fs.StringVar(&opt.out, "out", "", "output directory of the generated package (required)")
	fs.StringVar(&opt.kitImport, "mcpkit", defaultKitImport, "import path of the mcpkit runtime used by generated code")
	fs.StringVar(&opt.rsclient, "rsclient", "", "import path of the typed RS client oapi-codegen writes from -openapi; with it, each tool's arguments are mapped to its operations' parameters by generated code (rscalls.go)")
	fs.Func("oapi-codegen", "an oapi-codegen configuration to run on -openapi once the catalog passes, its output swapped in with mcpgen's (repeatable)", func(v string) error {
		oapiConfigs = append(oapiConfigs, v)
		return nil
	})
	check := fs.Bool("check", false, "write nothing; exit 1 if the files in -out differ from what would be generated")
	lintOnly := fs.Bool("lint", false, "check the spec and the catalog and render everything in memory; write nothing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if opt.catalog == "" || opt.out == "" || fs.NArg() > 0 || (len(oapiConfigs) > 0 && opt.openapi == "") {
		fmt.Fprintln(stderr, "usage: mcpgen -catalog FILE [-openapi FILE [-rsclient IMPORT] [-oapi-codegen CONFIG]...] -instructions FILE -out DIR [-check | -lint]")
		return 2
	}
	files, c, err := generate(opt)
	if err != nil {
		where := "" // a lint failure names the catalog
		if errors.As(err, new(*lintError)) {
			where = displayPath(opt.catalog) + ": "
		}
		fmt.Fprintf(stderr, "mcpgen: %s%v\nNothing was written.\n", where, err)
		return 1
	}
	for _, w := range budgetWarnings(c) {
		fmt.Fprintf(stderr, "mcpgen: warning: %s: %s\n", displayPath(opt.catalog), w)
	}
	switch {
	case *lintOnly:
		return 0
	case *check:
		if stale := staleFiles(opt.out, files); len(stale) > 0 {
			fmt.Fprintf(stderr, "mcpgen: %s is stale (%s); run go generate ./...\n", opt.out, strings.Join(stale, ", "))
			return 1
		}
		return 0
	}
	if err := writeAll(opt.out, files, oapiConfigs, opt.openapi, oapiCommand); err != nil {
		fmt.Fprintf(stderr, "mcpgen: %v\nNothing was written: %s and the oapi-codegen outputs are as they were.\n", err, opt.out)
		return 1
	}
	slog.New(slog.NewTextHandler(stderr, nil)).Info("generated", "out", opt.out, "tools", len(c.tools),
		"tools_list_bytes", c.footprint.ToolsListBytes, "instructions_bytes", c.footprint.InstructionsBytes)
	return 0
}
