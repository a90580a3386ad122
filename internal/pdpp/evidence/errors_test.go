package evidence

import (
	"encoding/json"
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
