package evidence

import (
	"errors"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
)

// TestSplitKnown: splitKnown hands fn every member under its decoded key,
// and ends the walk with jsonwalk.ErrBadJSON where json.Unmarshal into a
// struct with the known keys would read a member another way than the walk
// does: a known key repeated, or a key that differs from a known one only
// by case (ASCII or Unicode folding, escaped or not).
func TestSplitKnown(t *testing.T) {
	known := []string{"id", "key", "stream"}
	cases := []struct {
		name, raw string
		want      string // the members fn saw, "key=value;…"
		bad       bool
	}{
		{"plain keys", `{"id":1,"stream":"s","other":true}`, `id=1;stream="s";other=true;`, false},
		{"escaped known key", `{"\u0069d":2}`, `id=2;`, false},
		{"escaped unknown key", `{"caf\u00e9":3,"x\"y":4}`, `café=3;x"y=4;`, false},
		{"non-ASCII unknown key", `{"naïve":5}`, `naïve=5;`, false},
		{"repeated known key", `{"id":1,"id":2}`, `id=1;`, true},
		{"ASCII case variant", `{"ID":1}`, ``, true},
		{"escaped case variant", `{"\u0049d":1}`, ``, true},
		{"Kelvin sign folds to k", "{\"\u212aey\":1}", ``, true},
		{"long s folds to s", "{\"\u017ftream\":1}", ``, true},
		{"unknown keys may repeat", `{"a":1,"a":2}`, `a=1;a=2;`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got strings.Builder
			err := splitKnown([]byte(tc.raw), known, func(key string, val []byte) error {
				got.WriteString(key + "=" + string(val) + ";")
				return nil
			})
			if bad := errors.Is(err, jsonwalk.ErrBadJSON); bad != tc.bad || (!tc.bad && err != nil) {
				t.Fatalf("err %v, want bad=%t", err, tc.bad)
			}
			if got.String() != tc.want {
				t.Fatalf("fn saw %q, want %q", got.String(), tc.want)
			}
		})
	}
}
