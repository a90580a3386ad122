package demoas

import (
	"testing"
	"time"
)

// TestTableBound: a full table drops the entries past their time first, then
// the oldest; it never holds more than its bound.
func TestTableBound(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cases := []struct {
		name    string
		untils  []time.Duration // one entry per key 0..n-1, droppable after t0+until
		now     time.Duration
		dropped []int
	}{
		{"oldest goes when none is past its time", []time.Duration{time.Hour, time.Hour, time.Hour}, 0, []int{0}},
		{"every entry past its time goes first", []time.Duration{time.Hour, time.Second, time.Second}, time.Minute, []int{1, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTable[int, string](len(tc.untils))
			for k, u := range tc.untils {
				tb.put(k, "v", t0.Add(u), t0)
			}
			tb.put(99, "new", t0.Add(time.Hour), t0.Add(tc.now))
			if tb.len() > len(tc.untils) {
				t.Fatalf("%d entries, bound %d", tb.len(), len(tc.untils))
			}
			for k := range tc.untils {
				_, ok := tb.get(k)
				want := true
				for _, d := range tc.dropped {
					if d == k {
						want = false
					}
				}
				if ok != want {
					t.Errorf("key %d present=%v, want %v", k, ok, want)
				}
			}
			if v, ok := tb.get(99); !ok || v != "new" {
				t.Fatal("the new entry is missing")
			}
		})
	}
}
