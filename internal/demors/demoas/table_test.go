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
			tb := newTable[int, string](len(tc.untils), 0, nil)
			for k, u := range tc.untils {
				tb.putFor("", k, "v", t0.Add(u), t0)
			}
			tb.putFor("", 99, "new", t0.Add(time.Hour), t0.Add(tc.now))
			if len(tb.rows) > len(tc.untils) {
				t.Fatalf("%d entries, bound %d", len(tb.rows), len(tc.untils))
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

// TestTableOwners: an owner at its bound loses its own droppable entries,
// then its own oldest, never another owner's; a table that keeps live
// entries refuses a newcomer when full of them and takes it once one is
// stale.
func TestTableOwners(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	live := map[int]bool{}
	tb := newTable[int](4, 2, func(v int, _ time.Time) bool { return !live[v] })
	put := func(owner string, k int) bool {
		live[k] = true
		return tb.putFor(owner, k, k, t0.Add(time.Hour), t0)
	}
	has := func(keys ...int) {
		t.Helper()
		for _, k := range keys {
			if _, ok := tb.get(k); !ok {
				t.Fatalf("key %d was dropped", k)
			}
		}
	}
	put("a", 1)
	put("b", 2)
	put("b", 3)
	put("b", 4) // b at its bound: its own oldest (2) goes
	if _, ok := tb.get(2); ok {
		t.Fatal("the owner's oldest entry stayed past its bound")
	}
	has(1, 3, 4)
	put("c", 5) // 4 entries now: 1, 3, 4, 5
	if put("d", 6) {
		t.Fatal("a full table of live entries took a newcomer")
	}
	has(1, 3, 4, 5)
	live[3] = false // stale
	if !put("d", 6) {
		t.Fatal("a stale entry did not make room")
	}
	has(1, 4, 5, 6)
	if len(tb.owned) != 4 || tb.owned["b"] != 1 {
		t.Fatalf("owner counts %v", tb.owned)
	}
}
