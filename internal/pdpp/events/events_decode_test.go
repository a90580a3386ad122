package events

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

var decodeCases = []string{
	`{}`, `{"subscription_id":"s1","status":"active","callback_url":"https://x.example/h"}`,
	`{"status":"a","status":"b"}`, `{"st\u0061tus":"é","subscription_id":5}`, `{"data":[{"a":1},{"b":[2]}]}`,
	` {"data" : [ ] } `, `{"data":null}`, `{"data":{}}`, `[{"a":1}]`, `"x"`, `{"a":1}x`, `{"a":`,
	"{\"status\":\"\xff\"}", `{"status":"\ud800"}`, `{"capabilities":{"client_event_subscriptions":{"event_types":["a"]}}}`,
}

// FuzzDecodeSubscription holds the readers of subscription answers to
// encoding/json's answers: decodeObject to the members a decode into a map
// of raw values keeps and to the strings among them, and subscriptionItems
// to a decode of its data list (and its object member a string, as the
// generated model reads it), each item read as decodeObject reads it. Its
// seeds run as a unit test.
func FuzzDecodeSubscription(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var members map[string]json.RawMessage
		isObject := jsontext.Value(raw).Kind() == '{' && json.Unmarshal(raw, &members) == nil
		obj, ok := decodeObject(raw)
		if ok != isObject {
			t.Fatalf("decodeObject(%q) ok = %t; encoding/json finds an object: %t", raw, ok, isObject)
		}
		if ok && !obj.stub {
			if len(obj.members) != len(members) {
				t.Fatalf("decodeObject(%q) has %d members; encoding/json finds %d", raw, len(obj.members), len(members))
			}
			for k, v := range members {
				if got, ok := obj.members[k]; !ok || !bytes.Equal(got, bytes.TrimSpace(v)) {
					t.Fatalf("decodeObject(%q) member %q = %s; encoding/json finds %s", raw, k, got, v)
				}
			}
		}
		str := func(key string) string {
			var s string
			_ = json.Unmarshal(members[key], &s)
			return s
		}
		id, status, callback := obj.str("subscription_id"), obj.str("status"), obj.str("callback_url")
		if id != str("subscription_id") || status != str("status") || callback != str("callback_url") {
			t.Fatalf("decodeObject(%q) strings = %q %q %q; encoding/json finds %q %q %q", raw, id, status, callback,
				str("subscription_id"), str("status"), str("callback_url"))
		}
		items, err := subscriptionItems(raw)
		var want []json.RawMessage
		wantErr := !isObject || members["data"] == nil || json.Unmarshal(members["data"], &want) != nil || want == nil
		for _, item := range want {
			wantErr = wantErr || jsontext.Value(item).Kind() != '{'
		}
		// The envelope's object member is a string (rsclient.EventSubscriptionList).
		if k := jsontext.Value(members["object"]).Kind(); k != 0 && k != '"' && k != 'n' {
			wantErr = true
		}
		if (err != nil) != wantErr || (err == nil && len(items) != len(want)) {
			t.Fatalf("subscriptionItems(%q) = %d items, %v; encoding/json finds %d, error %t", raw, len(items), err, len(want), wantErr)
		}
		for i := range items {
			if !bytes.Equal(items[i].raw, bytes.TrimSpace(want[i])) {
				t.Fatalf("subscriptionItems(%q) item %d = %s; encoding/json finds %s", raw, i, items[i].raw, want[i])
			}
			if o, _ := decodeObject(items[i].raw); !maps.EqualFunc(o.members, items[i].members, func(a, b jsontext.Value) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("subscriptionItems(%q) item %d has members %q; decodeObject reads %q", raw, i, items[i].members, o.members)
			}
		}
	})
}
