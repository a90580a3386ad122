package demors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/gen/rsserver"
	"github.com/pdpp-mcp/pdpp-mcp/internal/demors/store"
)

// Subscription statuses the demo sets (from the upstream enumeration).
const (
	subPending  = "pending_verification"
	subActive   = "active"
	subDisabled = "disabled"
)

// Bounds of what one grant can store. Each subscription costs an entry, a scope and a line
// in every (unpaged) list answer, so a client creating them in a loop must meet a limit;
// deleted subscriptions are removed and free their place.
const (
	// maxSubscriptionsPerGrant bounds the subscriptions one grant holds at once.
	maxSubscriptionsPerGrant = 100
	// maxFilterStreams bounds filters.streams; only repeats can reach it (the catalog has few).
	maxFilterStreams = 64
)

// subscription is one event subscription. Secret is the whsec_ signing key.
type subscription struct {
	ID, GrantID, ClientID, CallbackURL, Status string
	Verified                                   bool
	Secret                                     string
	FilterStreams                              []string    // nil when the client gave no streams filter
	Scope                                      []targetKey // the (connection, stream) pairs it covers
	CreatedAt, UpdatedAt                       string
	DisabledReason                             string // "" while not disabled
}

func nowStamp() string { return time.Now().UTC().Format(store.TimeLayout) }

// subscriptionGrant refuses owner bearers: subscriptions belong to a client grant.
func subscriptionGrant(rc *reqCtx) (*grant, error) {
	if rc.grant.owner {
		return nil, errForbidden("owner_bearer_rejected",
			"Event subscriptions belong to a client grant; owner bearer tokens are not accepted here")
	}
	return rc.grant, nil
}

func subscriptionObject(sub subscription) object {
	streams := make([]object, len(sub.Scope))
	for i, st := range sub.Scope {
		streams[i] = obj("name", st.stream, "connection_id", st.conn)
	}
	scope := obj("streams", streams)
	if sub.FilterStreams != nil {
		scope = scope.set("filters", obj("streams", sub.FilterStreams))
	}
	return obj(
		"subscription_id", sub.ID,
		"grant_id", sub.GrantID,
		"client_id", sub.ClientID,
		"callback_url", sub.CallbackURL,
		"status", sub.Status,
		"scope", scope,
		"created_at", sub.CreatedAt,
		"updated_at", sub.UpdatedAt,
		"disabled_reason", nullable(sub.DisabledReason),
	)
}

// event builds one CloudEvents 1.0 structured-mode body.
func event(rc *reqCtx, eventType, eventID string, sub subscription, data object) []byte {
	b, err := marshalJSON(obj(
		"specversion", "1.0",
		"id", eventID,
		"source", rc.baseURL+"/v1/event-subscriptions/"+sub.ID,
		"type", eventType,
		"subject", sub.ID,
		"time", time.Now().UTC().Format(time.RFC3339Nano),
		"datacontenttype", "application/json",
		"data", data,
	))
	if err != nil {
		panic("demors: event not encodable: " + err.Error())
	}
	return b
}

// verificationWait bounds an operation's wait for a slot to send a verification: every
// delivery ends within deliveryTimeout, so one frees up unless the deliverer is flooded.
const verificationWait = deliveryTimeout

// startVerification posts a pdpp.subscription.verify event; a 2xx answer with {"challenge":
// <the same value>} activates the subscription. With no slot free within verificationWait
// it is not sent and the subscription stays pending_verification (re-enabling sends one).
func (s *Server) startVerification(ctx context.Context, rc *reqCtx, sub subscription) {
	if err := s.deliveries.reserve(ctx, verificationWait); err != nil {
		s.log.Warn("demo RS webhook verification not sent", "subscription_id", sub.ID, "err", err)
		return
	}
	challenge := randomHex(16)
	eventID := "evt_" + randomHex(12)
	body := event(rc, "pdpp.subscription.verify", eventID, sub, obj(
		"subscription_id", sub.ID, "grant_id", sub.GrantID, "challenge", challenge))
	s.deliveries.start(sub.CallbackURL, sub.Secret, eventID, body, func(res deliveryResult) {
		if res.err != nil {
			return
		}
		var echo struct {
			Challenge string `json:"challenge"`
		}
		if json.Unmarshal(res.body, &echo) != nil || echo.Challenge != challenge {
			s.log.Info("demo RS webhook verification not echoed", "subscription_id", sub.ID)
			return
		}
		s.subMu.Lock()
		defer s.subMu.Unlock()
		cur, ok := s.subs[sub.ID]
		if !ok {
			return
		}
		cur.Verified = true
		if cur.Status == subPending {
			cur.Status = subActive
		}
		cur.UpdatedAt = nowStamp()
		s.subs[cur.ID] = cur
	})
}

func (s api) CreateEventSubscription(ctx context.Context, req rsserver.CreateEventSubscriptionRequestObject) (rsserver.CreateEventSubscriptionResponseObject, error) {
	rc, body := reqCtxFrom(ctx), req.Body
	g, err := subscriptionGrant(rc)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return nil, errInvalid("body", "a JSON body with callback_url is required")
	}
	if err := checkCallbackURL(body.CallbackUrl); err != nil {
		return nil, err
	}
	var filter []string
	if body.Filters != nil && body.Filters.Streams != nil {
		filter = append([]string{}, *body.Filters.Streams...)
		if len(filter) == 0 {
			return nil, errInvalid("filters.streams", "filters.streams must name at least one stream")
		}
		if len(filter) > maxFilterStreams {
			return nil, errInvalid("filters.streams", "filters.streams lists %d streams; name at most %d", len(filter), maxFilterStreams)
		}
		for _, name := range filter {
			if len(g.connectionsFor(s.cat, name)) == 0 {
				return nil, errInvalid("filters.streams", "stream '%s' is not in this grant", name)
			}
		}
	}
	scope := []targetKey{}
	for t := range s.grantedTargets(g, "") {
		if filter == nil || slices.Contains(filter, t.stream.Name) {
			scope = append(scope, targetKey{t.conn, t.stream.Name})
		}
	}
	now := nowStamp()
	sub := subscription{
		ID:            "sub_" + randomHex(12),
		GrantID:       g.grantID,
		ClientID:      g.clientID,
		CallbackURL:   body.CallbackUrl,
		Status:        subPending,
		Secret:        newSecret(),
		FilterStreams: filter,
		Scope:         scope,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	s.subMu.Lock()
	if n := len(s.grantSubscriptions(sub.GrantID)); n >= maxSubscriptionsPerGrant {
		s.subMu.Unlock()
		return nil, errInvalid("", "this grant already has %d event subscriptions, the most the demo resource server keeps; delete one first", n)
	}
	s.subs[sub.ID] = sub
	s.subMu.Unlock()
	s.startVerification(ctx, rc, sub)
	return jsonReply(http.StatusCreated, obj(
		"subscription_id", sub.ID,
		"secret", sub.Secret,
		"status", sub.Status,
		"callback_url", sub.CallbackURL,
		"created_at", sub.CreatedAt,
	)), nil
}

// grantSubscriptions returns the grant's (at most maxSubscriptionsPerGrant) subscriptions,
// oldest first. The caller holds subMu.
func (s *Server) grantSubscriptions(grantID string) []subscription {
	var out []subscription
	for _, sub := range s.subs {
		if sub.GrantID == grantID {
			out = append(out, sub)
		}
	}
	slices.SortFunc(out, func(a, b subscription) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

func (s api) ListEventSubscriptions(ctx context.Context, req rsserver.ListEventSubscriptionsRequestObject) (rsserver.ListEventSubscriptionsResponseObject, error) {
	rc := reqCtxFrom(ctx)
	g, err := subscriptionGrant(rc)
	if err != nil {
		return nil, err
	}
	data := []object{}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for _, sub := range s.grantSubscriptions(g.grantID) {
		data = append(data, subscriptionObject(sub))
	}
	return jsonReply(http.StatusOK, obj("data", data)), nil
}

// ownSubscription loads a live subscription of the bearer's grant. The caller holds subMu.
func (s *Server) ownSubscription(rc *reqCtx, id string) (subscription, error) {
	g, err := subscriptionGrant(rc)
	if err != nil {
		return subscription{}, err
	}
	sub, ok := s.subs[id]
	if !ok || sub.GrantID != g.grantID {
		return subscription{}, errNotFound("Subscription not found")
	}
	return sub, nil
}

func (s api) GetEventSubscription(ctx context.Context, req rsserver.GetEventSubscriptionRequestObject) (rsserver.GetEventSubscriptionResponseObject, error) {
	s.subMu.Lock()
	sub, err := s.ownSubscription(reqCtxFrom(ctx), req.SubscriptionId)
	s.subMu.Unlock()
	if err != nil {
		return nil, err
	}
	return jsonReply(http.StatusOK, subscriptionObject(sub)), nil
}

func (s api) UpdateEventSubscription(ctx context.Context, req rsserver.UpdateEventSubscriptionRequestObject) (rsserver.UpdateEventSubscriptionResponseObject, error) {
	rc, id, body := reqCtxFrom(ctx), req.SubscriptionId, req.Body
	if body == nil || (body.Enabled == nil && body.RotateSecret == nil) {
		return nil, errInvalid("body", "give enabled and/or rotate_secret")
	}
	sub, reverify, rotated, err := s.applyUpdate(ctx, rc, id, body)
	if err != nil {
		return nil, err
	}
	// Outside subMu: the wait for a delivery slot must not hold up other
	// subscription operations or the verification callbacks that free slots.
	if reverify {
		s.startVerification(ctx, rc, sub)
	}
	out := object{}
	if rotated != "" {
		out = out.set("secret", rotated)
	}
	return jsonReply(http.StatusOK, out.set("subscription", subscriptionObject(sub))), nil
}

// applyUpdate changes and stores a subscription under subMu, and says whether it
// needs a new verification and what its rotated secret is.
func (s *Server) applyUpdate(ctx context.Context, rc *reqCtx, id string, body *rsserver.EventSubscriptionUpdateRequest) (sub subscription, reverify bool, rotated string, err error) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	sub, err = s.ownSubscription(rc, id)
	if err != nil {
		return sub, false, "", err
	}
	if body.Enabled != nil {
		if *body.Enabled {
			if sub.Status != subActive && sub.Status != subPending {
				sub.Status = subPending
				if sub.Verified {
					sub.Status = subActive
				}
				reverify = !sub.Verified
			}
			sub.DisabledReason = ""
		} else if sub.Status != subDisabled {
			sub.Status = subDisabled
			sub.DisabledReason = "disabled_by_client"
		}
	}
	if body.RotateSecret != nil && *body.RotateSecret {
		sub.Secret = newSecret()
		rotated = sub.Secret
	}
	sub.UpdatedAt = nowStamp()
	s.subs[sub.ID] = sub
	return sub, reverify, rotated, nil
}

func (s api) DeleteEventSubscription(ctx context.Context, req rsserver.DeleteEventSubscriptionRequestObject) (rsserver.DeleteEventSubscriptionResponseObject, error) {
	rc, id := reqCtxFrom(ctx), req.SubscriptionId
	s.subMu.Lock()
	defer s.subMu.Unlock()
	// As at the reference RS, a second DELETE finds nothing: 404 not_found.
	sub, err := s.ownSubscription(rc, id)
	if err != nil {
		return nil, err
	}
	// Removed, not kept as deleted, so it no longer counts towards maxSubscriptionsPerGrant.
	delete(s.subs, sub.ID)
	return &reply{status: http.StatusNoContent, header: http.Header{}}, nil
}

func (s api) SendTestEvent(ctx context.Context, req rsserver.SendTestEventRequestObject) (rsserver.SendTestEventResponseObject, error) {
	rc := reqCtxFrom(ctx)
	s.subMu.Lock()
	sub, err := s.ownSubscription(rc, req.SubscriptionId)
	s.subMu.Unlock()
	if err != nil {
		return nil, err
	}
	if sub.Status != subActive && sub.Status != subPending {
		return nil, errConflict("subscription_not_deliverable",
			"Test events need an active or pending_verification subscription; this one is "+sub.Status)
	}
	switch err := s.deliveries.reserve(ctx, 0); {
	case errors.Is(err, errDeliveriesBusy):
		return nil, errConflict("deliveries_busy", fmt.Sprintf(
			"%d webhook deliveries are in flight, the most this demo resource server runs at once; retry in a few seconds", maxDeliveriesInFlight))
	case err != nil:
		return nil, errConflict("server_closing", "The demo resource server is shutting down")
	}
	eventID := "evt_" + randomHex(12)
	body := event(rc, "pdpp.subscription.test", eventID, sub, obj(
		"subscription_id", sub.ID, "grant_id", sub.GrantID, "message", "Test event from the PDPP demo resource server"))
	s.deliveries.start(sub.CallbackURL, sub.Secret, eventID, body, nil)
	return jsonReply(http.StatusAccepted, obj("event_id", eventID)), nil
}
