package cli

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/transport"
)

// parseBytes reads a size as Kubernetes writes a memory quantity ("256Mi")
// or as GOMEMLIMIT takes it ("224MiB", or plain bytes).
func parseBytes(t *testing.T, s string) int64 {
	t.Helper()
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		t.Fatalf("size %q is not a positive byte count", s)
	}
	return n * mult
}

// checkMemoryFits checks that GOMEMLIMIT leaves MemoryHeadroom under the
// container's limit and that the worst case of the flags' bounds fits
// under GOMEMLIMIT.
func checkMemoryFits(t *testing.T, where string, containerLimit, goMemLimit string, c *common, maxConcurrent, maxBody, maxConns int64) {
	t.Helper()
	if goMemLimit == "" {
		t.Fatalf("%s: GOMEMLIMIT is not set", where)
	}
	gml := parseBytes(t, goMemLimit)
	if limit := parseBytes(t, containerLimit); limit-gml != MemoryHeadroom {
		t.Errorf("%s: GOMEMLIMIT %s leaves %d bytes under the %s limit, want %d", where, goMemLimit, limit-gml, containerLimit, MemoryHeadroom)
	}
	_, inFlight, err := c.memoryLimits()
	if err != nil {
		t.Fatal(err)
	}
	if worst := WorstCaseHeap(inFlight, maxConcurrent, maxBody, maxConns); worst > gml {
		t.Errorf("%s: the bounds' worst case is %d bytes (in flight %d, %d requests of %d bytes, %d connections), over GOMEMLIMIT %d",
			where, worst, inFlight, maxConcurrent, maxBody, maxConns, gml)
	}
}

func TestWorstCaseHeap(t *testing.T) {
	cases := []struct {
		name                                       string
		inFlight, maxConcurrent, maxBody, maxConns int64
		want                                       int64
	}{
		{"no requests", 48 << 20, 0, 1 << 20, 0, 10<<20 + 96<<20},
		{"connections only", 48 << 20, 0, 1 << 20, 1024, 10<<20 + 96<<20 + 1024*transport.ConnBytes},
		{"the Kubernetes base", 48 << 20, 256, 128 << 10, 384, 10<<20 + 96<<20 + 256*(256<<10+128<<10) + 384*transport.ConnBytes},
		{"the defaults", 48 << 20, 256, 1 << 20, transport.DefaultMaxConns, 10<<20 + 96<<20 + 256*(2<<20+128<<10) + transport.DefaultMaxConns*transport.ConnBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorstCaseHeap(tc.inFlight, tc.maxConcurrent, tc.maxBody, tc.maxConns); got != tc.want {
				t.Fatalf("WorstCaseHeap = %d, want %d", got, tc.want)
			}
		})
	}
}
