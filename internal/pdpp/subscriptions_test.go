package pdpp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// hookDelivery is one POST the webhook receiver got.
type hookDelivery struct {
	header http.Header
	body   []byte
	event  struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Data struct {
			Challenge string `json:"challenge"`
		} `json:"data"`
	}
}

// hookReceiver is a loopback webhook endpoint: it records every delivery
// and answers pdpp.subscription.verify by echoing the challenge, the way
// the demo RS expects to activate a subscription.
type hookReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []hookDelivery
	wake chan struct{}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	hr := &hookReceiver{wake: make(chan struct{}, 64)}
	hr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := hookDelivery{header: r.Header.Clone(), body: body}
		_ = json.Unmarshal(body, &d.event)
		hr.mu.Lock()
		hr.got = append(hr.got, d)
		hr.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if d.event.Type == "pdpp.subscription.verify" {
			_ = json.NewEncoder(w).Encode(map[string]string{"challenge": d.event.Data.Challenge})
		} else {
			_, _ = io.WriteString(w, `{"ok":true}`)
		}
		select {
		case hr.wake <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(hr.srv.Close)
	return hr
}

// waitFor returns the first delivery that match accepts, failing after
// testkit.Patience.
func (hr *hookReceiver) waitFor(t *testing.T, what string, match func(hookDelivery) bool) hookDelivery {
	t.Helper()
	deadline := time.After(testkit.Patience)
	for {
		hr.mu.Lock()
		i := slices.IndexFunc(hr.got, match)
		var d hookDelivery
		if i >= 0 {
			d = hr.got[i]
		}
		hr.mu.Unlock()
		if i >= 0 {
			return d
		}
		select {
		case <-hr.wake:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no %s delivery reached the receiver", what)
		}
	}
}

func ofType(eventType string) func(hookDelivery) bool {
	return func(d hookDelivery) bool { return d.event.Type == eventType }
}

// structuredString reads a string at a path of a structured result.
func structuredString(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		obj, _ := cur.(map[string]any)
		cur = obj[p]
	}
	s, _ := cur.(string)
	return s
}

// TestEventSubscriptionLifecycle drives every events tool over MCP against
// the demo RS and a loopback receiver: discover, create, activation by the
// verify answer, a signed test event, disable, delete, and not_found after.
// The signing secret may appear only in create's structuredContent.
func TestEventSubscriptionLifecycle(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	hr := newHookReceiver(t)
	var visible []string // every content[] seen, re-encoded
	var later []string   // every result after create, content and structured
	track := func(r callResult, afterCreate bool) callResult {
		visible = append(visible, r.RawContent)
		if afterCreate {
			later = append(later, r.RawContent, r.RawStruct)
		}
		return r
	}

	caps := track(h.mustOK(t, "discover_event_subscription_capabilities", nil), false)
	t.Run("capabilities", func(t *testing.T) {
		if caps.Structured["supported"] != true {
			t.Errorf("supported = %v, want true (the demo RS advertises subscriptions)", caps.Structured["supported"])
		}
		_, schema := h.rsGet(t, tokClient, "/v1/schema?view=compact")
		var doc struct {
			Connectors []struct {
				Streams []struct{ Name string } `json:"streams"`
			} `json:"connectors"`
		}
		if err := json.Unmarshal(schema, &doc); err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, c := range doc.Connectors {
			for _, s := range c.Streams {
				if !slices.Contains(want, s.Name) {
					want = append(want, s.Name)
				}
			}
		}
		scope, _ := caps.Structured["scope"].([]any)
		for _, s := range scope {
			got = append(got, structuredString(s.(map[string]any), "stream"))
		}
		sort.Strings(want)
		sort.Strings(got)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("scope streams = %v, want the grant's %v", got, want)
		}
		var types []string
		for _, et := range caps.Structured["event_types"].([]any) {
			types = append(types, structuredString(et.(map[string]any), "type"))
		}
		// The demo RS advertises exactly the events it delivers; the tool
		// must report those, not the profile's fuller list.
		if !slices.Equal(types, []string{"pdpp.subscription.verify", "pdpp.subscription.test"}) {
			t.Errorf("event_types %v, want what the RS advertises", types)
		}
		if got := structuredString(caps.Structured, "signing", "signature_header"); got != "webhook-signature" {
			t.Errorf("signing.signature_header = %q", got)
		}
		for _, w := range []string{"webhook-signature", "HMAC-SHA256", "challenge", "Preflight", "transcripts"} {
			if !strings.Contains(caps.Text, w) {
				t.Errorf("capabilities text does not mention %q:\n%s", w, caps.Text)
			}
		}
	})

	callback := hr.srv.URL + "/pdpp-hook"
	created := track(h.mustOK(t, "create_event_subscription", map[string]any{"callback_url": callback, "streams": []string{"transcripts"}}), false)
	secret := structuredString(created.Structured, "secret")
	id := structuredString(created.Structured, "subscription", "subscription_id")
	if !strings.HasPrefix(secret, "whsec_") || id == "" {
		t.Fatalf("create gave secret %q and id %q:\n%s", secret, id, created.RawStruct)
	}
	if !strings.Contains(created.Text, "shown this once") || !strings.Contains(created.Text, id) {
		t.Errorf("create text does not name the id and the once-only secret:\n%s", created.Text)
	}
	ex, ok := h.log.last(func(p string) bool { return p == "/v1/event-subscriptions" })
	if !ok || !strings.HasPrefix(ex.Line, "POST ") || ex.Status != http.StatusCreated {
		t.Fatalf("create did not POST /v1/event-subscriptions: %+v", ex)
	}

	verify := hr.waitFor(t, "pdpp.subscription.verify", ofType("pdpp.subscription.verify"))
	if err := demors.VerifyWebhook(secret, verify.header, verify.body); err != nil {
		t.Errorf("verify event signature: %v", err)
	}

	// The receiver's answer activates the subscription; get shows it.
	deadline := time.Now().Add(testkit.Patience)
	var got callResult
	for {
		got = track(h.mustOK(t, "get_event_subscription", map[string]any{"subscription_id": id}), true)
		if structuredString(got.Structured, "subscription", "status") == "active" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := structuredString(got.Structured, "subscription", "status"); s != "active" {
		t.Fatalf("subscription status %q after the verify answer, want active", s)
	}
	if cb := structuredString(got.Structured, "subscription", "callback_url"); cb != callback {
		t.Errorf("callback_url = %q, want %q", cb, callback)
	}

	sent := track(h.mustOK(t, "send_test_event", map[string]any{"subscription_id": id}), true)
	eventID := structuredString(sent.Structured, "event_id")
	if eventID == "" || structuredString(sent.Structured, "subscription_id") != id {
		t.Fatalf("send_test_event structured = %s", sent.RawStruct)
	}
	test := hr.waitFor(t, "pdpp.subscription.test", func(d hookDelivery) bool {
		return d.event.Type == "pdpp.subscription.test" && d.header.Get("webhook-id") == eventID
	})
	t.Run("test event signature", func(t *testing.T) {
		if err := demors.VerifyWebhook(secret, test.header, test.body); err != nil {
			t.Fatalf("signature does not verify with the secret from create: %v", err)
		}
		tampered := append([]byte(nil), test.body...)
		tampered[len(tampered)-2] ^= 1
		if demors.VerifyWebhook(secret, test.header, tampered) == nil {
			t.Error("a tampered body verifies; the check proves nothing")
		}
		if demors.VerifyWebhook("whsec_"+strings.Repeat("A", 32), test.header, test.body) == nil {
			t.Error("another secret verifies the delivery")
		}
	})

	listed := track(h.mustOK(t, "list_event_subscriptions", nil), true)
	if !strings.Contains(listed.Text, id) || !strings.Contains(listed.RawStruct, id) {
		t.Errorf("list does not show %s:\n%s", id, listed.Text)
	}

	for _, round := range []string{"first", "repeated"} {
		off := track(h.mustOK(t, "update_event_subscription", map[string]any{"subscription_id": id, "enabled": false}), true)
		if s := structuredString(off.Structured, "subscription", "status"); s != "disabled" {
			t.Errorf("%s disable: status %q, want disabled", round, s)
		}
	}
	refused := track(h.call(t, "send_test_event", map[string]any{"subscription_id": id}), true)
	if !refused.Res.IsError || refused.errorCode() != "subscription_not_deliverable" {
		t.Errorf("test event on a disabled subscription: isError %v code %q, want subscription_not_deliverable", refused.Res.IsError, refused.errorCode())
	}

	for _, round := range []string{"first", "repeated"} {
		del := track(h.mustOK(t, "delete_event_subscription", map[string]any{"subscription_id": id}), true)
		if del.Structured["deleted"] != true || structuredString(del.Structured, "subscription_id") != id {
			t.Errorf("%s delete: structured %s", round, del.RawStruct)
		}
		if ex, ok := h.log.last(func(p string) bool { return p == "/v1/event-subscriptions/"+id }); round == "repeated" &&
			(!ok || !strings.HasPrefix(ex.Line, "DELETE ") || ex.Status != http.StatusNotFound) {
			t.Errorf("repeated delete: RS exchange %+v, want DELETE answered 404", ex)
		}
		if round == "repeated" && !strings.Contains(del.Text, "already deleted") {
			t.Errorf("repeated delete text does not say it was already deleted:\n%s", del.Text)
		}
	}
	gone := track(h.call(t, "get_event_subscription", map[string]any{"subscription_id": id}), true)
	if !gone.Res.IsError || gone.errorCode() != "not_found" {
		t.Errorf("get after delete: isError %v code %q, want not_found", gone.Res.IsError, gone.errorCode())
	}
	after := track(h.mustOK(t, "list_event_subscriptions", nil), true)
	if strings.Contains(after.RawStruct, id) {
		t.Errorf("list still shows deleted %s", id)
	}

	t.Run("secret shown once", func(t *testing.T) {
		if !strings.Contains(created.RawStruct, secret) {
			t.Error("create's structuredContent lacks the secret")
		}
		for i, c := range visible {
			if strings.Contains(c, secret) || strings.Contains(c, strings.TrimPrefix(secret, "whsec_")) {
				t.Errorf("content[] of call %d shows the secret", i)
			}
		}
		for i, s := range later {
			if strings.Contains(s, secret) || strings.Contains(s, `"secret"`) {
				t.Errorf("result part %d after create shows a secret: %.200s", i, s)
			}
		}
	})
}

// TestEventSubscriptionRefusals checks the arguments the adapter refuses
// before any subscription request reaches the RS, the ones it lets through,
// and RS refusals surfacing with their envelope.
func TestEventSubscriptionRefusals(t *testing.T) {
	h := newDemoHarness(t, tokClient)
	isSubs := func(p string) bool { return strings.HasPrefix(p, "/v1/event-subscriptions") }
	refused := []struct {
		name, tool string
		args       map[string]any
		code       string
		param      string
	}{
		{"http on a public host", "create_event_subscription", map[string]any{"callback_url": "http://hooks.example.com/pdpp"}, "invalid_callback_url", "callback_url"},
		{"http on a private address", "create_event_subscription", map[string]any{"callback_url": "http://10.0.0.8/pdpp"}, "invalid_callback_url", "callback_url"},
		{"http on a localhost look-alike", "create_event_subscription", map[string]any{"callback_url": "http://localhost.example.com/pdpp"}, "invalid_callback_url", "callback_url"},
		{"other scheme", "create_event_subscription", map[string]any{"callback_url": "ftp://127.0.0.1/pdpp"}, "invalid_callback_url", "callback_url"},
		{"relative URL", "create_event_subscription", map[string]any{"callback_url": "/pdpp-hook"}, "invalid_callback_url", "callback_url"},
		{"credentials in URL", "create_event_subscription", map[string]any{"callback_url": "https://user:pw@hooks.example.com/pdpp"}, "invalid_callback_url", "callback_url"},
		{"surrounding space", "create_event_subscription", map[string]any{"callback_url": " https://hooks.example.com/pdpp"}, "invalid_callback_url", "callback_url"},
		{"missing callback", "create_event_subscription", map[string]any{"streams": []string{"transcripts"}}, "missing_argument", "callback_url"},
		{"empty streams", "create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp", "streams": []string{}}, "invalid_streams", "streams"},
		{"blank stream", "create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp", "streams": []string{" "}}, "invalid_format", "streams"},
		{"repeated stream", "create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp", "streams": []string{"notes", "notes"}}, "invalid_streams", "streams"},
		{"path in id", "get_event_subscription", map[string]any{"subscription_id": "../streams"}, "invalid_format", "subscription_id"},
		{"dot segment id", "delete_event_subscription", map[string]any{"subscription_id": ".."}, "invalid_format", "subscription_id"},
		{"slash in id", "send_test_event", map[string]any{"subscription_id": "sub_1/test-event"}, "invalid_format", "subscription_id"},
		{"empty id", "update_event_subscription", map[string]any{"subscription_id": "", "enabled": true}, "missing_argument", "subscription_id"},
		{"enabled missing", "update_event_subscription", map[string]any{"subscription_id": "sub_1"}, "missing_argument", "enabled"},
		{"enabled as string", "update_event_subscription", map[string]any{"subscription_id": "sub_1", "enabled": "false"}, "invalid_type", "enabled"},
		{"rotate_secret is not offered", "update_event_subscription", map[string]any{"subscription_id": "sub_1", "enabled": true, "rotate_secret": true}, "unknown_argument", "rotate_secret"},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			h.log.reset()
			r := h.call(t, tc.tool, tc.args)
			if !r.Res.IsError || r.errorCode() != tc.code {
				t.Fatalf("isError %v code %q, want %s:\n%s", r.Res.IsError, r.errorCode(), tc.code, r.Text)
			}
			if p, _ := r.errorObject()["param"].(string); p != tc.param {
				t.Errorf("param %q, want %q", p, tc.param)
			}
			if typ, _ := r.errorObject()["type"].(string); typ != "adapter_error" {
				t.Errorf("error type %q, want adapter_error", typ)
			}
			if reqs := h.log.matching(isSubs); len(reqs) != 0 {
				t.Errorf("refused call reached the RS: %v", reqs)
			}
		})
	}

	// Loopback http and any https pass the adapter; ports with no listener
	// keep the RS's verification attempt local and short.
	accepted := []string{"http://localhost:1/pdpp", "http://127.0.0.2:1/pdpp", "http://[::1]:1/pdpp", "https://127.0.0.1:1/pdpp"}
	for _, cb := range accepted {
		t.Run("accepted/"+cb, func(t *testing.T) {
			h.log.reset()
			r := h.mustOK(t, "create_event_subscription", map[string]any{"callback_url": cb})
			if got := h.log.matching(isSubs); len(got) != 1 || got[0] != "POST /v1/event-subscriptions" {
				t.Errorf("RS requests = %v, want one create", got)
			}
			if strings.Contains(r.RawContent, "whsec_") {
				t.Errorf("content[] shows the secret:\n%s", r.Text)
			}
		})
	}

	t.Run("RS refusal keeps its envelope", func(t *testing.T) {
		h.log.reset()
		r := h.call(t, "create_event_subscription", map[string]any{"callback_url": "https://127.0.0.1:1/pdpp", "streams": []string{"no_such_stream"}})
		ex, ok := h.log.last(isSubs)
		if !ok || ex.Status != http.StatusBadRequest {
			t.Fatalf("RS exchange = %+v, want a 400", ex)
		}
		if !r.Res.IsError || !jsonEqual(t, []byte(mustJSON(r.errorObject())), rsErrorObject(t, ex.Body)) {
			t.Errorf("error object %s differs from the RS's %s", mustJSON(r.errorObject()), ex.Body)
		}
	})

	t.Run("unknown subscription", func(t *testing.T) {
		r := h.call(t, "get_event_subscription", map[string]any{"subscription_id": "sub_000000000000000000000000"})
		if !r.Res.IsError || r.errorCode() != "not_found" {
			t.Errorf("isError %v code %q, want not_found", r.Res.IsError, r.errorCode())
		}
	})
}

// TestHostedCallbacksRefuseInternalAddresses runs the adapter as a hosted
// server does (private callbacks not allowed) over the demo RS: a callback
// URL naming a loopback, private, link-local, unique-local, unspecified or
// metadata host, in any spelling, is a typed error naming callback_url and
// no subscription request reaches the RS, while a public https URL does.
func TestHostedCallbacksRefuseInternalAddresses(t *testing.T) {
	demo, err := demors.New(demors.Config{Tokens: demoTokens})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = demo.Close() })
	h := newHarnessWith(t, demo.Handler(), tokClient, func(c *pdpp.Config) { c.AllowPrivateWebhooks = false })
	isSubs := func(p string) bool { return strings.HasPrefix(p, "/v1/event-subscriptions") }
	internal := []string{
		"https://169.254.169.254/latest/meta-data/",
		"https://10.0.0.1/hook",
		"https://192.168.0.10/hook",
		"https://metadata.google.internal/computeMetadata/v1/",
		"https://metadata/computeMetadata/v1/",
		"https://instance-data/latest/",
		"http://127.0.0.1:8080/hook",
		"https://127.0.0.1:8443/hook",
		"https://localhost/hook",
		"http://localhost:9000/hook",
		"https://[::1]/hook",
		"https://[::ffff:127.0.0.1]/hook",
		"https://[fd12:3456::1]/hook",
		"https://[fe80::1%25eth0]/hook",
		"https://0.0.0.0/hook",
		"https://0x7f.1/hook",
		"https://2130706433/hook",
		"https://[::ffff:0:7f00:1]/hook",
		"https://[::ffff:0:a9fe:a9fe]/hook",
		"https://168.63.129.16/machine?comp=goalstate",
		"https://hooks.example.com:0/hook",
		"https://hooks.example.com:99999/hook",
	}
	for _, cb := range internal {
		t.Run("refused/"+cb, func(t *testing.T) {
			h.log.reset()
			r := h.call(t, "create_event_subscription", map[string]any{"callback_url": cb})
			if !r.Res.IsError || r.errorCode() != "invalid_callback_url" {
				t.Fatalf("isError %v code %q, want invalid_callback_url:\n%s", r.Res.IsError, r.errorCode(), r.Text)
			}
			if p, _ := r.errorObject()["param"].(string); p != "callback_url" {
				t.Errorf("param %q, want callback_url", p)
			}
			if reqs := h.log.matching(isSubs); len(reqs) != 0 {
				t.Errorf("an internal callback reached the RS: %v", reqs)
			}
		})
	}
	t.Run("public https reaches the RS", func(t *testing.T) {
		h.log.reset()
		r := h.mustOK(t, "create_event_subscription", map[string]any{"callback_url": "https://hooks.example.com/pdpp"})
		if got := h.log.matching(isSubs); len(got) != 1 || got[0] != "POST /v1/event-subscriptions" {
			t.Errorf("RS requests = %v, want one create", got)
		}
		if cb := structuredString(r.Structured, "subscription", "callback_url"); cb != "https://hooks.example.com/pdpp" {
			t.Errorf("created callback_url = %q", cb)
		}
	})
}

// TestEventToolsOwnerRefused checks an owner token is refused by the events
// tools before any subscription request.
func TestEventToolsOwnerRefused(t *testing.T) {
	h := newDemoHarness(t, tokOwner)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"discover_event_subscription_capabilities", nil},
		{"create_event_subscription", map[string]any{"callback_url": "https://127.0.0.1:1/pdpp"}},
		{"list_event_subscriptions", nil},
	}
	for _, c := range calls {
		t.Run(c.tool, func(t *testing.T) {
			h.log.reset()
			r := h.call(t, c.tool, c.args)
			if !r.Res.IsError || r.errorCode() != "owner_token_refused" {
				t.Fatalf("isError %v code %q, want owner_token_refused", r.Res.IsError, r.errorCode())
			}
			if got := h.log.matching(func(p string) bool { return strings.HasPrefix(p, "/v1/event-subscriptions") }); len(got) != 0 {
				t.Errorf("owner call reached the subscriptions endpoint: %v", got)
			}
		})
	}
}

// TestToolsetExposure builds the server with each toolset selection, as
// --toolsets does, and checks the tools it lists.
func TestToolsetExposure(t *testing.T) {
	demo := newDemoHarness(t, tokClient)
	type exposure struct {
		name     string
		toolsets []string
		want     []string
	}
	// One exposure per catalog toolset, all of them named, and none named.
	var tests []exposure
	inSome := 0
	for _, set := range mcptools.Toolsets() {
		want := catalogNames([]string{set})
		if len(want) == 0 {
			t.Errorf("toolset %s has no tools", set)
		}
		inSome += len(want)
		tests = append(tests, exposure{set, []string{set}, want})
	}
	if all := catalogNames(nil); inSome != len(all) {
		t.Errorf("the toolsets %v hold %d tools, the catalog %d", mcptools.Toolsets(), inSome, len(all))
	}
	tests = append(tests,
		exposure{strings.Join(mcptools.Toolsets(), ","), mcptools.Toolsets(), catalogNames(nil)},
		exposure{"default", nil, catalogNames(nil)})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFPClient(t, demo.rsURL, tokClient, tc.toolsets)
			_, tools := f.servedTools(t)
			if got := toolNames(tools); !slices.Equal(got, tc.want) {
				t.Fatalf("tools = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEventCapabilitiesSources checks the discovery tool follows the RS's
// own advertisement where it gives one, falls back to the PDPP reference
// profile where it does not, and says when subscriptions are not offered.
func TestEventCapabilitiesSources(t *testing.T) {
	tests := []struct {
		name          string
		metadata      string // protected-resource document; "" answers 404
		supported     bool
		signingSource string
		signatureHdr  string
		eventTypes    []string
		textHas       []string
	}{
		{
			name:          "full advertisement",
			metadata:      `{"capabilities":{"client_event_subscriptions":{"supported":true,"endpoint":"/v1/event-subscriptions","event_types":["pdpp.subscription.verify",{"type":"pdpp.subscription.test","description":"manual test"}],"signing":{"profile":"standard-webhooks","algorithm":"HMAC-SHA256","signature_header":"webhook-signature","id_header":"webhook-id","timestamp_header":"webhook-timestamp"},"delivery":{"retries":"6 attempts over 24 hours","max_attempts":6}}}}`,
			supported:     true,
			signingSource: "rs",
			signatureHdr:  "webhook-signature",
			eventTypes:    []string{"pdpp.subscription.verify", "pdpp.subscription.test"},
			textHas:       []string{"supported (/v1/event-subscriptions)", "advertised by the RS", "6 attempts over 24 hours", "manual test"},
		},
		{
			name:          "not supported",
			metadata:      `{"capabilities":{"client_event_subscriptions":{"supported":false}}}`,
			supported:     false,
			signingSource: "pdpp_profile",
			signatureHdr:  "webhook-signature",
			eventTypes:    []string{"pdpp.records.changed", "pdpp.grant.revoked", "pdpp.subscription.verify", "pdpp.subscription.test"},
			textHas:       []string{"not supported", "do not create one"},
		},
		{
			name:          "no metadata document",
			metadata:      "",
			supported:     false,
			signingSource: "pdpp_profile",
			signatureHdr:  "webhook-signature",
			eventTypes:    []string{"pdpp.records.changed", "pdpp.grant.revoked", "pdpp.subscription.verify", "pdpp.subscription.test"},
			textHas:       []string{"does not advertise client_event_subscriptions", "not advertised by this RS"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			demo, err := demors.New(demors.Config{Tokens: demoTokens})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = demo.Close() })
			inner := demo.Handler()
			rsHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/.well-known/oauth-protected-resource" {
					inner.ServeHTTP(w, r)
					return
				}
				if tc.metadata == "" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tc.metadata)
			})
			h := newHarness(t, rsHandler, tokClient)
			r := h.mustOK(t, "discover_event_subscription_capabilities", nil)
			if r.Structured["supported"] != tc.supported {
				t.Errorf("supported = %v, want %v", r.Structured["supported"], tc.supported)
			}
			if got := structuredString(r.Structured, "signing", "source"); got != tc.signingSource {
				t.Errorf("signing.source = %q, want %q", got, tc.signingSource)
			}
			if got := structuredString(r.Structured, "signing", "signature_header"); got != tc.signatureHdr {
				t.Errorf("signing.signature_header = %q, want %q", got, tc.signatureHdr)
			}
			var types []string
			for _, et := range r.Structured["event_types"].([]any) {
				types = append(types, structuredString(et.(map[string]any), "type"))
			}
			if !slices.Equal(types, tc.eventTypes) {
				t.Errorf("event types = %v, want %v", types, tc.eventTypes)
			}
			for _, w := range tc.textHas {
				if !strings.Contains(r.Text, w) {
					t.Errorf("text does not say %q:\n%s", w, r.Text)
				}
			}
			if ex, ok := h.log.last(func(p string) bool { return p == "/.well-known/oauth-protected-resource" }); !ok || !strings.HasPrefix(ex.Line, "GET ") {
				t.Errorf("the RS metadata was not read: %v", h.log.requests())
			}
		})
	}
}
