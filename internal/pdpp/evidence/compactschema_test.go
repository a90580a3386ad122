package evidence

import "testing"

// TestCompactSchema: the projection of a full schema document keeps every
// member it does not change as the RS wrote it (numbers, member order),
// keeps of each stream its name, primary key and expand relations, and
// leaves a document with a connector that is not an object as it came.
func TestCompactSchema(t *testing.T) {
	body := `{"object":"schema","meta":{"n":1e3},"connectors":[{"connector_id":"a<b>",` +
		`"streams":[{"name":"s","freshness":{"x":1},"granted_connections":[{"connection_id":"c"}],` +
		`"field_capabilities":{"z":"role=x","a":{"type":"string","schema":{"maxLength":1.50}},"b":{"granted":false}}},` +
		`{"name":"t","primary_key":["id"],"expand_capabilities":[{"name":"r"}]}]}],"stream_count":2}`
	want := `{"connectors":[{"streams":[` +
		`{"expand_capabilities":null,"field_capabilities":{"a":"","b":"not granted","z":"role=x"},"name":"s"},` +
		`{"expand_capabilities":[{"name":"r"}],"field_capabilities":{},"name":"t","primary_key":["id"]}],` +
		`"connector_id":"a<b>"}],"detail":"compact","object":"schema","meta":{"n":1e3},"stream_count":2}`
	if got := string(CompactSchema([]byte(body))); got != want {
		t.Errorf("projection:\n got %s\nwant %s", got, want)
	}
	for _, bad := range []string{`{"object":"schema","connectors":[null]}`, `[1]`, `{"connectors":[{"streams":[7]}]}`} {
		if got := string(CompactSchema([]byte(bad))); got != bad {
			t.Errorf("CompactSchema(%s) = %s, want it unchanged", bad, got)
		}
	}
}
