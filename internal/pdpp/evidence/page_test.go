package evidence

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestFitItems(t *testing.T) {
	tests := []struct {
		name            string
		budget, base    int
		ids, shown      []int
		wantK, wantIDs  int
		wantAskedAtMost int
	}{
		{"all fit", 1000, 10, []int{5, 5, 5}, []int{30, 30, 30}, 3, 0, 3},
		{"ids of the rest stay", 100, 10, []int{5, 5, 5, 5}, []int{30, 30, 30, 30}, 2, 2, 3},
		{"one item always", 100, 10, []int{5, 5}, []int{500, 30}, 1, 0, 2},
		{"ids within what the items leave", 100, 10, []int{20, 20, 20, 20}, []int{60, 60, 60, 60}, 1, 1, 2},
		{"ids over their share", 100, 0, []int{20, 20, 20, 20, 20}, []int{60, 60, 60, 60, 60}, 1, 2, 2},
		{"no items", 100, 0, nil, nil, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			k, listed := FitItems(tc.budget, tc.base, tc.ids, func(i int) int {
				if i != asked {
					t.Fatalf("asked item %d after %d items", i, asked)
				}
				asked++
				return tc.shown[i]
			})
			if k != tc.wantK || listed != tc.wantIDs {
				t.Errorf("FitItems = %d shown, %d ids; want %d, %d", k, listed, tc.wantK, tc.wantIDs)
			}
			if asked > tc.wantAskedAtMost {
				t.Errorf("asked %d items, want at most %d", asked, tc.wantAskedAtMost)
			}
		})
	}
}

func TestWireLen(t *testing.T) {
	for _, v := range []any{
		"plain", "<mark>x</mark> & y", "line\u2028sep\u2029", map[string]any{"a<": []any{"&", 1}},
	} {
		raw := mustMarshal(v) // written without HTML escaping
		wire, _ := json.Marshal(json.RawMessage(raw))
		if WireLen(raw) != len(wire) {
			t.Errorf("WireLen(%s) = %d, encoding/json writes %d bytes", raw, WireLen(raw), len(wire))
		}
	}
}

// FuzzWireLen holds WireLen to the byte-by-byte count it stands for (six
// bytes for each <, > and &, six for each U+2028 and U+2029), and, where
// raw is valid JSON, to what encoding/json writes for it.
func FuzzWireLen(f *testing.F) {
	for _, s := range []string{"", `"<mark>x</mark> & y"`, "\"line\u2028sep\u2029\"", "\xe2\x80\xe2\x80\xa8", `{"a<":["&",1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := len(raw)
		for i, c := range raw {
			switch {
			case c == '<' || c == '>' || c == '&':
				want += 5
			case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9):
				want += 3
			}
		}
		if got := WireLen(raw); got != want {
			t.Fatalf("WireLen(%q) = %d, want %d", raw, got, want)
		}
		var compact bytes.Buffer
		if json.Compact(&compact, raw) == nil && compact.Len() == len(raw) {
			if wire, err := json.Marshal(json.RawMessage(raw)); err == nil && len(wire) != want {
				t.Fatalf("%q: encoding/json writes %d bytes, WireLen says %d", raw, len(wire), want)
			}
		}
	})
}
