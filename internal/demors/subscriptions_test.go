package demors_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/demors"
	"github.com/pdpp-mcp/pdpp-mcp/internal/testsupport/testkit"
)

// receiver is a webhook endpoint that records deliveries and echoes verification challenges.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []delivery
	echo   bool
	got    chan struct{}
}

type delivery struct {
	header http.Header
	body   []byte
	event  map[string]any
}

func newReceiver(t *testing.T, echo bool) *receiver {
	rv := &receiver{echo: echo, got: make(chan struct{}, 16)}
	rv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		rv.mu.Lock()
		rv.events = append(rv.events, delivery{header: r.Header.Clone(), body: body, event: ev})
		rv.mu.Unlock()
		if rv.echo && ev["type"] == "pdpp.subscription.verify" {
			_ = json.NewEncoder(w).Encode(map[string]any{"challenge": at(ev, "data", "challenge")})
		}
		rv.got <- struct{}{}
	}))
	t.Cleanup(rv.srv.Close)
	return rv
}

// waitFor returns the first delivery of the event type.
func (rv *receiver) waitFor(t *testing.T, eventType string, after int) delivery {
	t.Helper()
	deadline := time.After(testkit.Patience)
	for {
		rv.mu.Lock()
		for i := after; i < len(rv.events); i++ {
			if rv.events[i].event["type"] == eventType {
				d := rv.events[i]
				rv.mu.Unlock()
				return d
			}
		}
		rv.mu.Unlock()
		select {
		case <-rv.got:
		case <-deadline:
			t.Fatalf("no %s delivery", eventType)
		}
	}
}

func (rv *receiver) count() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return len(rv.events)
}

func TestEventSubscriptionLifecycle(t *testing.T) {
	r := newRS(t)
	rv := newReceiver(t, true)
	created := r.do(t, http.MethodPost, "/v1/event-subscriptions", demors.GrantClient, map[string]any{
		"callback_url": rv.srv.URL + "/hook",
		"filters":      map[string]any{"streams": []string{"transcripts"}},
	}).mustStatus(t, 201).body
	id, secret := str(created["subscription_id"]), str(created["secret"])
	if !strings.HasPrefix(secret, "whsec_") || created["status"] != "pending_verification" || created["callback_url"] != rv.srv.URL+"/hook" {
		t.Fatalf("created = %v", created)
	}
	verify := rv.waitFor(t, "pdpp.subscription.verify", 0)
	if err := demors.VerifyWebhook(secret, verify.header, verify.body); err != nil {
		t.Fatalf("verify event signature: %v", err)
	}
	if verify.event["specversion"] != "1.0" || verify.event["subject"] != id {
		t.Errorf("verify event = %v", verify.event)
	}

	t.Run("verification activates", func(t *testing.T) {
		deadline := time.Now().Add(testkit.Patience)
		for {
			sub := r.get(t, "/v1/event-subscriptions/"+id, demors.GrantClient).mustStatus(t, 200).body
			if sub["status"] == "active" {
				if _, leaked := sub["secret"]; leaked {
					t.Error("get returns the secret")
				}
				streams := list(at(sub, "scope", "streams"))
				if len(streams) != 2 || str(at(sub, "scope", "filters", "streams", 0)) != "transcripts" {
					t.Errorf("scope = %v", sub["scope"])
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("status stayed %v", sub["status"])
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("list", func(t *testing.T) {
		body := r.get(t, "/v1/event-subscriptions", demors.GrantClient).mustStatus(t, 200).body
		if len(list(body["data"])) != 1 || str(at(body, "data", 0, "subscription_id")) != id || at(body, "data", 0, "grant_id") != "grt_demo_client" {
			t.Errorf("list = %v", body)
		}
		if n := len(list(r.get(t, "/v1/event-subscriptions", demors.GrantNarrow).mustStatus(t, 200).body["data"])); n != 0 {
			t.Errorf("another grant sees %d subscriptions", n)
		}
		r.get(t, "/v1/event-subscriptions/"+id, demors.GrantNarrow).mustStatus(t, 404)
		if n := len(list(newRS(t).get(t, "/v1/event-subscriptions", demors.GrantClient).mustStatus(t, 200).body["data"])); n != 0 {
			t.Errorf("a second server sees %d subscriptions of the first", n)
		}
	})
	t.Run("test event is signed", func(t *testing.T) {
		before := rv.count()
		ev := r.do(t, http.MethodPost, "/v1/event-subscriptions/"+id+"/test-event", demors.GrantClient, nil).mustStatus(t, 202).body
		d := rv.waitFor(t, "pdpp.subscription.test", before)
		if d.event["id"] != ev["event_id"] || d.header.Get("webhook-id") != ev["event_id"] {
			t.Errorf("event ids: response %v, delivered %v", ev["event_id"], d.event["id"])
		}
		if err := demors.VerifyWebhook(secret, d.header, d.body); err != nil {
			t.Errorf("signature: %v", err)
		}
		if err := demors.VerifyWebhook(secret, d.header, append(d.body, ' ')); err == nil {
			t.Error("a changed body still verifies")
		}
	})
	t.Run("disable, rotate, re-enable", func(t *testing.T) {
		off := r.do(t, http.MethodPatch, "/v1/event-subscriptions/"+id, demors.GrantClient, map[string]any{"enabled": false}).mustStatus(t, 200).body
		if at(off, "subscription", "status") != "disabled" || str(at(off, "subscription", "disabled_reason")) == "" {
			t.Errorf("disabled = %v", off)
		}
		if _, has := off["secret"]; has {
			t.Error("secret returned without rotation")
		}
		r.do(t, http.MethodPost, "/v1/event-subscriptions/"+id+"/test-event", demors.GrantClient, nil).mustStatus(t, 409)
		rot := r.do(t, http.MethodPatch, "/v1/event-subscriptions/"+id, demors.GrantClient, map[string]any{"enabled": true, "rotate_secret": true}).mustStatus(t, 200).body
		newSecret := str(rot["secret"])
		if newSecret == "" || newSecret == secret || at(rot, "subscription", "status") != "active" || at(rot, "subscription", "disabled_reason") != nil {
			t.Fatalf("rotated = %v", rot)
		}
		before := rv.count()
		r.do(t, http.MethodPost, "/v1/event-subscriptions/"+id+"/test-event", demors.GrantClient, nil).mustStatus(t, 202)
		d := rv.waitFor(t, "pdpp.subscription.test", before)
		if err := demors.VerifyWebhook(newSecret, d.header, d.body); err != nil {
			t.Errorf("new secret: %v", err)
		}
		if err := demors.VerifyWebhook(secret, d.header, d.body); err == nil {
			t.Error("the old secret still verifies")
		}
	})
	t.Run("delete", func(t *testing.T) {
		r.do(t, http.MethodDelete, "/v1/event-subscriptions/"+id, demors.GrantClient, nil).mustStatus(t, 204)
		r.get(t, "/v1/event-subscriptions/"+id, demors.GrantClient).mustStatus(t, 404)
		// As on the reference RS, a second DELETE is 404 not_found.
		r.do(t, http.MethodDelete, "/v1/event-subscriptions/"+id, demors.GrantClient, nil).mustStatus(t, 404)
		if n := len(list(r.get(t, "/v1/event-subscriptions", demors.GrantClient).mustStatus(t, 200).body["data"])); n != 0 {
			t.Errorf("%d subscriptions listed after delete", n)
		}
		r.do(t, http.MethodDelete, "/v1/event-subscriptions/sub_nope", demors.GrantClient, nil).mustStatus(t, 404)
	})
}

func TestEventSubscriptionUnverified(t *testing.T) {
	r := newRS(t)
	rv := newReceiver(t, false)
	created := r.do(t, http.MethodPost, "/v1/event-subscriptions", demors.GrantNarrow, map[string]any{"callback_url": rv.srv.URL}).mustStatus(t, 201).body
	id := str(created["subscription_id"])
	rv.waitFor(t, "pdpp.subscription.verify", 0)
	before := rv.count()
	r.do(t, http.MethodPost, "/v1/event-subscriptions/"+id+"/test-event", demors.GrantNarrow, nil).mustStatus(t, 202)
	rv.waitFor(t, "pdpp.subscription.test", before)
	sub := r.get(t, "/v1/event-subscriptions/"+id, demors.GrantNarrow).mustStatus(t, 200).body
	if sub["status"] != "pending_verification" {
		t.Errorf("status without an echoed challenge = %v", sub["status"])
	}
	if got := str(at(sub, "scope", "streams", 0, "name")) + "@" + str(at(sub, "scope", "streams", 0, "connection_id")); got != "transcripts@cin_demo_loom_main" || len(list(at(sub, "scope", "streams"))) != 1 {
		t.Errorf("narrow scope = %v", at(sub, "scope"))
	}
}

func TestEventSubscriptionErrors(t *testing.T) {
	r := newRS(t)
	cases := []struct {
		name, grant string
		body        any
		status      int
		code        string
	}{
		{"remote plain http", demors.GrantClient, map[string]any{"callback_url": "http://example.com/hook"}, 400, "invalid_request"},
		{"not a URL", demors.GrantClient, map[string]any{"callback_url": "hook"}, 400, "invalid_request"},
		{"stream outside grant", demors.GrantNarrow, map[string]any{"callback_url": "https://example.com/hook", "filters": map[string]any{"streams": []string{"notes"}}}, 400, "invalid_request"},
		{"owner token", demors.GrantOwner, map[string]any{"callback_url": "https://example.com/hook"}, 403, "owner_bearer_rejected"},
		{"no body", demors.GrantClient, nil, 400, "invalid_request"},
		// A body over the 64 KiB request cap is refused before it is decoded,
		// even when the part the operation reads is valid.
		{"body over the cap", demors.GrantClient, map[string]any{"callback_url": "https://example.com/hook", "pad": strings.Repeat("x", 65<<10)}, 400, "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := r.do(t, http.MethodPost, "/v1/event-subscriptions", tc.grant, tc.body).mustStatus(t, tc.status)
			if resp.errCode() != tc.code {
				t.Errorf("code = %q, want %q: %s", resp.errCode(), tc.code, resp.raw)
			}
		})
	}
	t.Run("empty update", func(t *testing.T) {
		rv := newReceiver(t, false)
		created := r.do(t, http.MethodPost, "/v1/event-subscriptions", demors.GrantClient, map[string]any{"callback_url": rv.srv.URL}).mustStatus(t, 201).body
		r.do(t, http.MethodPatch, "/v1/event-subscriptions/"+str(created["subscription_id"]), demors.GrantClient, map[string]any{}).mustStatus(t, 400)
	})
}

// TestWebhookDeliveriesInFlightAreCapped holds every delivery at a receiver that
// does not answer: once MaxDeliveriesInFlight verifications are in flight, a test
// event is refused with 409 deliveries_busy instead of starting another one, and
// deliveries start again once the receiver answers.
func TestWebhookDeliveriesInFlightAreCapped(t *testing.T) {
	r := newRS(t)
	release := make(chan struct{})
	arrived := make(chan struct{}, demors.MaxDeliveriesInFlight+1)
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	t.Cleanup(hold.Close)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before hold.Close, which waits for the held requests

	var ids []string
	for range demors.MaxDeliveriesInFlight {
		created := r.do(t, http.MethodPost, "/v1/event-subscriptions", demors.GrantClient,
			map[string]any{"callback_url": hold.URL}).mustStatus(t, 201).body
		ids = append(ids, str(created["subscription_id"]))
	}
	for range demors.MaxDeliveriesInFlight {
		select {
		case <-arrived:
		case <-time.After(testkit.Patience):
			t.Fatal("verification deliveries did not all reach the receiver")
		}
	}
	busy := r.do(t, http.MethodPost, "/v1/event-subscriptions/"+ids[0]+"/test-event", demors.GrantClient, nil).mustStatus(t, 409)
	if busy.errCode() != "deliveries_busy" {
		t.Errorf("code = %q, want deliveries_busy: %s", busy.errCode(), busy.raw)
	}
	select {
	case <-arrived:
		t.Fatal("a delivery past the cap reached the receiver")
	default:
	}

	unblock()
	deadline := time.Now().Add(testkit.Patience)
	for {
		resp := r.do(t, http.MethodPost, "/v1/event-subscriptions/"+ids[0]+"/test-event", demors.GrantClient, nil)
		if resp.status == http.StatusAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("test event still refused after the receiver answered: %d %s", resp.status, resp.raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventSubscriptionsPerGrantAreCapped creates subscriptions until the grant
// holds MaxSubscriptionsPerGrant: the next create is refused, another grant is not
// affected, and deleting one frees its place.
func TestEventSubscriptionsPerGrantAreCapped(t *testing.T) {
	r := newRS(t)
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(ok.Close)
	create := func(grant string) response {
		return r.do(t, http.MethodPost, "/v1/event-subscriptions", grant, map[string]any{"callback_url": ok.URL})
	}
	var first string
	for i := range demors.MaxSubscriptionsPerGrant {
		created := create(demors.GrantClient).mustStatus(t, 201).body
		if i == 0 {
			first = str(created["subscription_id"])
		}
	}
	full := create(demors.GrantClient).mustStatus(t, 400)
	if full.errCode() != "invalid_request" || !strings.Contains(str(at(full.body, "error", "message")), "delete one first") {
		t.Errorf("create past the cap = %s", full.raw)
	}
	if n := len(list(r.get(t, "/v1/event-subscriptions", demors.GrantClient).mustStatus(t, 200).body["data"])); n != demors.MaxSubscriptionsPerGrant {
		t.Errorf("%d subscriptions listed, want %d", n, demors.MaxSubscriptionsPerGrant)
	}
	create(demors.GrantNarrow).mustStatus(t, 201)
	r.do(t, http.MethodDelete, "/v1/event-subscriptions/"+first, demors.GrantClient, nil).mustStatus(t, 204)
	create(demors.GrantClient).mustStatus(t, 201)
	create(demors.GrantClient).mustStatus(t, 400)
}

// TestEventSubscriptionFilterStreamsAreCapped refuses a filters.streams list
// longer than MaxFilterStreams, even when every entry names a granted stream.
func TestEventSubscriptionFilterStreamsAreCapped(t *testing.T) {
	r := newRS(t)
	streams := make([]string, demors.MaxFilterStreams+1)
	for i := range streams {
		streams[i] = "transcripts"
	}
	resp := r.do(t, http.MethodPost, "/v1/event-subscriptions", demors.GrantClient, map[string]any{
		"callback_url": "https://example.com/hook", "filters": map[string]any{"streams": streams},
	}).mustStatus(t, 400)
	if resp.errCode() != "invalid_request" || str(at(resp.body, "error", "param")) != "filters.streams" {
		t.Errorf("long filter = %s", resp.raw)
	}
}
