package evidence

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// decodedCompact is what rendering showed of a JSON value before the
// walk: MarshalNoEscape of its decoded form, or the value as it stands
// when encoding/json cannot decode it. The summary must agree with it.
func decodedCompact(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := MarshalNoEscape(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

var summarySeeds = []string{
	`{}`, `[]`, `[{},{},{}]`, `{"b":1,"a":2}`, `{"a":1,"a":2,"b":{"d":[1,2],"c":null}}`,
	`{"k\u0065y":1,"key":2}`, `{"\u00e9":"x","e":"y","z":"é"}`, `[1.0, 1e3, -0, 0.000001, 1e-7, 1e21, 123456789012345678901234]`,
	`[1e999]`, `{"a":[1, 2, 1e400]}`, `["<&>", "\u2028", "a\"b\\c\n\t\u0001"]`, "[\"\xff\xfe\"]", `{"\ud800":1,"\ufffd":2}`,
	`[true,false,null,{"x":[[],{}]}]`, ` [ 1 , { "a" : "b" } ] `, `{"z":{"y":{"x":{"w":{}}}}}`,
}

// TestSummarizeJSONMatchesDecoder: at every limit, a complete summary is
// exactly what re-encoding the decoded value writes, and a cut one is a
// prefix of it longer than the limit.
func TestSummarizeJSONMatchesDecoder(t *testing.T) {
	big := "[" + strings.Repeat(`{"b":2,"a":[1.50,"x"]},`, 400) + "{}]"
	for _, s := range append(summarySeeds, big) {
		want := decodedCompact([]byte(strings.TrimSpace(s)))
		for _, limit := range []int{0, 3, 10, 100, len(want), 1 << 20} {
			t.Run("", func(t *testing.T) { checkSummary(t, []byte(s), limit, want) })
		}
	}
}

func checkSummary(t *testing.T, raw []byte, limit int, want string) {
	t.Helper()
	sum := summarizeJSON(raw, limit)
	got := string(sum.compact)
	switch {
	case sum.complete && got != want:
		t.Errorf("%.80q limit %d: complete summary %.120q, decoder %.120q", raw, limit, got, want)
	case !sum.complete && (!strings.HasPrefix(want, got) || len(got) <= limit):
		t.Errorf("%.80q limit %d: cut summary %.120q is not a prefix of %.120q past the limit", raw, limit, got, want)
	}
}

// TestHugeJSONIsDescribed: a value over HugeJSONBytes is counted (up to
// MaxCountedItems) and previewed as the RS wrote it, white space left out.
func TestHugeJSONIsDescribed(t *testing.T) {
	for _, tc := range []struct {
		name, raw, kind, preview string
		count                    int
		capped                   bool
	}{
		{"array of empty objects", "[" + strings.Repeat("{}, ", 30_000) + "{}]", "array, 30001 elements", "[{},{},{},{},", 30_001, false},
		{"object", "{" + strings.Repeat(`"k" : [1] ,`, 8_000) + `"z":0}`, "object, 8001 members", `{"k":[1],"k":`, 8_001, false},
		{"past the count bound", "[" + strings.Repeat("0,", MaxCountedItems) + "0]", "array, more than 1000000 elements", "[0,0,0,0,0,0,", MaxCountedItems, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := summarizeJSON([]byte(tc.raw), 13)
			if !sum.huge || sum.complete || sum.count != tc.count || sum.countCapped != tc.capped {
				t.Fatalf("summary huge %v complete %v count %d capped %v", sum.huge, sum.complete, sum.count, sum.countCapped)
			}
			if got := sum.describe(tc.raw[0]); got != tc.kind {
				t.Errorf("describe = %q, want %q", got, tc.kind)
			}
			if got := sum.preview(13); got != tc.preview+Ellipsis {
				t.Errorf("preview = %q, want %q", got, tc.preview+Ellipsis)
			}
		})
	}
}

// Allocation bounds of rendering one value: per input byte, and a fixed
// allowance for the view, the continuation and the preview.
const (
	allocPerByte = 8
	allocFixed   = 32 << 10
)

// renderAlloc is the bytes allocated by rendering raw as a record field,
// in text (DescribeField) and compact structured output (compactValue).
func renderAlloc(raw []byte) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fv := describeField("cin_a/notes:n1", "f", raw, FieldValueChars, nil)
	v, _ := compactValue("cin_a/notes:n1", "f", raw, FieldValueChars, nil)
	runtime.ReadMemStats(&after)
	if fv.Line == "" || len(v) == 0 {
		panic("no rendering")
	}
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzRenderValueAlloc: rendering any valid JSON object or array as a
// field allocates at most allocPerByte bytes per input byte plus
// allocFixed, and a value under HugeJSONBytes renders as encoding/json's
// re-encoding would (its prefix when cut). Decoding into Go values, which
// this replaces, takes 17-100 bytes per input byte.
func FuzzRenderValueAlloc(f *testing.F) {
	for _, s := range summarySeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("[" + strings.Repeat("{},", 3000) + "{}]"))
	f.Add([]byte("{" + strings.Repeat(`"a":0,`, 2000) + `"b":1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		if c := strings.TrimSpace(string(raw)); c == "" || (c[0] != '{' && c[0] != '[') {
			return
		}
		if len(raw) <= HugeJSONBytes {
			checkSummary(t, raw, previewLimit(FieldValueChars), decodedCompact([]byte(strings.TrimSpace(string(raw)))))
		}
		renderAlloc(raw) // warm: first-use allocations are not the input's
		// The least of three runs: a background allocation (the fuzz
		// engine, the GC) lands in one of them, not in all.
		got := renderAlloc(raw)
		for range 2 {
			got = min(got, renderAlloc(raw))
		}
		if limit := uint64(allocPerByte*len(raw) + allocFixed); got > limit {
			t.Fatalf("%.80q (%d bytes): rendering allocated %d bytes, bound %d", raw, len(raw), got, limit)
		}
	})
}

// TestRenderValueAllocIsBounded runs the fuzz target's bound on values
// built to be costly to decode: deep nesting, many empty objects, many
// small members, over and under HugeJSONBytes.
func TestRenderValueAllocIsBounded(t *testing.T) {
	members := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k`)
			b.WriteString(strings.Repeat("x", i%7))
			b.WriteString(`":{}`)
		}
		return b.String() + "}"
	}
	for _, tc := range []struct{ name, raw string }{
		{"2 MB array of empty objects", "[" + strings.Repeat("{},", 700_000) + "{}]"},
		{"60 KB array of empty objects", "[" + strings.Repeat("{},", 20_000) + "{}]"},
		{"100k-member object", members(100_000)},
		{"5k-member object", members(5_000)},
		{"nested arrays", strings.Repeat("[", 9000) + strings.Repeat("]", 9000)},
		{"nested objects", strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			renderAlloc(raw)
			got := renderAlloc(raw)
			if limit := uint64(allocPerByte*len(raw) + allocFixed); got > limit {
				t.Errorf("%d bytes: rendering allocated %d bytes (%.1f per byte), bound %d", len(raw), got, float64(got)/float64(len(raw)), limit)
			}
			t.Logf("%d bytes: %d allocated (%.2f per byte)", len(raw), got, float64(got)/float64(len(raw)))
		})
	}
}

// TestSchemaItemsAreBounded: a schema document whose lists hold more than
// MaxSchemaItems items together is refused before decoding (RenderSchema
// errs, AllRoles and ExpandCapabilities find nothing), allocating little;
// one within the bound renders.
func TestSchemaItemsAreBounded(t *testing.T) {
	stream := `{"name":"s","expand_capabilities":[],"granted_connections":[{"connection_id":"c"}]}`
	ok := []byte(`{"object":"schema","connectors":[{"connector_key":"k","streams":[` + stream + `]}]}`)
	if _, err := RenderSchema(ok); err != nil {
		t.Fatalf("a small schema is refused: %v", err)
	}
	for _, tc := range []struct{ name, body string }{
		{"connectors", `{"object":"schema","connectors":[` + strings.Repeat("{},", MaxSchemaItems) + "{}]}"},
		{"streams", `{"object":"schema","connectors":[{"streams":[` + strings.Repeat("{},", MaxSchemaItems) + "{}]}]}"},
		{"escaped key", `{"object":"schema","conn\u0065ctors":[` + strings.Repeat("{},", MaxSchemaItems) + "{}]}"},
		{"relations of many streams", `{"object":"schema","connectors":[{"streams":[` + strings.Repeat(`{"expand_capabilities":[`+strings.Repeat("{},", 999)+"{}]},", 100) + "{}]}]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := RenderSchema(body)
			roles := AllRoles(body)
			_, found := ExpandCapabilities(body, "s")
			runtime.ReadMemStats(&after)
			if err == nil || roles != nil || found {
				t.Errorf("not refused: err %v, roles %v, found %v", err, roles, found)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(body)) {
				t.Errorf("refusing a %d-byte schema allocated %d bytes", len(body), alloc)
			}
		})
	}
}
