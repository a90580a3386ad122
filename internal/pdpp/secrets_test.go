package pdpp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/redact"
)

// leakyMembers are secret-like members in the spellings an RS might use,
// each holding a value marked LEAK (as a string, inside an object, in an
// array); tag makes every value unique to its place.
func leakyMembers(tag string) string {
	return fmt.Sprintf(`,"Secret":"LEAK-%[1]s-1","SECRET":"LEAK-%[1]s-2","signing_secret":"LEAK-%[1]s-3",`+
		`"secrets":["LEAK-%[1]s-4",{"v":"LEAK-%[1]s-5"}],"clientSecretHash":{"v":"LEAK-%[1]s-6"},`+
		`"s\u0065cret":"LEAK-%[1]s-7","ſecret":"LEAK-%[1]s-8","nested":{"deeper":[{"webhook_secret":"LEAK-%[1]s-9","keep":1}]}`, tag)
}

// leakyRS is an RS whose every answer, success or error, carries
// secret-like members; the create answer also has the signing secret.
func leakyRS() http.Handler {
	sub := func(id string) string {
		return `{"object":"event_subscription","subscription_id":"` + id + `","status":"active","callback_url":"https://hooks.example.com/a",` +
			`"scope":{"streams":[{"name":"notes","connection_id":"cin_a"}]` + leakyMembers("scope-"+id) + `},"created_at":"2026-01-01T00:00:00Z"` + leakyMembers("sub-"+id) + `}`
	}
	record := func(id string) string {
		return `{"object":"record","id":"` + id + `","stream":"notes","connection_id":"cin_a","data":{"body":"text of ` + id + `"` + leakyMembers("data-"+id) + `}` + leakyMembers("rec-"+id) + `}`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		p := r.URL.Path
		switch {
		case p == "/v1/schema":
			fmt.Fprintf(w, `{"object":"schema","bearer":{"token_kind":"client"},"connectors":[{"connector_id":"c1","streams":[{"name":"notes"%s}],"granted_connections":[{"connection_id":"cin_a"%s}]%s}]%s}`,
				leakyMembers("schema-stream"), leakyMembers("schema-conn"), leakyMembers("schema-connector"), leakyMembers("schema"))
		case p == "/.well-known/oauth-protected-resource":
			fmt.Fprintf(w, `{"resource":"x","capabilities":{"client_event_subscriptions":{"supported":true,"endpoint":"/v1/event-subscriptions","signing":{"profile":"standard-webhooks"%s},"delivery":{"semantics":"at-least-once"%s}%s}}}`,
				leakyMembers("adv-signing"), leakyMembers("adv-delivery"), leakyMembers("adv"))
		case p == "/v1/event-subscriptions" && r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			// Every spelling but the exact "secret" at the top, which is the
			// signing secret itself.
			fmt.Fprintf(w, `{"subscription_id":"sub_1","secret":"whsec_SHOWNONCE","status":"pending_verification","callback_url":"https://hooks.example.com/a","created_at":"2026-01-01T00:00:00Z",`+
				`"Secret":"LEAK-create-1","signing_secret":"LEAK-create-2","secrets":["LEAK-create-3"],"scope":{"x":1%s}}`, leakyMembers("create"))
		case p == "/v1/event-subscriptions":
			fmt.Fprintf(w, `{"object":"list","data":[%s,%s]%s}`, sub("sub_1"), sub("sub_2"), leakyMembers("list"))
		case strings.HasSuffix(p, "/test-event"):
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"event_id":"evt_1"%s}`, leakyMembers("event"))
		case strings.HasPrefix(p, "/v1/event-subscriptions/") && r.Method == http.MethodPatch:
			fmt.Fprintf(w, `{"subscription":%s}`, sub("sub_1"))
		case strings.HasPrefix(p, "/v1/event-subscriptions/") && r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case strings.HasPrefix(p, "/v1/event-subscriptions/"):
			fmt.Fprint(w, sub("sub_1"))
		case strings.HasPrefix(p, "/v1/streams/refused"):
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","code":"invalid_request","message":"refused"%s}%s}`, leakyMembers("error"), leakyMembers("envelope"))
		case strings.HasPrefix(p, "/v1/search"):
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"search_result","record_key":"n1","stream":"notes","connection_id":"cin_a","matched_fields":["body"],"snippet":{"field":"body","text":"<mark>needle</mark>"},"evidence_excerpts":[{"field_path":"body","preview_text":"needle","truncated":false%s}]%s}],"has_more":false,"next_cursor":null%s}`,
				leakyMembers("excerpt"), leakyMembers("hit"), leakyMembers("search"))
		case strings.HasSuffix(p, "/aggregate"):
			fmt.Fprintf(w, `{"object":"aggregation","stream":"notes","metric":"count","value":3%s}`, leakyMembers("agg"))
		case strings.HasSuffix(p, "/field-window"):
			fmt.Fprint(w, `{"object":"field_window","record_id":"n1","connection_id":"cin_a","stream":"notes","field":{"path":"body","type":"string"},`+
				`"window":{"text":"text of n1","start_chars":0,"end_chars":10,"total_chars":10,"limit_chars":4096,"complete":true,"has_more":false`+leakyMembers("window")+`}`+leakyMembers("fw")+`}`)
		case strings.HasSuffix(p, "/records"):
			fmt.Fprintf(w, `{"object":"list","data":[%s,%s],"has_more":false,"next_cursor":null,"meta":{"count":2%s}%s}`, record("n1"), record("n2"), leakyMembers("meta"), leakyMembers("list"))
		case strings.Contains(p, "/records/"):
			fmt.Fprint(w, record("n1"))
		case strings.HasPrefix(p, "/v1/streams/"):
			fmt.Fprintf(w, `{"object":"stream","name":"notes"%s}`, leakyMembers("stream"))
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"type":"not_found_error","code":"not_found","message":"no route"%s}}`, leakyMembers("404"))
		}
	})
}

// TestNoSecretLikeMemberReachesAClient calls every event-subscription tool
// (the RS's control plane, where it keeps signing secrets), in compact and
// full detail, and a data tool the RS refuses, against an RS that puts
// secret-like members in every answer and error: no such member, and no
// value of one, reaches the client in content[] or structuredContent,
// except the create reply's signing secret, shown once. Record data is
// the person's granted data and is shown as granted
// (TestRecordDataIsShownAsGranted); the full replies of the data tools
// below carry the RS's members as it sent them.
func TestNoSecretLikeMemberReachesAClient(t *testing.T) {
	h := newHarness(t, leakyRS(), tokClient)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"query_records", map[string]any{"stream": "refused"}},
		{"discover_event_subscription_capabilities", nil},
		{"list_event_subscriptions", nil},
		{"get_event_subscription", map[string]any{"subscription_id": "sub_1"}},
		{"update_event_subscription", map[string]any{"subscription_id": "sub_1", "enabled": false}},
		{"send_test_event", map[string]any{"subscription_id": "sub_1"}},
		{"delete_event_subscription", map[string]any{"subscription_id": "sub_1"}},
	}
	detailed := map[string]bool{"query_records": true, "search": true, "fetch": true, "read_record_field": true,
		"discover_event_subscription_capabilities": true, "list_event_subscriptions": true, "get_event_subscription": true}
	check := func(t *testing.T, what string, raw json.RawMessage) {
		t.Helper()
		if strings.Contains(string(raw), "LEAK") {
			i := strings.Index(string(raw), "LEAK")
			t.Errorf("%s shows a secret-like member's value: …%s…", what, raw[max(0, i-120):min(len(raw), i+40)])
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if redact.Has(v) {
			t.Errorf("%s has a secret-like member name: %.600s", what, raw)
		}
	}
	for _, c := range calls {
		for _, detail := range []string{"compact", "full"} {
			if detail == "full" && !detailed[c.tool] {
				continue
			}
			args := map[string]any{}
			for k, v := range c.args {
				args[k] = v
			}
			if detailed[c.tool] {
				args["detail"] = detail
			}
			name := c.tool + "/" + detail + "/" + mustJSON(c.args)
			t.Run(name, func(t *testing.T) {
				raw := h.rawRequest("tools/call", map[string]any{"name": c.tool, "arguments": args})
				check(t, name, raw)
				var res struct {
					IsError bool `json:"isError"`
				}
				_ = json.Unmarshal(raw, &res)
				if wantErr := c.args["stream"] == "refused"; res.IsError != wantErr {
					t.Errorf("isError = %v, want %v: %.400s", res.IsError, wantErr, raw)
				}
			})
		}
	}
	t.Run("create shows the signing secret once", func(t *testing.T) {
		raw := h.rawRequest("tools/call", map[string]any{"name": "create_event_subscription", "arguments": map[string]any{"callback_url": "https://hooks.example.com/a"}})
		var res struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
			Content           []any          `json:"content"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
			t.Fatalf("create failed: %s", raw)
		}
		if res.StructuredContent["secret"] != "whsec_SHOWNONCE" {
			t.Errorf("create lost the signing secret: %s", raw)
		}
		if strings.Contains(mustJSON(res.Content), "whsec_") {
			t.Errorf("content[] shows the signing secret: %s", mustJSON(res.Content))
		}
		delete(res.StructuredContent, "secret")
		check(t, "create (without its signing secret)", json.RawMessage(mustJSON(res)))
	})
	t.Run("record data passes as the RS sent it", func(t *testing.T) {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"query_records", map[string]any{"stream": "notes", "detail": "full"}},
			{"fetch", map[string]any{"id": "cin_a/notes:n1", "detail": "full"}},
			{"schema", map[string]any{"stream": "notes", "detail": "full"}},
		} {
			raw := string(h.rawRequest("tools/call", map[string]any{"name": c.tool, "arguments": c.args}))
			for _, want := range []string{"LEAK-data-n1-3", "LEAK-rec-n1-9"} {
				if c.tool == "schema" {
					want = strings.Replace(want, "data-n1", "schema-stream", 1)
					want = strings.Replace(want, "rec-n1", "schema", 1)
				}
				if !strings.Contains(raw, want) {
					t.Errorf("%s full does not carry %s as the RS sent it: %.400s", c.tool, want, raw)
				}
			}
		}
	})
}

// grantedRecordRS serves one record n1 of stream notes whose fields have
// secret-like and credential-like names (secret_note, a nested
// meta.api_secret, token, password, api_key, signing_key), as a records
// page, a record, search hits whose proven excerpts are in those fields,
// and field windows of them.
func grantedRecordRS(values map[string]string) http.Handler {
	data := `{"body":"plain text","secret_note":` + mustJSON(values["secret_note"]) +
		`,"meta":{"api_secret":` + mustJSON(values["meta.api_secret"]) + `,"kind":1},"token":` + mustJSON(values["token"]) +
		`,"password":` + mustJSON(values["password"]) + `,"api_key":` + mustJSON(values["api_key"]) + `,"signing_key":` + mustJSON(values["signing_key"]) + `}`
	record := `{"object":"record","id":"n1","stream":"notes","connection_id":"cin_a","data":` + data + `}`
	return faultyRS(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, "/v1/search"):
			var hits []string
			for _, f := range []string{"secret_note", "meta.api_secret", "token", "password"} {
				hits = append(hits, `{"object":"search_result","record_key":"n1","stream":"notes","connection_id":"cin_a","matched_fields":[`+mustJSON(f)+`],`+
					`"evidence_excerpts":[{"field_path":`+mustJSON(f)+`,"preview_text":`+mustJSON("<mark>"+values[f]+"</mark>")+`,"truncated":false}]}`)
			}
			fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":false,"next_cursor":null}`, strings.Join(hits, ","))
		case strings.HasSuffix(p, "/field-window"):
			f := r.URL.Query().Get("field")
			v := values[f]
			fmt.Fprintf(w, `{"object":"field_window","record_id":"n1","connection_id":"cin_a","stream":"notes","field":{"path":%s,"type":"string"},`+
				`"window":{"text":%s,"start_chars":0,"end_chars":%d,"total_chars":%d,"limit_chars":4096,"complete":true,"has_more":false}}`,
				mustJSON(f), mustJSON(v), len(v), len(v))
		case strings.HasSuffix(p, "/records"):
			fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":false,"next_cursor":null}`, record)
		case strings.Contains(p, "/records/"):
			fmt.Fprint(w, record)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"type":"not_found_error","code":"not_found","message":"no route"}}`)
		}
	})
}

// TestRecordDataIsShownAsGranted: a record's fields are the person's own
// granted data, shown as granted whatever their names. fetch,
// query_records, search and read_record_field, compact and full, show a
// field secret_note, a nested meta.api_secret, token and password alike
// (fetch and query_records api_key and signing_key too), in content[]
// text and in structuredContent; no reply withholds a field and then
// claims the whole record was shown.
func TestRecordDataIsShownAsGranted(t *testing.T) {
	values := map[string]string{
		"secret_note": "NOTE-7f3a", "meta.api_secret": "APISECRET-19c2", "token": "TOKEN-55e1",
		"password": "PASSWORD-b804", "api_key": "APIKEY-2d6e", "signing_key": "SIGNKEY-a9f0",
	}
	h := newHarness(t, grantedRecordRS(values), tokClient)
	all := []string{"secret_note", "meta.api_secret", "token", "password", "api_key", "signing_key"}
	four := all[:4]
	type call struct {
		tool string
		args map[string]any
		// fields are the fields whose values the reply shows.
		fields []string
	}
	var calls []call
	for _, detail := range []string{"compact", "full"} {
		calls = append(calls,
			call{"fetch", map[string]any{"id": "cin_a/notes:n1", "detail": detail}, all},
			call{"query_records", map[string]any{"stream": "notes", "detail": detail}, all},
			call{"search", map[string]any{"q": "needle", "detail": detail}, four})
		for _, f := range four {
			calls = append(calls, call{"read_record_field", map[string]any{"id": "cin_a/notes:n1", "field_path": f, "detail": detail}, []string{f}})
		}
	}
	for _, c := range calls {
		t.Run(c.tool+" "+mustJSON(c.args), func(t *testing.T) {
			r := h.mustOK(t, c.tool, c.args)
			for _, f := range c.fields {
				// read_record_field's compact window text is in content[]
				// only (structured output points at it).
				if !strings.Contains(r.RawStruct+r.Text, values[f]) {
					t.Errorf("the reply does not show %s: %.600s\n%s", f, r.RawStruct, r.Text)
				}
				if c.args["detail"] == "compact" && !strings.Contains(r.Text, values[f]) {
					t.Errorf("content[] text does not show %s:\n%s", f, r.Text)
				}
			}
			if strings.Contains(strings.ToLower(r.Text+r.RawStruct), "withheld") {
				t.Errorf("a field is withheld: %s", r.Text)
			}
			if c.tool == "fetch" && c.args["detail"] == "full" && !redact.Has(r.Structured) {
				t.Errorf("fetch full lost the record's secret-like members: %.600s", r.RawStruct)
			}
		})
	}
}
