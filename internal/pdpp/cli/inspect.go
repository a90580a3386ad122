package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/cmdkit"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/unseen"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/credentials"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
)

// terminalClient starts the adapter in-process with the local credential, so
// the terminal commands render exactly what an MCP client receives.
func terminalClient(ctx context.Context, log *slog.Logger, l *localFlags) (*client.Client, error) {
	if err := l.requireProvider(); err != nil {
		return nil, err
	}
	token, err := l.tokenSource(log)
	if err != nil {
		return nil, err
	}
	s, _, err := l.buildServer(log, token)
	if err != nil {
		return nil, err
	}
	c, err := client.NewInProcessClient(s)
	if err != nil {
		return nil, err
	}
	if err := startSession(ctx, c, mcp.LATEST_PROTOCOL_VERSION, "pdpp-mcp-cli"); err != nil {
		return nil, err
	}
	return c, nil
}

// shellQuote quotes s for a POSIX shell when needed.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	if unseen.Has(s) || strings.ContainsAny(s, "\t\n\r") {
		return ansiQuote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ansiQuote quotes s for a POSIX shell with bash's $'…' form, writing each
// character a person cannot see (package unseen) as a \u or \U escape, and
// a tab, line feed or carriage return as \t, \n or \r, so a printed
// command carries an id or cursor exactly, visibly and on one line.
func ansiQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i, r := range s {
		switch {
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteString(strconv.Quote(string(r))[1:3]) // \t, \n or \r
		case unseen.Has(s[i : i+utf8.RuneLen(r)]):
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// readFieldCommand turns a read_record_field continuation into the command line
// that performs the same read.
func (l *localFlags) readFieldCommand(c evidence.Continuation) string {
	a := c.Arguments
	str := func(k string) string { s, _ := a[k].(string); return s }
	num := func(k string) (int, bool) {
		switch v := a[k].(type) {
		case float64:
			return int(v), true
		case int:
			return v, true
		}
		return 0, false
	}
	parts := []string{"pdpp-mcp-server", "read-field", shellQuote(str("id")), shellQuote(str("field_path"))}
	if n, ok := num("offset_chars"); ok {
		parts = append(parts, "--offset", strconv.Itoa(n))
	}
	if n, ok := num("limit_chars"); ok {
		parts = append(parts, "--limit-chars", strconv.Itoa(n))
	}
	if q := str("q"); q != "" {
		parts = append(parts, "--q", shellQuote(q))
	}
	return strings.Join(append(parts, l.locationFlags()...), " ")
}

// locationFlags are the --provider-url and (when not the default)
// --cache-root flags a printed command needs to reach the same RS.
func (l *localFlags) locationFlags() []string {
	parts := []string{"--provider-url", shellQuote(l.providerURL)}
	if l.cacheRoot != "" && l.cacheRoot != credentials.DefaultCacheRoot {
		parts = append(parts, "--cache-root", shellQuote(l.cacheRoot))
	}
	return parts
}

func printResult(env Env, res *mcp.CallToolResult, asJSON bool) error {
	if asJSON {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		// The JSON stays exact; hidden characters are \u escapes.
		fmt.Fprintln(env.Stdout, string(unseen.EscapeJSON(b)))
	} else {
		fmt.Fprint(env.Stdout, textOf(res))
	}
	if res.IsError {
		return cmdkit.Fail(cmdkit.ExitFailure, "the call failed (details above)")
	}
	return nil
}

func runSearch(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var l localFlags
	var stream, conn, mode, cursor string
	var limit int
	var asJSON bool
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "search", "search QUERY [--stream S] [--limit N] [--connection-id C] [--mode lexical|semantic|hybrid] [--cursor C] [--json]")
	if err := l.registerTerminal(f); err != nil {
		return err
	}
	f.StringVar(&stream, "stream", "", "search only this `stream`")
	f.IntVar(&limit, "limit", 5, "hits per page (1..100)")
	f.StringVar(&conn, "connection-id", "", "search only this `connection`")
	f.StringVar(&mode, "mode", "lexical", "search `mode`: lexical, semantic or hybrid")
	f.StringVar(&cursor, "cursor", "", "next page: the `cursor` a previous search printed (same QUERY and flags)")
	f.BoolVar(&asJSON, "json", false, "print the structured result as JSON")
	if err := f.Parse(reorder(args, f)); err != nil {
		return err
	}
	if f.NArg() != 1 {
		return cmdkit.Fail(cmdkit.ExitUsage, "search takes exactly one QUERY argument (quote multi-word queries)")
	}
	c, err := terminalClient(ctx, log, &l)
	if err != nil {
		return err
	}
	defer c.Close()
	callArgs := map[string]any{"q": f.Arg(0), "limit": limit, "mode": mode}
	if stream != "" {
		callArgs["streams"] = []string{stream}
	}
	setGiven(callArgs, "connection_id", conn, "cursor", cursor)
	res, err := call(ctx, c, "search", callArgs)
	if err != nil {
		return err
	}
	if err := printResult(env, res, asJSON); err != nil {
		return err
	}
	var out struct {
		Results []struct {
			Next          evidence.Continuation `json:"next"`
			ID            string                `json:"id"`
			MatchedFields []string              `json:"matched_fields"`
		} `json:"results"`
		NextCursor string                 `json:"next_cursor"`
		Next       *evidence.Continuation `json:"next"`
	}
	_ = remarshal(res.StructuredContent, &out)
	// next resumes after the last hit shown (the rest of this page, then
	// the next page); next_cursor is the RS's next page.
	if out.Next != nil && out.Next.Tool == evidence.ToolSearch {
		if c, ok := out.Next.Arguments["cursor"].(string); ok {
			out.NextCursor = c
		}
	}
	if out.NextCursor != "" && !asJSON {
		parts := []string{"pdpp-mcp-server", "search", shellQuote(f.Arg(0))}
		if stream != "" {
			parts = append(parts, "--stream", shellQuote(stream))
		}
		parts = append(parts, "--limit", strconv.Itoa(limit), "--mode", shellQuote(mode))
		if conn != "" {
			parts = append(parts, "--connection-id", shellQuote(conn))
		}
		parts = append(parts, "--cursor", shellQuote(out.NextCursor))
		fmt.Fprintf(env.Stdout, "\nnext page command: %s\n", strings.Join(append(parts, l.locationFlags()...), " "))
	}
	if len(out.Results) > 0 && !asJSON {
		// The first hit with a proven window reads around its match; with
		// none, the first hit's matched field is read from its start.
		next := out.Results[0].Next
		if next.Tool != evidence.ToolReadField && len(out.Results[0].MatchedFields) > 0 {
			next = evidence.ReadFieldCall(out.Results[0].ID, out.Results[0].MatchedFields[0], 0, 0, "")
		}
		for _, r := range out.Results {
			if r.Next.Tool == evidence.ToolReadField {
				next = r.Next
				break
			}
		}
		if next.Tool == evidence.ToolReadField {
			fmt.Fprintf(env.Stdout, "\nnext command: %s\n", l.readFieldCommand(next))
		}
	}
	return nil
}

func runReadField(ctx context.Context, env Env, log *slog.Logger, args []string) error {
	var l localFlags
	var offset, limitChars int
	var cursor, q, conn string
	var asJSON bool
	f := cmdkit.NewFlagSet(env, "pdpp-mcp-server", "read-field", "read-field ID FIELD [--offset N | --cursor C | --q TEXT] [--limit-chars N] [--json]\n       read-field --cursor C [--limit-chars N] [--json]")
	if err := l.registerTerminal(f); err != nil {
		return err
	}
	f.IntVar(&offset, "offset", 0, "first `character` to read (default: the start of the field)")
	f.StringVar(&cursor, "cursor", "", "continuation `cursor` from a previous read")
	f.StringVar(&q, "q", "", "read the window around the first match of this `text`")
	f.IntVar(&limitChars, "limit-chars", 0, "window size in `characters` (1..16384; default 4096)")
	f.StringVar(&conn, "connection-id", "", "`connection` of the record when the id has none")
	f.BoolVar(&asJSON, "json", false, "print the structured result, window text included, as JSON")
	if err := f.Parse(reorder(args, f)); err != nil {
		return err
	}
	offsetSet := false
	f.Visit(func(fl *flag.Flag) { offsetSet = offsetSet || fl.Name == "offset" })
	// With --cursor the cursor names the record and field; ID and FIELD
	// may still be given, and must then agree with it.
	if f.NArg() != 2 && (cursor == "" || f.NArg() != 0) {
		return cmdkit.Fail(cmdkit.ExitUsage, "read-field takes ID and FIELD (or only --cursor C), e.g. read-field cin_x/transcripts:tr-5 text")
	}
	c, err := terminalClient(ctx, log, &l)
	if err != nil {
		return err
	}
	defer c.Close()
	callArgs := map[string]any{}
	if f.NArg() == 2 {
		callArgs["id"], callArgs["field_path"] = f.Arg(0), f.Arg(1)
	}
	if offsetSet {
		callArgs["offset_chars"] = offset
	}
	setGiven(callArgs, "cursor", cursor, "q", q, "connection_id", conn)
	if limitChars > 0 {
		callArgs["limit_chars"] = limitChars
	}
	if asJSON {
		// A compact result keeps the window text only in content[]; the
		// JSON printed here is the structured result, so it asks for the
		// full detail, whose structured output carries the text.
		callArgs["detail"] = "full"
	}
	res, err := call(ctx, c, "read_record_field", callArgs)
	if err != nil {
		return err
	}
	if err := printResult(env, res, asJSON); err != nil {
		return err
	}
	var out struct {
		Next     *evidence.Continuation `json:"next"`
		Previous *evidence.Continuation `json:"previous"`
		Window   evidence.WindowState   `json:"window"`
	}
	_ = remarshal(res.StructuredContent, &out)
	if asJSON {
		return nil
	}
	next, previous := keepWindowSize(out.Next, out.Previous, out.Window.StartChars, limitChars)
	if next != nil {
		fmt.Fprintf(env.Stdout, "\nnext command: %s\n", l.readFieldCommand(*next))
	}
	if previous != nil {
		fmt.Fprintf(env.Stdout, "previous command: %s\n", l.readFieldCommand(*previous))
	}
	return nil
}

// keepWindowSize carries an explicit --limit-chars into the next and
// previous reads: the tool pages on from a window read around a match with
// its default size, but a terminal user who chose a size keeps it. The next
// read starts where this window ends; the previous one ends where this
// window starts (start), so the windows still tile the field. limit 0 (no
// --limit-chars) leaves both as the tool gave them.
func keepWindowSize(next, previous *evidence.Continuation, start, limit int) (*evidence.Continuation, *evidence.Continuation) {
	if limit <= 0 {
		return next, previous
	}
	if next != nil {
		c := evidence.Continuation{Tool: next.Tool, Arguments: maps.Clone(next.Arguments)}
		c.Arguments["limit_chars"] = limit
		next = &c
	}
	if previous != nil && start > 0 {
		c := evidence.Continuation{Tool: previous.Tool, Arguments: maps.Clone(previous.Arguments)}
		offset := max(0, start-limit)
		c.Arguments["offset_chars"], c.Arguments["limit_chars"] = offset, start-offset
		previous = &c
	}
	return next, previous
}

// setGiven sets each of the name, value pairs kv in args whose value is
// not empty.
func setGiven(args map[string]any, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			args[kv[i]] = kv[i+1]
		}
	}
}

func call(ctx context.Context, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, cmdkit.Fail(cmdkit.ExitFailure, "%s: %v", tool, err)
	}
	return res, nil
}

// reorder moves flags after positional arguments to the front, so
// "search needle --limit 3" works like "search --limit 3 needle".
func reorder(args []string, f *cmdkit.FlagSet) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if fl := f.Lookup(name); fl != nil {
				if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}
