package benchmarks

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestFloorPassesTheRSBodyThrough checks the floor the ratios are set
// against: for every workload call its tool sends the RS the direct request
// once and answers with exactly the body the direct call reads, in
// structuredContent.data.
func TestFloorPassesTheRSBodyThrough(t *testing.T) {
	var rec recorder
	rsURL := startRS(t, rec.wrap)
	direct := directClient(t, rsURL)
	floor, _ := floorInProcess(t, rsURL)
	for _, call := range Workload() {
		t.Run(call.Name, func(t *testing.T) {
			rec.take()
			res, err := callTool(floor, Call{Name: call.Name, Tool: FloorTool(call)})
			if err != nil {
				t.Fatal(err)
			}
			viaFloor := rec.take()
			_, body, err := call.Direct(t.Context(), direct)
			if err != nil {
				t.Fatal(err)
			}
			viaDirect := rec.take()
			if len(viaFloor) != 1 || len(viaDirect) != 1 || viaFloor[0].path != viaDirect[0].path ||
				viaFloor[0].query.Encode() != viaDirect[0].query.Encode() || viaFloor[0].auth != viaDirect[0].auth {
				t.Fatalf("floor sent %v, direct sent %v: want the same single request", viaFloor, viaDirect)
			}
			var got struct {
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(res.RawStructuredContent, &got); err != nil {
				t.Fatalf("structuredContent %.200s: %v", res.RawStructuredContent, err)
			}
			// The same JSON value: encoding/json re-encodes the body on the
			// way out (HTML-escaping <, > and &), so the bytes may differ.
			if a, b := decodeValue(t, got.Data), decodeValue(t, body); !reflect.DeepEqual(a, b) {
				t.Errorf("structuredContent.data (%d bytes) is not the RS body (%d bytes)", len(got.Data), len(body))
			}
		})
	}
}

func decodeValue(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%.200s: %v", b, err)
	}
	return v
}
