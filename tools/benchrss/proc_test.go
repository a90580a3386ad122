package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStatus(t *testing.T) {
	status, err := os.ReadFile(filepath.Join("testdata", "status.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		want    memory
		wantErr bool
	}{
		{"real status file", string(status), memory{RSS: 19876 * 1024, Peak: 20112 * 1024}, false},
		{"only the two lines", "VmHWM:\t 10 kB\nVmRSS:\t 7 kB\n", memory{RSS: 7 * 1024, Peak: 10 * 1024}, false},
		{"no VmHWM", "VmRSS:\t 7 kB\n", memory{}, true},
		{"kernel thread without memory lines", "Name:\tkthreadd\nState:\tS (sleeping)\n", memory{}, true},
		{"unexpected unit", "VmHWM:\t 10 kB\nVmRSS:\t 7 MB\n", memory{}, true},
		{"not a number", "VmHWM:\t 10 kB\nVmRSS:\t x kB\n", memory{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseStatus = %+v, %v; want %+v, error %t", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"plain name", "4242 (pdpp-mcp-server) S 1 4242 4242 0 -1 4194560 1200 0 0 0 37 5 0 0 20 0 9 0 100 0 0",
			42 * clockTick, false},
		{"name with spaces and parentheses", "77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 0 0",
			7 * clockTick, false},
		{"truncated", "77 (x) R 1 2 3", 0, true},
		{"no command name", "77 x R 1 2 3 4 5 6 7 8 9 10 11 12 13", 0, true},
		{"not a number", "77 (x) R 1 77 77 0 -1 0 0 0 0 0 a 4 0 0", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseStat = %v, %v; want %v, error %t", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestReadOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc on this system; benchrss needs Linux")
	}
	mem, err := readMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if mem.RSS <= 0 || mem.Peak < mem.RSS {
		t.Errorf("readMemory(self) = %+v, want 0 < RSS <= Peak", mem)
	}
	if _, err := readCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

func TestParseListenAddr(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    string
		match   bool
		wantErr bool
	}{
		{"startup line", `time=2026-01-01T00:00:00Z level=INFO msg="serving MCP over HTTP" addr=127.0.0.1:40123 endpoint=/mcp`, "127.0.0.1:40123", true, false},
		{"IPv6 loopback", `level=INFO msg="serving MCP over HTTP" addr=[::1]:8787 endpoint=/mcp`, "[::1]:8787", true, false},
		{"other line", `level=INFO msg="using client credential" provider=http://127.0.0.1:1`, "", false, false},
		{"access log mentioning addr", `level=INFO msg=request addr=127.0.0.1:5 path=/mcp`, "", false, false},
		{"not loopback", `level=INFO msg="serving MCP over HTTP" addr=0.0.0.0:8787 endpoint=/mcp`, "", true, true},
		{"no port", `level=INFO msg="serving MCP over HTTP" addr=127.0.0.1 endpoint=/mcp`, "", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, match, err := parseListenAddr(tc.line)
			if got != tc.want || match != tc.match || (err != nil) != tc.wantErr {
				t.Errorf("parseListenAddr = %q, %t, %v; want %q, %t, error %t", got, match, err, tc.want, tc.match, tc.wantErr)
			}
		})
	}
}

func TestWaitListen(t *testing.T) {
	const startup = "level=INFO msg=\"serving MCP over HTTP\" addr=127.0.0.1:9 endpoint=/mcp\n"
	tests := []struct {
		name    string
		writes  []string
		exit    bool
		want    string
		wantErr string
	}{
		{"found after other lines", []string{"level=INFO msg=\"using client credential\"\n", startup, "level=INFO msg=request\n"}, false, "127.0.0.1:9", ""},
		{"line split across writes", []string{startup[:20], startup[20:41], startup[41:]}, false, "127.0.0.1:9", ""},
		{"not loopback", []string{strings.Replace(startup, "127.0.0.1", "192.0.2.1", 1)}, false, "", "not a loopback"},
		{"exits first", []string{"pdpp-mcp-server: --provider-url is required\n"}, true, "", "exited before"},
		{"never says", []string{"level=INFO msg=starting\n"}, false, "", "within"},
		{"too much before the line", []string{strings.Repeat("x", listenScanLimit+1), startup}, false, "", "first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var writes []io.Reader
			for _, s := range tc.writes {
				writes = append(writes, strings.NewReader(s))
			}
			exited := make(chan error, 1)
			if tc.exit {
				exited <- errors.New("exit status 64")
			}
			got, err := waitListen(watchListen(io.MultiReader(writes...)), exited, 50*time.Millisecond)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("waitListen = %q, %v; want %q, error containing %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestFlat(t *testing.T) {
	const mib = 1 << 20
	at := func(rss ...int64) []memory {
		out := make([]memory, len(rss))
		for i, r := range rss {
			out[i] = memory{RSS: r, Peak: r}
		}
		return out
	}
	tests := []struct {
		name       string
		mem        []memory
		wantGrowth int64
		wantFlat   bool
	}{
		{"steady", at(20*mib, 20*mib, 20*mib, 20*mib), 0, true},
		{"shrinks", at(20*mib, 21*mib, 20*mib, 19*mib), -2 * mib, true},
		{"small rise within 1 MiB", at(10*mib, 10*mib, 10*mib, 10*mib+mib/2), mib / 2, true},
		{"rise within 5 percent", at(40*mib, 40*mib, 41*mib, 41*mib+mib/2), 3 * mib / 2, true},
		{"keeps growing", at(20*mib, 22*mib, 24*mib, 26*mib), 4 * mib, false},
		{"too few readings", at(20*mib, 20*mib), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			growth, ok := flat(tc.mem)
			if growth != tc.wantGrowth || ok != tc.wantFlat {
				t.Errorf("flat = %d, %t; want %d, %t", growth, ok, tc.wantGrowth, tc.wantFlat)
			}
		})
	}
}
