package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// memory is one reading of a process's resident set, in bytes.
type memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: highest resident so far
}

// readMemory reads VmRSS and VmHWM of pid from /proc.
func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return memory{}, fmt.Errorf("reading the child's memory (Linux /proc needed): %w", err)
	}
	return parseStatus(string(b))
}

// parseStatus extracts VmRSS and VmHWM from the text of /proc/<pid>/status.
func parseStatus(s string) (memory, error) {
	var m memory
	want := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.Peak}
	for _, line := range strings.Split(s, "\n") {
		name, rest, _ := strings.Cut(line, ":")
		into := want[name]
		if into == nil {
			continue
		}
		var kb int64
		var unit string
		if n, _ := fmt.Sscan(rest, &kb, &unit); n != 2 || unit != "kB" {
			return memory{}, fmt.Errorf("unexpected %s line %q", name, line)
		}
		*into = kb * 1024
		delete(want, name)
	}
	if len(want) > 0 {
		return memory{}, errors.New("no VmRSS/VmHWM in /proc status")
	}
	return m, nil
}

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ 100).
const clockTick = 10 * time.Millisecond

// readCPU returns the user plus system CPU time pid has used.
func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("reading the child's CPU time (Linux /proc needed): %w", err)
	}
	return parseStat(string(b))
}

// parseStat extracts utime+stime from the text of /proc/<pid>/stat. The
// command name (field 2) is in parentheses and may hold spaces, so fields are
// counted after its closing parenthesis: utime and stime are fields 14 and 15.
func parseStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 13 {
		return 0, errors.New("unexpected /proc stat text")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected /proc stat field %q", v)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages, or "unknown".
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// listenAddr matches the HTTP server's startup log line, e.g.
// `level=INFO msg="serving MCP over HTTP" addr=127.0.0.1:40123 endpoint=/mcp`.
var listenAddr = regexp.MustCompile(`msg="serving MCP over HTTP".* addr=(\S+)`)

// parseListenAddr returns the address if line is the startup line (loopback only).
func parseListenAddr(line string) (string, bool, error) {
	m := listenAddr.FindStringSubmatch(line)
	if m == nil {
		return "", false, nil
	}
	host, _, err := net.SplitHostPort(m[1])
	if err != nil {
		return "", true, fmt.Errorf("bad listen address %q: %w", m[1], err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", true, fmt.Errorf("the server listens on %q, not a loopback address", m[1])
	}
	return m[1], true, nil
}

// watchListen looks for the startup line in the first listenScanLimit bytes
// of the child's stderr and discards the rest (access logs included); the
// channel receives one result, or none when r ends first.
func watchListen(r io.Reader) <-chan listenResult {
	found := make(chan listenResult, 1)
	go func() {
		defer io.Copy(io.Discard, r)
		head := &io.LimitedReader{R: r, N: listenScanLimit}
		lines := bufio.NewScanner(head)
		lines.Buffer(nil, listenScanLimit)
		for lines.Scan() {
			if addr, ok, err := parseListenAddr(lines.Text()); ok {
				found <- listenResult{addr, err}
				return
			}
		}
		if head.N == 0 || errors.Is(lines.Err(), bufio.ErrTooLong) {
			found <- listenResult{err: fmt.Errorf("no listen address in the first %d bytes of the server's log", listenScanLimit)}
		}
	}()
	return found
}

type listenResult struct {
	addr string
	err  error
}

const listenScanLimit = 1 << 20

// waitListen waits for watchListen's result, the child's exit or timeout.
func waitListen(found <-chan listenResult, exited <-chan error, timeout time.Duration) (string, error) {
	select {
	case r := <-found:
		return r.addr, r.err
	case err := <-exited:
		return "", fmt.Errorf("the server exited before it logged its listen address: %v", err)
	case <-time.After(timeout):
		return "", fmt.Errorf("no listen address logged within %s", timeout)
	}
}
