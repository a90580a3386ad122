package mcpkit

import "testing"

func TestResultBudgetLimit(t *testing.T) {
	tests := []struct {
		name   string
		budget ResultBudget
		body   int
		want   int
	}{
		{"fixed ignores the body", ResultBudget{Bytes: 16384}, 1 << 20, 16384},
		{"ratio above the floor", ResultBudget{RSBodyRatio: 1.25, MinBytes: 4096}, 8000, 10000},
		{"ratio below the floor", ResultBudget{RSBodyRatio: 1.25, MinBytes: 4096}, 100, 4096},
		{"ratio on an empty body", ResultBudget{RSBodyRatio: 2, MinBytes: 512}, 0, 512},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.budget.Limit(tc.body); got != tc.want {
				t.Errorf("Limit(%d) = %d, want %d", tc.body, got, tc.want)
			}
		})
	}
}
