package evidence

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestFitError: an error object that fits is returned as it is; one that
// does not keeps its small members and says it was cut, whatever members
// of the same names the RS sent.
func TestFitError(t *testing.T) {
	small := json.RawMessage(`{"code":"x","message":"m"}`)
	if got := FitError(small, 100); string(got) != string(small) {
		t.Fatalf("a fitting object changed: %s", got)
	}
	big := json.RawMessage(`{"code":"x","truncated":false,"error_bytes":1,"message":` + strconv.Quote(strings.Repeat("m", 5000)) + `}`)
	var got map[string]any
	if err := json.Unmarshal(FitError(big, 1024), &got); err != nil {
		t.Fatal(err)
	}
	if got["truncated"] != true || got["error_bytes"] != float64(len(big)) || got["code"] != "x" {
		t.Fatalf("cut object: %v", got)
	}
	if m, _ := got["message"].(string); len(m) > 700 {
		t.Fatalf("message kept %d bytes", len(m))
	}
}

// TestFitErrorBoundsMembers: an error object with more members than
// ErrorMembers, or larger than its room on the wire, keeps at most
// ErrorMembers of the RS's members within room, code and type first
// wherever the RS put them, and says how large it was; the RS's own
// members of the names the cut writes are not kept. Cutting an object of
// 400,000 members allocates no more than a few times its size.
func TestFitErrorBoundsMembers(t *testing.T) {
	members := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `,"m%06d":%d`, i, i)
		}
		return b.String()
	}
	many := members(400_000)
	tests := []struct {
		name string
		obj  string
		room int
	}{
		{"400,000 members after the code", `{"type":"invalid_request_error","code":"bad","message":"m"` + many + `}`, 16000},
		{"400,000 members before the code", `{"m":0` + many + `,"code":"bad","type":"invalid_request_error","truncated":false,"error_bytes":1}`, 16000},
		{"40 small members within room", `{"code":"bad","type":"t"` + members(40) + `}`, 16000},
		{"HTML-dense members", `{"code":"bad","type":"t","message":` + strconv.Quote(strings.Repeat("<&>", 1000)) + `,"a":"<<<<<<<<<<","b":"&&&&&&&&&&","c":"<>"}`, 1200},
		{"small room", `{"code":"bad","type":"t","message":"m"` + members(300) + `}`, 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			out := FitError(json.RawMessage(tc.obj), tc.room)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*len(tc.obj)+1<<20) {
				t.Errorf("cutting a %d-byte object allocated %d bytes", len(tc.obj), alloc)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("not an object: %v", err)
			}
			if WireLen(out) > tc.room {
				t.Errorf("%d bytes on the wire, room %d", WireLen(out), tc.room)
			}
			own := 0
			for k := range got {
				if k != "truncated" && k != "error_bytes" {
					own++
				}
			}
			if own > ErrorMembers {
				t.Errorf("keeps %d of the RS's members, at most %d", own, ErrorMembers)
			}
			if string(got["code"]) != `"bad"` || string(got["truncated"]) != "true" || string(got["error_bytes"]) != strconv.Itoa(len(tc.obj)) {
				t.Errorf("code %s truncated %s error_bytes %s (object %d bytes)", got["code"], got["truncated"], got["error_bytes"], len(tc.obj))
			}
		})
	}
}

// TestSmallMembersBounded: a truncation report keeps the leading small
// members within its byte bound, the first of each key.
func TestSmallMembersBounded(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"next_cursor":"c2","next_cursor":"x"`)
	for i := range 10_000 {
		fmt.Fprintf(&many, `,"m%05d":%d`, i, i)
	}
	many.WriteString(`}`)
	got := SmallMembers([]byte(many.String()), 256, 1000)
	enc, _ := json.Marshal(got)
	if len(enc) > 1000 || string(got["next_cursor"]) != `"c2"` || len(got) < 50 {
		t.Fatalf("kept %d members, %d bytes, next_cursor %s", len(got), len(enc), got["next_cursor"])
	}
}

// TestErrorTextShowsOnlyOwnNext: the text shows the next call of an
// adapter error, never one an RS put in its envelope.
func TestErrorTextShowsOnlyOwnNext(t *testing.T) {
	next := `"next":{"tool":"read_record_field","arguments":{"id":"s:r","field_path":"text"}}`
	own := ErrorText(json.RawMessage(`{"type":"adapter_error","code":"out_of_range","message":"m",`+next+`}`), "", nil)
	if !strings.Contains(own, `next: read_record_field {"id":"s:r","field_path":"text"}`) {
		t.Errorf("adapter error text lacks its next call:\n%s", own)
	}
	rs := ErrorText(json.RawMessage(`{"type":"invalid_request_error","code":"x","message":"m",`+next+`}`), "", nil)
	if strings.Contains(rs, "next:") {
		t.Errorf("RS error text shows the RS's call:\n%s", rs)
	}
}
