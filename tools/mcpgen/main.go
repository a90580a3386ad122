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

// run parses flags, generates, and writes or checks the output. It returns
// the process exit code: 0 on success, 1 when the catalog fails lint or a
// budget (or -check finds stale files), 2 on usage errors.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt options
	fs.StringVar(&opt.catalog, "catalog", "", "tool catalog YAML (required)")
	fs.StringVar(&opt.openapi, "openapi", "", "OpenAPI document that catalog operation/param references resolve against (optional)")
	fs.StringVar(&opt.instructions, "instructions", "", "server instructions file (required by lint)")
	fs.StringVar(&opt.out, "out", "", "output directory of the generated package (required)")
	fs.StringVar(&opt.kitImport, "mcpkit", defaultKitImport, "import path of the mcpkit runtime used by generated code")
	fs.StringVar(&opt.rsclient, "rsclient", "", "import path of the typed RS client oapi-codegen writes from -openapi; with it, each tool's arguments are mapped to its operations' parameters by generated code (rscalls.go)")
	check := fs.Bool("check", false, "write nothing; exit 1 if the files in -out differ from what would be generated")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if opt.catalog == "" || opt.out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: mcpgen -catalog FILE [-openapi FILE] -instructions FILE -out DIR [-check]")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	files, c, err := generate(opt)
	if err != nil {
		var lint *lintError
		if errors.As(err, &lint) {
			fmt.Fprintf(stderr, "mcpgen: %s: %v\n", opt.catalog, err)
			return 1
		}
		fmt.Fprintf(stderr, "mcpgen: %v\n", err)
		return 1
	}
	if *check {
		if stale := staleFiles(opt.out, files); len(stale) > 0 {
			fmt.Fprintf(stderr, "mcpgen: %s is stale (%s); run go generate ./...\n", opt.out, strings.Join(stale, ", "))
			return 1
		}
		return 0
	}
	if err := writeFiles(opt.out, files); err != nil {
		fmt.Fprintf(stderr, "mcpgen: write %s: %v\n", opt.out, err)
		return 1
	}
	log.Info("generated", "out", opt.out, "tools", len(c.tools),
		"tools_list_bytes", c.footprint.ToolsListBytes, "instructions_bytes", c.footprint.InstructionsBytes)
	return 0
}
