package pdpp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
)

// eventCallRE finds the events tools' calls shown in content[] text.
var eventCallRE = regexp.MustCompile(`\b(list_event_subscriptions|get_event_subscription|discover_event_subscription_capabilities) (\{)`)

// subsRS is an untrusted RS for the events tools: it answers the
// subscription routes with the bodies it was built with, verbatim, and
// the protected-resource metadata with adv.
type subsRS struct {
	list   []byte            // GET /v1/event-subscriptions
	byID   map[string][]byte // GET /v1/event-subscriptions/{id}
	create []byte            // POST /v1/event-subscriptions
	event  []byte            // POST .../test-event
	adv    []byte            // GET /.well-known/oauth-protected-resource
}

func (s *subsRS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	const prefix = "/v1/event-subscriptions"
	id, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, prefix), "/"), "/")
	switch {
	case r.URL.Path == "/.well-known/oauth-protected-resource":
		_, _ = w.Write(s.adv)
	case r.URL.Path == prefix && r.Method == http.MethodGet:
		_, _ = w.Write(s.list)
	case r.URL.Path == prefix && r.Method == http.MethodPost:
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(s.create)
	case strings.HasSuffix(r.URL.Path, "/test-event"):
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(s.event)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case s.byID[id] == nil:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"type":"not_found_error","code":"not_found","message":"no such subscription"}}`))
	case r.Method == http.MethodPatch:
		_, _ = fmt.Fprintf(w, `{"subscription":%s}`, s.byID[id])
	default:
		_, _ = w.Write(s.byID[id])
	}
}

// subscriptionJSON is one RS subscription object; extra members are
// spliced in as given (already encoded).
func subscriptionJSON(id, callback, extra string) []byte {
	return []byte(fmt.Sprintf(`{"object":"event_subscription","subscription_id":%q,"status":"active","callback_url":%q,"scope":{"streams":[{"name":"notes","connection_id":"cin_a"}]},"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-02T00:00:00Z"%s}`,
		id, callback, extra))
}

// newSubsRS serves subs (as list and one by one), a create answer with
// secret and subscription created, and a test event with id eventID.
func newSubsRS(subs [][]byte, created []byte, eventID, adv string) *subsRS {
	s := &subsRS{byID: map[string][]byte{}, create: created, event: []byte(fmt.Sprintf(`{"event_id":%q}`, eventID)), adv: []byte(adv)}
	items := make([]string, len(subs))
	for i, sub := range subs {
		items[i] = string(sub)
		var m struct {
			ID string `json:"subscription_id"`
		}
		_ = json.Unmarshal(sub, &m)
		s.byID[m.ID] = sub
	}
	s.list = []byte(`{"object":"list","data":[` + strings.Join(items, ",") + `]}`)
	return s
}

// budgetedCall calls tool over MCP and checks the whole serialized result
// fits the catalog's reply budget and validates against its outputSchema.
func budgetedCall(t *testing.T, h *harness, tool string, args map[string]any) callResult {
	t.Helper()
	raw, r := h.rawCall(t, tool, args)
	budget, ok := mcptools.ResultBudgetOf(tool)
	if !ok || budget.Bytes <= 0 {
		t.Fatalf("catalog declares no byte budget for %s", tool)
	}
	if len(raw) > budget.Bytes {
		t.Errorf("%s %s: result is %d bytes, budget %d", tool, mustJSON(args), len(raw), budget.Bytes)
	}
	return r
}

// checkSaysCut asserts a compact result that cut something says so in
// structured output and text, and names the full call in both; it returns
// that call.
func checkSaysCut(t *testing.T, r callResult, wantTool string) callLine {
	t.Helper()
	if r.Structured["truncated"] != true {
		t.Fatalf("%s: result cut nothing or does not say so: %.600s", r.Tool, r.RawStruct)
	}
	tool, args, ok := continuation(r.Structured["full"])
	if !ok || tool != wantTool || args["detail"] != "full" {
		t.Errorf("%s: structured output names no full call of %s: %v", r.Tool, wantTool, r.Structured["full"])
	}
	for _, c := range visibleCallsOf(eventCallRE, r.Text) {
		if c.Tool == tool && c.Args["detail"] == "full" && mustJSON(c.Args) == mustJSON(args) {
			return c
		}
	}
	t.Fatalf("%s: text does not show the full call %s %v:\n%.1500s", r.Tool, tool, args, r.Text)
	return callLine{}
}

// TestEventRepliesFitBudgets answers the events tools from an RS built to
// break their reply budgets (500 subscriptions; one with a 100 KB callback
// URL and a huge extra member; a subscription of 20,000 small members; an
// advertisement with a 100 KB value and 5,000 event types). Every compact
// result stays within its catalog budget, validates against its
// outputSchema, says what it cut, and the calls it shows return the rest;
// detail "full" returns the RS body verbatim.
func TestEventRepliesFitBudgets(t *testing.T) {
	hugeCallback := "https://hooks.example.com/" + strings.Repeat("p", 100_000)
	hugeExtra := `,"notes":` + mustJSON(strings.Repeat("n", 200_000))
	var many strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&many, `,"m%05d":%d`, i, i)
	}
	var types []string
	for i := range 5000 {
		types = append(types, fmt.Sprintf(`{"type":"x.event.%d","description":"kind %d"}`, i, i))
	}
	adv := `{"capabilities":{"client_event_subscriptions":{"supported":true,"endpoint":"/v1/event-subscriptions","event_types":[` +
		strings.Join(types, ",") + `],"signing":{"profile":` + mustJSON(strings.Repeat("s", 100_000)) + `}}}}`
	created := []byte(`{"subscription_id":"sub_huge","secret":"whsec_c2VjcmV0c2VjcmV0c2VjcmV0","status":"pending_verification","callback_url":` +
		mustJSON(hugeCallback) + `,"created_at":"2026-01-01T00:00:00Z"` + hugeExtra + `}`)

	t.Run("500 subscriptions", func(t *testing.T) {
		var subs [][]byte
		for i := range 500 {
			subs = append(subs, subscriptionJSON(fmt.Sprintf("sub_%04d", i), fmt.Sprintf("https://hooks.example.com/pdpp/%d", i), ""))
		}
		rsh := newSubsRS(subs, created, "evt_1", adv)
		h := newHarness(t, faultyRS(rsh.ServeHTTP), tokClient)
		r := budgetedCall(t, h, "list_event_subscriptions", nil)
		if r.Structured["items_total"] != float64(500) {
			t.Errorf("items_total %v, want 500", r.Structured["items_total"])
		}
		shown, _ := r.Structured["subscriptions"].([]any)
		if len(shown) == 0 || len(shown) >= 500 || r.Structured["items_shown"] != float64(len(shown)) {
			t.Fatalf("compact list shows %d subscriptions, says %v", len(shown), r.Structured["items_shown"])
		}
		if !strings.Contains(r.Text, fmt.Sprintf("subscriptions 1-%d of 500 in the list shown with previews", len(shown))) {
			t.Errorf("text does not say how many were left out:\n%.600s", r.Text)
		}
		// The text says what the list offers: no paging or narrowing the
		// route lacks, and each line ends where the next begins.
		if strings.Contains(r.Text, "page or narrow") || strings.Contains(r.Text, "]structured") {
			t.Errorf("text runs lines together or offers what the route lacks:\n%s", r.Text)
		}
		// Every subscription keeps its id, shown or not.
		ids, _ := r.Structured["subscription_ids"].([]any)
		if len(ids) != 500 || ids[0] != "sub_0000" || ids[499] != "sub_0499" {
			t.Errorf("subscription_ids lists %d ids, want all 500 in order", len(ids))
		}
		fullCall := checkSaysCut(t, r, "list_event_subscriptions")
		full := h.mustOK(t, fullCall.Tool, fullCall.Args)
		if !jsonEqual(t, mustRaw(full.Structured["data"]), rsh.list) {
			t.Errorf("full list is not the RS envelope verbatim")
		}
		for i, s := range shown {
			m, _ := s.(map[string]any)
			if !jsonEqual(t, mustRaw(m), subs[i]) {
				t.Fatalf("subscription %d is not whole: %s", i, mustJSON(m))
			}
			got := budgetedCall(t, h, "get_event_subscription", map[string]any{"subscription_id": m["subscription_id"]})
			if !jsonEqual(t, mustRaw(got.Structured["subscription"]), subs[i]) {
				t.Errorf("get %v differs from the listed subscription", m["subscription_id"])
			}
		}
		one, ok := callAfterOf(r.Text, "read one whole: ")
		if !ok || one.Tool != "get_event_subscription" {
			t.Fatalf("no get call in the text:\n%.400s", r.Text)
		}
		h.mustOK(t, one.Tool, one.Args)

		// Walking next from the text visits every subscription once, in
		// the RS's order, each step within the budget.
		var walked []any
		for steps := 0; ; steps++ {
			if steps == 100 {
				t.Fatal("next does not reach the end of the list in 100 steps")
			}
			page, _ := r.Structured["subscriptions"].([]any)
			walked = append(walked, page...)
			next, ok := callAfterOf(r.Text, "next: ")
			if !ok {
				if r.Structured["next"] != nil {
					t.Errorf("structured next without a next line in the text")
				}
				break
			}
			if next.Tool != "list_event_subscriptions" {
				t.Fatalf("next names %s", next.Tool)
			}
			r = budgetedCall(t, h, next.Tool, next.Args)
		}
		if len(walked) != 500 {
			t.Fatalf("walking next visited %d subscriptions, want 500", len(walked))
		}
		for i, s := range walked {
			if !jsonEqual(t, mustRaw(s), subs[i]) {
				t.Fatalf("step item %d is not subscription %d whole: %.200s", i, i, mustJSON(s))
			}
		}
	})

	t.Run("huge callback and member", func(t *testing.T) {
		sub := subscriptionJSON("sub_huge", hugeCallback, hugeExtra)
		rsh := newSubsRS([][]byte{subscriptionJSON("sub_small", "https://hooks.example.com/a", ""), sub}, created, "evt_1", adv)
		h := newHarness(t, faultyRS(rsh.ServeHTTP), tokClient)
		check := func(t *testing.T, r callResult, member string) {
			t.Helper()
			if strings.Contains(r.RawContent, strings.Repeat("p", 1000)) || strings.Contains(r.RawStruct, strings.Repeat("p", 1000)) {
				t.Errorf("%s: the huge callback is inlined", r.Tool)
			}
			s := structuredObject(r.Structured, member)
			p, _ := s["callback_url"].(map[string]any)
			tool, args, ok := continuation(p["next"])
			if p["truncated"] != true || p["chars"] != float64(len(hugeCallback)) || !ok {
				t.Fatalf("%s: callback_url is no bounded preview: %.300s", r.Tool, mustJSON(s["callback_url"]))
			}
			whole := h.mustOK(t, tool, args)
			if !jsonEqual(t, mustRaw(whole.Structured["subscription"]), sub) {
				t.Errorf("%s: the preview's call %s %v does not return the subscription verbatim", r.Tool, tool, args)
			}
		}

		list := budgetedCall(t, h, "list_event_subscriptions", nil)
		subs, _ := list.Structured["subscriptions"].([]any)
		if len(subs) != 2 || list.Structured["values_cut"] == nil {
			t.Fatalf("list keeps %d subscriptions, values_cut %v: %.600s", len(subs), list.Structured["values_cut"], list.RawStruct)
		}
		checkSaysCut(t, list, "list_event_subscriptions")
		check(t, callResult{Tool: "list_event_subscriptions", Structured: map[string]any{"subscription": subs[1]}, RawStruct: list.RawStruct, RawContent: list.RawContent}, "subscription")
		if !strings.Contains(list.Text, `(whole: get_event_subscription {"subscription_id":"sub_huge","detail":"full"})`) &&
			!strings.Contains(list.Text, `(whole: get_event_subscription {"detail":"full","subscription_id":"sub_huge"})`) {
			t.Errorf("the clipped line names no call that shows it whole:\n%.800s", list.Text)
		}

		get := budgetedCall(t, h, "get_event_subscription", map[string]any{"subscription_id": "sub_huge"})
		call := checkSaysCut(t, get, "get_event_subscription")
		check(t, get, "subscription")
		full := h.mustOK(t, call.Tool, call.Args)
		if !jsonEqual(t, mustRaw(full.Structured["subscription"]), sub) || full.Structured["truncated"] != nil {
			t.Errorf("get detail full is not the RS body verbatim")
		}

		upd := budgetedCall(t, h, "update_event_subscription", map[string]any{"subscription_id": "sub_huge", "enabled": false})
		checkSaysCut(t, upd, "get_event_subscription")
		check(t, upd, "subscription")

		cr := budgetedCall(t, h, "create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp"})
		if cr.Structured["secret"] != "whsec_c2VjcmV0c2VjcmV0c2VjcmV0" || strings.Contains(cr.RawContent, "whsec_") {
			t.Errorf("create lost the secret or shows it in text: %.300s", cr.RawStruct)
		}
		checkSaysCut(t, cr, "get_event_subscription")
		check(t, cr, "subscription")

		for _, tool := range []string{"send_test_event", "delete_event_subscription"} {
			budgetedCall(t, h, tool, map[string]any{"subscription_id": "sub_huge"})
		}
	})

	t.Run("binary-like member", func(t *testing.T) {
		b64 := strings.Repeat("QUJDRA", 2000)
		sub := subscriptionJSON("sub_bin", "https://hooks.example.com/b", `,"certificate":`+mustJSON(b64))
		rsh := newSubsRS([][]byte{sub}, created, "evt_1", adv)
		h := newHarness(t, faultyRS(rsh.ServeHTTP), tokClient)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"list_event_subscriptions", nil},
			{"get_event_subscription", map[string]any{"subscription_id": "sub_bin"}},
		} {
			r := budgetedCall(t, h, c.tool, c.args)
			if strings.Contains(r.RawContent, b64[:60]) || strings.Contains(r.RawStruct, b64[:60]) {
				t.Errorf("%s inlines binary-like text", c.tool)
			}
			if !strings.Contains(r.RawStruct, `"kind":"binary"`) {
				t.Errorf("%s: the binary-like member is no metadata-only preview: %.600s", c.tool, r.RawStruct)
			}
		}
	})

	t.Run("thousands of small members", func(t *testing.T) {
		sub := subscriptionJSON("sub_wide", "https://hooks.example.com/a", many.String())
		rsh := newSubsRS([][]byte{sub}, created, "evt_1", adv)
		h := newHarness(t, faultyRS(rsh.ServeHTTP), tokClient)
		list := budgetedCall(t, h, "list_event_subscriptions", nil)
		checkSaysCut(t, list, "list_event_subscriptions")
		subs, _ := list.Structured["subscriptions"].([]any)
		if len(subs) != 1 {
			t.Fatalf("list keeps %d subscriptions, want the wide one as a stub", len(subs))
		}
		stub, _ := subs[0].(map[string]any)
		tool, args, ok := continuation(stub["next"])
		if stub["truncated"] != true || stub["subscription_id"] != "sub_wide" || !ok {
			t.Fatalf("wide subscription is not a stub naming its full get: %s", mustJSON(stub))
		}
		whole := h.mustOK(t, tool, args)
		if !jsonEqual(t, mustRaw(whole.Structured["subscription"]), sub) {
			t.Errorf("the stub's call does not return the subscription verbatim")
		}
		get := budgetedCall(t, h, "get_event_subscription", map[string]any{"subscription_id": "sub_wide"})
		call := checkSaysCut(t, get, "get_event_subscription")
		h.mustOK(t, call.Tool, call.Args)
	})

	t.Run("huge advertisement", func(t *testing.T) {
		rsh := newSubsRS(nil, created, "evt_1", adv)
		h := newHarness(t, faultyRS(rsh.ServeHTTP), tokClient)
		r := budgetedCall(t, h, "discover_event_subscription_capabilities", nil)
		call := checkSaysCut(t, r, "discover_event_subscription_capabilities")
		if r.Structured["event_types_total"] != float64(5000) || len(r.Structured["event_types"].([]any)) >= 5000 {
			t.Errorf("event types not reported as cut: total %v", r.Structured["event_types_total"])
		}
		if !strings.Contains(r.Text, "Preflight:") {
			t.Errorf("compact text lost the preflight steps")
		}
		full := h.mustOK(t, call.Tool, call.Args)
		var doc struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal([]byte(adv), &doc)
		if !jsonEqual(t, mustRaw(full.Structured["advertisement"]), doc.Capabilities["client_event_subscriptions"]) {
			t.Errorf("full discovery does not carry the advertisement verbatim")
		}
	})

	t.Run("uncuttable values are refused", func(t *testing.T) {
		longSecret := []byte(`{"subscription_id":"sub_x","secret":"whsec_` + strings.Repeat("A", 5000) + `","status":"active","callback_url":"https://h.example.com/a"}`)
		rsh := newSubsRS(nil, longSecret, strings.Repeat("e", 5000), adv)
		h := newHarness(t, faultyRS(rsh.ServeHTTP), tokClient)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp"}},
			{"send_test_event", map[string]any{"subscription_id": "sub_x"}},
		} {
			r := h.call(t, c.tool, c.args)
			if !r.Res.IsError || r.errorCode() != "rs_bad_response" {
				t.Errorf("%s: want rs_bad_response, got isError %v code %q", c.tool, r.Res.IsError, r.errorCode())
			}
		}
	})
}

// structuredObject returns member of m as an object.
func structuredObject(m map[string]any, member string) map[string]any {
	o, _ := m[member].(map[string]any)
	return o
}

// callAfterOf is callAfter for the events tools' calls.
func callAfterOf(text, prefix string) (callLine, bool) {
	i := strings.Index(text, prefix)
	if i < 0 {
		return callLine{}, false
	}
	calls := visibleCallsOf(eventCallRE, text[i+len(prefix):])
	if len(calls) == 0 || !strings.HasPrefix(text[i+len(prefix):], calls[0].Tool+" ") {
		return callLine{}, false
	}
	return calls[0], true
}

// TestEventRepliesOnDemoRS checks a normal list and get against the demo
// RS: compact output is the RS's subscriptions whole, with nothing reported
// cut, and detail full is the RS body verbatim.
func TestEventRepliesOnDemoRS(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	for i := range 3 {
		h.mustOK(t, "create_event_subscription", map[string]any{"callback_url": fmt.Sprintf("http://127.0.0.1:1/hook/%d", i)})
	}
	_, body := h.rsGet(t, tokClient, "/v1/event-subscriptions")
	var rsList struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &rsList); err != nil || len(rsList.Data) != 3 {
		t.Fatalf("RS list: %v %s", err, body)
	}
	list := budgetedCall(t, h, "list_event_subscriptions", nil)
	if list.Structured["truncated"] != false || list.Structured["items_total"] != float64(3) {
		t.Errorf("a short list reports a cut: %.400s", list.RawStruct)
	}
	if !jsonEqual(t, mustRaw(list.Structured["subscriptions"]), mustRaw(rsList.Data)) {
		t.Errorf("compact list differs from the RS's subscriptions")
	}
	full := h.mustOK(t, "list_event_subscriptions", map[string]any{"detail": "full"})
	if !jsonEqual(t, mustRaw(full.Structured["data"]), body) {
		t.Errorf("full list is not the RS body verbatim")
	}
	for _, raw := range rsList.Data {
		var s struct {
			ID string `json:"subscription_id"`
		}
		_ = json.Unmarshal(raw, &s)
		_, one := h.rsGet(t, tokClient, "/v1/event-subscriptions/"+s.ID)
		for _, detail := range []string{"compact", "full"} {
			get := budgetedCall(t, h, "get_event_subscription", map[string]any{"subscription_id": s.ID, "detail": detail})
			if !jsonEqual(t, mustRaw(get.Structured["subscription"]), one) || get.Structured["truncated"] != nil {
				t.Errorf("get %s (%s) differs from the RS body or reports a cut: %.300s", s.ID, detail, get.RawStruct)
			}
			if !strings.Contains(get.Text, s.ID) || !strings.Contains(get.Text, "callback: http://127.0.0.1:1/hook/") {
				t.Errorf("get %s text lost the id or callback:\n%s", s.ID, get.Text)
			}
		}
	}
	caps := budgetedCall(t, h, "discover_event_subscription_capabilities", nil)
	if caps.Structured["truncated"] != nil {
		t.Errorf("the demo RS's capabilities report a cut: %.400s", caps.RawStruct)
	}
}
