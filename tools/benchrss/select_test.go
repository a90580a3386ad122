package main

import (
	"slices"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/benchmarks"
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
