package main

import (
	"slices"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/benchmarks"
)

func TestSelectWork(t *testing.T) {
	names := func(cs []benchmarks.Call) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	all := benchmarks.Workload()
	tests := []struct {
		name, only string
		want       []string
		fails      bool
	}{
		{"empty keeps all", "", names(all), false},
		{"workload order kept", "read_field, search", []string{"search", "read_field"}, false},
		{"unknown name", "search,nope", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selectWork(all, tc.only)
			if (err != nil) != tc.fails {
				t.Fatalf("err = %v, want failure %t", err, tc.fails)
			}
			if !tc.fails && !slices.Equal(names(got), tc.want) {
				t.Errorf("selectWork(%q) = %v, want %v", tc.only, names(got), tc.want)
			}
		})
	}
}

// TestInterleave checks the rotation: every len(work) calls the first step
// moves one place, so each path takes each position in turn; two paths
// alternate as before the raw path was added.
func TestInterleave(t *testing.T) {
	m := &meter{work: benchmarks.Workload()[:2]}
	tests := []struct {
		name  string
		paths string
		want  []string // order at i = 0, 2, 4, 6
	}{
		{"two paths alternate", "ad", []string{"ad", "da", "ad", "da"}},
		{"three paths rotate", "adr", []string{"adr", "dra", "rad", "adr"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, want := range tc.want {
				var got []byte
				var steps []func() error
				for _, p := range []byte(tc.paths) {
					steps = append(steps, func() error { got = append(got, p); return nil })
				}
				for _, i := range []int{2 * k, 2*k + 1} {
					got = got[:0]
					if err := m.interleave(i, steps...); err != nil {
						t.Fatal(err)
					}
					if string(got) != want {
						t.Errorf("call %d: order %q, want %q", i, got, want)
					}
				}
			}
		})
	}
}
