package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var decodeCases = []string{
	`{}`, `{"subscription_id":"s1","status":"active","callback_url":"https://x.example/h"}`,
	`{"status":"a","status":"b"}`, `{"st\u0061tus":"é","subscription_id":5}`, `{"data":[{"a":1},{"b":[2]}]}`,
	` {"data" : [ ] } `, `{"data":null}`, `{"data":{}}`, `[{"a":1}]`, `"x"`, `{"a":1}x`, `{"a":`,
	"{\"status\":\"\xff\"}", `{"status":"\ud800"}`, `{"capabilities":{"client_event_subscriptions":{"event_types":["a"]}}}`,
}

// FuzzDecodeSubscription holds the readers of subscription answers to
// encoding/json's answers: lastMember and subscriptionFields to the
// members a decode into a map of raw values keeps, decodeBoundedObject (on
// an answer small enough to decode whole) to json.Unmarshal, and
// subscriptionItems to a decode of its data list. Its seeds run as a unit
// test.
func FuzzDecodeSubscription(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var members map[string]json.RawMessage
		isObject := isObjectJSON(raw) && json.Unmarshal(raw, &members) == nil
		for _, key := range []string{"status", "data"} {
			got, ok := lastMember(raw, key)
			if ok != isObject || !bytes.Equal(got, bytes.TrimSpace(members[key])) {
				t.Fatalf("lastMember(%q, %s) = %s, %t; encoding/json finds %s, %t", raw, key, got, ok, members[key], isObject)
			}
		}
		str := func(key string) string {
			var s string
			_ = json.Unmarshal(members[key], &s)
			return s
		}
		id, status, callback := subscriptionFields(raw)
		if id != str("subscription_id") || status != str("status") || callback != str("callback_url") {
			t.Fatalf("subscriptionFields(%q) = %q %q %q; encoding/json finds %q %q %q", raw, id, status, callback,
				str("subscription_id"), str("status"), str("callback_url"))
		}
		if len(raw) <= maxDecodedValue {
			got, ok := decodeBoundedObject(raw)
			var want map[string]any
			wantOK := json.Unmarshal(raw, &want) == nil && want != nil
			if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
				t.Fatalf("decodeBoundedObject(%q) = %v, %t; json.Unmarshal finds %v, %t", raw, got, ok, want, wantOK)
			}
		}
		items, err := subscriptionItems(raw)
		want, wantErr := listItemsFallback(bytes.TrimSpace(raw), "subscription list")
		if (err == nil) != (wantErr == nil) || len(items) != len(want) {
			t.Fatalf("subscriptionItems(%q) = %d items, %v; encoding/json finds %d, %v", raw, len(items), err, len(want), wantErr)
		}
		for i := range items {
			if !bytes.Equal(items[i], bytes.TrimSpace(want[i])) {
				t.Fatalf("subscriptionItems(%q) item %d = %s; encoding/json finds %s", raw, i, items[i], want[i])
			}
		}
	})
}
