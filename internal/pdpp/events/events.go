package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/webhookurl"
)

// The events toolset manages the webhook subscriptions of the bearer's own
// grant (/v1/event-subscriptions). Signing, delivery and preflight guidance
// is said once, by DiscoverEventSubscriptionCapabilities; the other tools
// only act. A signing secret appears only in the structured output of the
// create result, never in content[] text and never in a later result.

// protectedResourcePath is the RS metadata document (RFC 9728) whose
// capabilities.client_event_subscriptions advertises the subscription rules.
const protectedResourcePath = ".well-known/oauth-protected-resource"

// maxListedLines bounds the per-item lines of list-like event texts; the
// structured output keeps every item.
const maxListedLines = 50

// Adapter error codes of the events toolset.
const (
	codeInvalidCallbackURL = "invalid_callback_url"
	codeInvalidStreams     = "invalid_streams"
)

// eventType is one event type a subscription may receive.
type eventType struct {
	Type    string `json:"type"`
	Meaning string `json:"meaning,omitempty"`
}

// profileEventTypes are the event types of the PDPP reference profile for
// client event subscriptions, used when the RS does not list its own.
var profileEventTypes = []eventType{
	{"pdpp.records.changed", "records changed in a subscribed stream; data carries stream, connection_id and a changes_since cursor for query_records, never record bodies"},
	{"pdpp.grant.revoked", "the grant was revoked; the subscription becomes disabled_revoked and cannot be re-enabled"},
	{"pdpp.subscription.verify", "sent after create (and when an unverified subscription is re-enabled); answer it to activate the subscription"},
	{"pdpp.subscription.test", "sent by send_test_event"},
}

// profileSigning is the Standard Webhooks signing profile of the PDPP
// reference RS, used for every key the RS does not advertise itself.
func profileSigning() map[string]any {
	return map[string]any{
		"profile":            "standard-webhooks",
		"algorithm":          "HMAC-SHA256",
		"id_header":          "webhook-id",
		"timestamp_header":   "webhook-timestamp",
		"signature_header":   "webhook-signature",
		"signed_payload":     "{webhook-id}.{webhook-timestamp}.{body}",
		"signature_encoding": "v1,<base64>",
		"key_prefix":         "whsec_",
		"key":                "the base64-decoded part of the signing secret after whsec_",
		"check":              "compute the HMAC over the raw body, compare in constant time with each space-separated v1 signature, and refuse stale webhook-timestamp values",
	}
}

// profileDelivery is the delivery profile of the PDPP reference RS, used for
// every key the RS does not advertise itself.
func profileDelivery() map[string]any {
	return map[string]any{
		"envelope":  "CloudEvents 1.0 structured mode, POSTed as application/cloudevents+json",
		"semantics": "at-least-once, after the change is committed; deduplicate on webhook-id",
		"retries":   "a non-2xx answer or no answer is retried with backoff; when attempts run out the subscription becomes disabled_failure (re-enable it with update_event_subscription)",
		// Written as an RS writes it, so text reads either the same way.
		"verification": jsontext.Value(`{"answer":"HTTP 2xx with the JSON body {\"challenge\": \"<data.challenge>\"}",` +
			`"event":"pdpp.subscription.verify","until":"the subscription stays pending_verification"}`),
		"callback_url": "https to a public host, at most 2048 characters; loopback, private and metadata addresses are refused unless the server allows them for local development",
		"statuses": map[string]any{
			"pending_verification": "waiting for the verify answer",
			"active":               "delivering",
			"disabled":             "stopped by the client; update_event_subscription enabled=true resumes it",
			"disabled_failure":     "stopped after failed deliveries; re-enable it the same way",
			"disabled_revoked":     "the grant was revoked; final",
			"deleted":              "gone; get answers not_found",
		},
	}
}

// preflightSteps are the steps before and after creating a subscription.
var preflightSteps = []string{
	"Run a receiver the RS can reach at a public https callback_url.",
	`Make it answer pdpp.subscription.verify with HTTP 2xx and {"challenge": "<data.challenge>"}; until then the subscription stays pending_verification.`,
	"create_event_subscription returns the whsec_ signing secret once, in structured output only: hand it to the receiver at once; no later result shows it.",
	"The receiver checks webhook-signature over {webhook-id}.{webhook-timestamp}.{raw body} before trusting a delivery, and ignores a webhook-id it has seen.",
	"Call send_test_event, then confirm the receiver got a verified pdpp.subscription.test.",
	"On pdpp.records.changed, read the changes with query_records changes_since=<data.changes_since>; events never carry record bodies.",
}

// scopeStream is one granted stream events may cover, with its connections.
type scopeStream struct {
	Stream      string   `json:"stream"`
	Connections []string `json:"connection_ids"`
}

// DiscoverEventSubscriptionCapabilities serves
// discover_event_subscription_capabilities: the RS advertisement
// (GET /.well-known/oauth-protected-resource) completed with the PDPP
// reference profile, and the grant's streams (GET /v1/schema). The scope
// grows with the grant and the advertisement is the RS's own: compact
// detail keeps what fits the reply budget and names the full call.
func (a *Tools) DiscoverEventSubscriptionCapabilities(ctx context.Context, args mcptools.DiscoverEventSubscriptionCapabilitiesArgs) (*mcp.CallToolResult, error) {
	const tool = mcptools.ToolDiscoverEventSubscriptionCapabilities
	shown := a.host.ArgsMap(args)
	if err := a.host.RefuseOwner(ctx); err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	adv, advertised := a.subscriptionAdvertisement(ctx)
	scope, err := a.grantScope(ctx)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	caps := capabilities{advertised: advertised, scope: scope, supported: string(adv.members["supported"]) == "true", endpoint: adv.str("endpoint")}
	caps.eventTypes, caps.eventTypesFromRS = advertisedEventTypes(adv.members["event_types"])
	caps.signing, caps.signingFromRS = merged(profileSigning(), adv.members["signing"])
	caps.delivery, caps.deliveryFromRS = merged(profileDelivery(), adv.members["delivery"])
	full := a.host.FullDetailCall(tool, nil)
	if args.Detail == evidence.DetailFull {
		out := caps.structured(adv)
		out["detail"] = evidence.DetailFull
		return a.host.FullReply(ctx, tool, shown, caps.text(full), out, "", nil), nil
	}
	limit := a.host.ReplyBudget(tool, 0)
	text := a.host.CompactText(caps.text(full), limit)
	fit := newCapsFit(caps.structured(adv), full)
	structured, cut, _ := a.host.FitStructured(limit, func() string { return text }, fit.build)
	return a.host.CompactResult(limit, text+fit.truncationLine(cut), structured, len(structured), &full), nil
}

// subscriptionAdvertisement reads capabilities.client_event_subscriptions
// from the RS metadata. A missing document or entry is not an error: the
// result then says the RS does not advertise subscriptions.
func (a *Tools) subscriptionAdvertisement(ctx context.Context) (object, bool) {
	resp, err := a.rs.Get(ctx, protectedResourcePath, nil)
	if err != nil {
		a.log.Debug("protected-resource metadata unavailable", "err", err)
		return object{}, false
	}
	// Read without do, so its secret-like members are taken out here.
	return advertisement(resp.Body)
}

// grantScope lists the granted streams and their connections from the
// compact schema (the full document when the RS refuses view=compact).
func (a *Tools) grantScope(ctx context.Context) ([]scopeStream, error) {
	params := &rsclient.GetSchemaParams{View: new(rsclient.GetSchemaParamsViewCompact)}
	req, berr := rsclient.NewGetSchemaRequest(a.rs.BaseURL(), params)
	resp, err := a.host.DoControl(ctx, req, berr)
	if err != nil && a.host.RejectsView(err) {
		params.View = nil
		req, berr = rsclient.NewGetSchemaRequest(a.rs.BaseURL(), params)
		resp, err = a.host.DoControl(ctx, req, berr)
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Connectors []struct {
			Streams []struct {
				Name string `json:"name"`
			} `json:"streams"`
			GrantedConnections []struct {
				ConnectionID string `json:"connection_id"`
			} `json:"granted_connections"`
		} `json:"connectors"`
	}
	if err := json.Unmarshal(resp.Body, &doc, decodeOptions); err != nil {
		return nil, rs.AdapterError(CodeBadResponse, "the schema document is not JSON: "+err.Error(), "")
	}
	out := []scopeStream{} // [] in the reply when the grant shows none
	for _, c := range doc.Connectors {
		var conns []string
		for _, gc := range c.GrantedConnections {
			if gc.ConnectionID != "" {
				conns = append(conns, gc.ConnectionID)
			}
		}
		for _, st := range c.Streams {
			if st.Name == "" {
				continue
			}
			i := slices.IndexFunc(out, func(s scopeStream) bool { return s.Stream == st.Name })
			if i < 0 {
				out = append(out, scopeStream{Stream: st.Name, Connections: []string{}})
				i = len(out) - 1
			}
			for _, id := range conns {
				if !slices.Contains(out[i].Connections, id) {
					out[i].Connections = append(out[i].Connections, id)
				}
			}
		}
	}
	return out, nil
}

// maxEventTypes bounds the event types read from an advertisement; no RS
// defines that many.
const maxEventTypes = 10_000

// advertisedEventTypes reads the RS's event types, the array list (strings,
// or objects with a type and a description), at most maxEventTypes of
// them, and gives the known meaning of each; without a list it returns the
// profile's types. Each item is read in place, one a turn.
func advertisedEventTypes(list jsontext.Value) ([]eventType, bool) {
	if list.Kind() != '[' {
		return profileEventTypes, false
	}
	var out []eventType
	dec := jsonpool.Get(list) // values alias list
	defer jsonpool.Put(dec)
	_, _ = dec.ReadToken()
	for i := 0; i < maxEventTypes && dec.PeekKind() != ']'; i++ {
		item, err := dec.ReadValue()
		if err != nil {
			break
		}
		var et eventType
		switch item.Kind() {
		case '"':
			et.Type = unquote(item)
		case '{':
			o, _ := decodeObject(item)
			et.Type, et.Meaning = o.str("type"), o.str("description")
		}
		if et.Type == "" {
			continue
		}
		if et.Meaning == "" {
			if i := slices.IndexFunc(profileEventTypes, func(p eventType) bool { return p.Type == et.Type }); i >= 0 {
				et.Meaning = profileEventTypes[i].Meaning
			}
		}
		out = append(out, et)
	}
	if len(out) == 0 {
		return profileEventTypes, false
	}
	return out, true
}

// merged lays the RS's advertised object over the profile defaults (its
// members as the RS wrote them) and reports whether the RS advertised
// anything.
func merged(profile map[string]any, advertised jsontext.Value) (map[string]any, bool) {
	adv, ok := decodeObject(advertised)
	if !ok || len(adv.members) == 0 {
		return profile, false
	}
	for k, v := range adv.members {
		profile[k] = v
	}
	return profile, true
}

// shown is a member of the capabilities (a profile value, or one the RS
// wrote) as text: a string as it is, other JSON as the RS wrote it.
func shown(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case jsontext.Value:
		if v.Kind() == '"' {
			return unquote(v)
		}
		return string(v)
	}
	return fmt.Sprint(v)
}

// capabilities is the answer of the discovery tool.
type capabilities struct {
	advertised, supported                           bool
	endpoint                                        string
	eventTypes                                      []eventType
	signing, delivery                               map[string]any
	eventTypesFromRS, signingFromRS, deliveryFromRS bool
	scope                                           []scopeStream
}

// source and sourceNote name, by whether the RS advertised it, where a
// part of the capabilities comes from: in structured output and in text.
var (
	source     = map[bool]string{true: "rs", false: "pdpp_profile"}
	sourceNote = map[bool]string{true: "advertised by the RS", false: "PDPP reference profile, not advertised by this RS"}
)

func (c capabilities) structured(adv object) map[string]any {
	signing := map[string]any{"source": source[c.signingFromRS]}
	maps.Copy(signing, c.signing)
	delivery := map[string]any{"source": source[c.deliveryFromRS]}
	maps.Copy(delivery, c.delivery)
	out := map[string]any{
		"supported":   c.supported,
		"event_types": c.eventTypes,
		"scope":       c.scope,
		"signing":     signing,
		"delivery":    delivery,
		"preflight":   preflightSteps,
	}
	if c.advertised {
		out["advertisement"] = adv
	}
	return out
}

// text renders the capabilities, each RS string clipped and each list at
// most maxListedLines lines; full is the call that shows everything.
func (c capabilities) text(full evidence.Continuation) string {
	sv := func(v any) string { return clipShown(shown(v)) }
	var b strings.Builder
	switch {
	case !c.advertised:
		b.WriteString("Event subscriptions: this RS does not advertise client_event_subscriptions in /.well-known/oauth-protected-resource; creating one may fail. Rules below are the PDPP reference profile.\n")
	case !c.supported:
		b.WriteString("Event subscriptions: the RS advertises them as not supported for this deployment; do not create one.\n")
	default:
		fmt.Fprintf(&b, "Event subscriptions: supported (%s).\n", cmp.Or(c.endpoint, "/v1/event-subscriptions"))
	}
	fmt.Fprintf(&b, "Event types (%s):\n", sourceNote[c.eventTypesFromRS])
	for i, et := range c.eventTypes {
		if i == maxListedLines {
			fmt.Fprintf(&b, "- ... %d more; every one: %s\n", len(c.eventTypes)-i, full.Call())
			break
		}
		if et.Meaning != "" {
			fmt.Fprintf(&b, "- %s: %s\n", sv(et.Type), sv(et.Meaning))
		} else {
			fmt.Fprintf(&b, "- %s\n", sv(et.Type))
		}
	}
	b.WriteString("Streams in this grant (create's streams may narrow them; default all):\n")
	if len(c.scope) == 0 {
		b.WriteString("- none visible to this grant\n")
	}
	for i, s := range c.scope {
		if i == maxListedLines {
			fmt.Fprintf(&b, "- ... %d more in structured output (scope); every one: %s\n", len(c.scope)-i, full.Call())
			break
		}
		if len(s.Connections) > 0 {
			fmt.Fprintf(&b, "- %s (connection_id %s)\n", sv(s.Stream), sv(strings.Join(s.Connections, ", ")))
		} else {
			fmt.Fprintf(&b, "- %s\n", sv(s.Stream))
		}
	}
	fmt.Fprintf(&b, "Signing (%s): %s %v. Headers %v (event id), %v (unix seconds), %v (%v, space-separated). Signed text %v; key = %v. Check: %v.\n",
		sourceNote[c.signingFromRS], sv(c.signing["profile"]), sv(c.signing["algorithm"]),
		sv(c.signing["id_header"]), sv(c.signing["timestamp_header"]), sv(c.signing["signature_header"]), sv(c.signing["signature_encoding"]),
		sv(c.signing["signed_payload"]), sv(c.signing["key"]), sv(c.signing["check"]))
	fmt.Fprintf(&b, "Delivery (%s): %v; %v. Retries: %v. Callback URL: %v.\n",
		sourceNote[c.deliveryFromRS], sv(c.delivery["envelope"]), sv(c.delivery["semantics"]), sv(c.delivery["retries"]), sv(c.delivery["callback_url"]))
	if raw, _ := c.delivery["verification"].(jsontext.Value); raw.Kind() == '{' {
		v, _ := decodeObject(raw)
		fmt.Fprintf(&b, "Verify challenge: the RS sends %v; answer %v; until then %v.\n", sv(v.members["event"]), sv(v.members["answer"]), sv(v.members["until"]))
	}
	b.WriteString("Preflight:\n")
	for i, step := range preflightSteps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, step)
	}
	return b.String()
}

// CreateEventSubscription serves create_event_subscription:
// POST /v1/event-subscriptions, after checking the callback URL and streams.
func (a *Tools) CreateEventSubscription(ctx context.Context, args mcptools.CreateEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	const tool = mcptools.ToolCreateEventSubscription
	shown := a.host.ArgsMap(args)
	fail := func(err error) (*mcp.CallToolResult, error) { return a.host.ErrorResult(err, tool, shown), nil }
	// A callback URL the RS should not be asked to call (package webhookurl:
	// anything but https to a public host, unless the operator allows
	// private callbacks for local development) is refused before any RS request.
	if err := webhookurl.Check(args.CallbackURL, a.allowPrivateWebhooks); err != nil {
		return fail(rs.AdapterError(codeInvalidCallbackURL, err.Error(), "callback_url"))
	}
	if err := checkStreams(args.Streams); err != nil {
		return fail(err)
	}
	body := rsclient.EventSubscriptionCreateRequest{CallbackUrl: args.CallbackURL}
	if args.Streams != nil {
		streams := slices.Clone(args.Streams)
		body.Filters = &rsclient.EventSubscriptionFilters{Streams: &streams}
	}
	call := args.CreateEventSubscriptionCall()
	req, berr := call.NewRequest(a.rs.BaseURL(), body)
	// The one answer whose secret reaches the client: read it whole, take
	// the signing secret, and take every secret-like member out of the rest.
	resp, err := a.host.Do(ctx, req, berr)
	if err != nil {
		return fail(err)
	}
	created, ok := decodeObject(resp.Body)
	if !ok {
		return fail(rs.AdapterError(CodeBadResponse, "the create answer is not a JSON object", ""))
	}
	secret := created.str("secret")
	sub := created.withoutSecrets()
	id, status := sub.str("subscription_id"), sub.str("status")
	if len(secret) > maxSecretBytes {
		return fail(rs.AdapterError(CodeBadResponse, fmt.Sprintf("the RS created subscription %s but answered a %d-byte signing secret, longer than any real one (%d bytes at most); delete it with %s",
			clipShown(id), len(secret), maxSecretBytes, mcptools.ToolDeleteEventSubscription), ""))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Created event subscription %s: status %s, callback %s.\n", clipShown(id), clipShown(status), args.CallbackURL)
	if len(args.Streams) > 0 {
		fmt.Fprintf(&b, "Streams: %s.\n", strings.Join(args.Streams, ", "))
	} else {
		b.WriteString("Streams: every stream of the grant.\n")
	}
	if status == "pending_verification" {
		b.WriteString("The RS now sends pdpp.subscription.verify to the callback; the subscription turns active once the receiver answers it.\n")
	}
	if secret != "" {
		b.WriteString("Signing secret: in structured output (field secret), shown this once. Store it with the receiver now; no later result shows it.\n")
	}
	listFull := a.host.FullDetailCall(mcptools.ToolListEventSubscriptions, nil)
	full := subscriptionFull(id, listFull)
	if full.Tool == mcptools.ToolGetEventSubscription {
		fmt.Fprintf(&b, "next: %s to check status; %s to test delivery\n",
			subscriptionCall(mcptools.ToolGetEventSubscription, id).Call(),
			subscriptionCall(mcptools.ToolSendTestEvent, id).Call())
	}
	out := map[string]any{}
	if secret != "" {
		out["secret"] = secret
	}
	return a.subscriptionResult(tool, b.String(), sub, out, full), nil
}

// checkStreams refuses an explicit empty list and repeats; nil (omitted)
// means every granted stream. Each name's format (no blank or path-like
// names) was checked by the generated Validate.
func checkStreams(streams []string) error {
	if streams == nil {
		return nil
	}
	if len(streams) == 0 {
		return rs.AdapterError(codeInvalidStreams, "streams is empty: name at least one granted stream, or omit streams to cover every granted stream", "streams")
	}
	seen := map[string]bool{}
	for _, s := range streams {
		if seen[s] {
			return rs.AdapterError(codeInvalidStreams, fmt.Sprintf("stream %q is listed twice", s), "streams")
		}
		seen[s] = true
	}
	return nil
}

func subscriptionCall(tool, id string) evidence.Continuation {
	return evidence.Continuation{Tool: tool, Arguments: map[string]any{"subscription_id": id}}
}

// subscriptionText renders one subscription in a few lines, each RS string
// clipped to shownChars.
func subscriptionText(sub object) string {
	var b strings.Builder
	field := func(k string) string { return clipShown(sub.str(k)) }
	fmt.Fprintf(&b, "Event subscription %s: status %s\n", field("subscription_id"), field("status"))
	fmt.Fprintf(&b, "callback: %s\n", field("callback_url"))
	if r := field("disabled_reason"); r != "" {
		fmt.Fprintf(&b, "disabled_reason: %s\n", r)
	}
	if scope, ok := decodeObject(sub.members["scope"]); ok {
		// The subscription's own stream filter (scope.filters.streams) is
		// what it delivers; scope.streams is the whole grant, shown only
		// when there is no filter.
		filters, _ := decodeObject(scope.members["filters"])
		streams := filters.members["streams"]
		if streams.Kind() != '[' {
			streams = scope.members["streams"]
		}
		if streams.Kind() == '[' {
			fmt.Fprintf(&b, "streams: %s\n", strings.Join(streamNames(streams), ", "))
		}
	}
	if c, u := field("created_at"), field("updated_at"); c != "" || u != "" {
		fmt.Fprintf(&b, "created %s, updated %s\n", c, u)
	}
	return b.String()
}

// streamNames are the names shown for the streams of a subscription's
// scope, the JSON array list (each a string, or an object with a name and
// a connection_id), clipped, at most maxListedLines of them and a count of
// the rest. The items are read in place, one a turn: bounded by len(list).
func streamNames(list jsontext.Value) []string {
	var names []string
	dec := jsonpool.Get(list) // values alias list
	defer jsonpool.Put(dec)
	_, _ = dec.ReadToken()
	n := 0
	for ; dec.PeekKind() != ']'; n++ {
		s, err := dec.ReadValue()
		if err != nil {
			break
		}
		if n >= maxListedLines {
			continue
		}
		name := str(s)
		if o, ok := decodeObject(s); ok {
			name = o.str("name")
			if conn := o.str("connection_id"); conn != "" {
				name += " (" + conn + ")"
			}
		}
		if name = clipShown(name); name != "" {
			names = append(names, name)
		}
	}
	if n > maxListedLines {
		names = append(names, fmt.Sprintf("... %d more in structured output", n-maxListedLines))
	}
	return names
}

// ListEventSubscriptions serves list_event_subscriptions:
// GET /v1/event-subscriptions. The RS route has no paging, so the list
// grows with the grant's subscriptions: compact detail shows the whole
// subscriptions that fit the reply budget, keeps the ids of the others and
// names next, the same call with a cursor that resumes after the last one
// shown (the adapter's own: the RS list is read again and checked against
// what the cursor saw); full detail carries the RS envelope verbatim in
// data.
func (a *Tools) ListEventSubscriptions(ctx context.Context, args mcptools.ListEventSubscriptionsArgs) (*mcp.CallToolResult, error) {
	const tool = mcptools.ToolListEventSubscriptions
	shown := a.host.ArgsMap(args)
	page, err := a.host.ResolvePage(tool, args.Cursor, args, false)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	call := args.ListEventSubscriptionsCall()
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.host.DoControl(ctx, req, berr)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	subs, err := subscriptionItems(resp.Body)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	fullCall := page.Full()
	fullText := listText(subs, fullCall)
	if args.Detail == evidence.DetailFull {
		return a.host.FullReply(ctx, tool, shown, fullText, map[string]any{"detail": evidence.DetailFull}, "data", resp.Body), nil
	}
	limit, room := a.host.StepBudget(tool, 0)
	ids := make([]string, len(subs))
	for i, s := range subs {
		ids[i] = s.str("subscription_id")
	}
	st := page.Step(ids, func() int {
		return evidence.JSONStringLen(fullText) + evidence.WireLen(resp.Body) + 64
	})
	st.List = "list"
	text, structured, cut := subscriptionStep(subs, ids, st, room)
	return a.host.CompactResult(limit, text, structured, evidence.WireLen(structured), cut.Full), nil
}

// listHead is the first line of a subscription list's text.
func listHead(n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("No event subscriptions for this grant. Create one with %s after reading %s.\n",
			mcptools.ToolCreateEventSubscription, mcptools.ToolDiscoverEventSubscriptionCapabilities)
	case 1:
		return "1 event subscription:\n"
	}
	return fmt.Sprintf("%d event subscriptions:\n", n)
}

// subscriptionLine is one subscription's line in a list's text, RS strings
// clipped; a clipped line names the call that shows it whole (fullCall
// when it has no usable id).
func subscriptionLine(s object, fullCall evidence.Continuation) string {
	id, status, cb := s.str("subscription_id"), s.str("status"), s.str("callback_url")
	line := fmt.Sprintf("- %s  %s  %s", clipShown(id), clipShown(status), clipShown(cb))
	if clipShown(id) != id || clipShown(status) != status || clipShown(cb) != cb {
		line += "  (whole: " + subscriptionFull(id, fullCall).Call() + ")"
	}
	return line + "\n"
}

// listText renders a subscription list at detail "full": one line per
// subscription (at most maxListedLines; structured output has them all).
func listText(subs []object, fullCall evidence.Continuation) string {
	var b strings.Builder
	b.WriteString(listHead(len(subs)))
	for i, s := range subs {
		if i == maxListedLines {
			fmt.Fprintf(&b, "- ... %d more in structured output (data)\n", len(subs)-i)
			break
		}
		b.WriteString(subscriptionLine(s, fullCall))
	}
	if len(subs) > 0 {
		if id := subs[0].str("subscription_id"); id != "" && subscriptionFull(id, fullCall).Tool == mcptools.ToolGetEventSubscription {
			fmt.Fprintf(&b, "read one whole: %s\n", subscriptionCall(mcptools.ToolGetEventSubscription, id).Call())
		}
	}
	return b.String()
}

// GetEventSubscription serves get_event_subscription:
// GET /v1/event-subscriptions/{subscription_id}. A subscription's scope
// lists every granted stream and connection, so it grows with the grant:
// compact detail previews long values and names the full call; full detail
// carries the RS body verbatim in subscription.
func (a *Tools) GetEventSubscription(ctx context.Context, args mcptools.GetEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	const tool = mcptools.ToolGetEventSubscription
	shown := a.host.ArgsMap(args)
	call := args.GetEventSubscriptionCall()
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.host.DoControl(ctx, req, berr)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	sub, err := decodeSubscription(resp.Body, false)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	text := subscriptionText(sub)
	switch sub.str("status") {
	case "active", "pending_verification":
		text += "next: " + subscriptionCall(mcptools.ToolSendTestEvent, args.SubscriptionID).Call() + "\n"
	case "disabled", "disabled_failure":
		text += "next: " + evidence.Continuation{Tool: mcptools.ToolUpdateEventSubscription, Arguments: map[string]any{"subscription_id": args.SubscriptionID, "enabled": true}}.Call() + " to resume\n"
	}
	if args.Detail == evidence.DetailFull {
		return a.host.FullReply(ctx, tool, shown, text, map[string]any{"detail": evidence.DetailFull}, "subscription", resp.Body), nil
	}
	out := map[string]any{"detail": evidence.DetailCompact}
	return a.subscriptionResult(tool, text, sub, out, a.host.FullDetailCall(tool, shown)), nil
}

// UpdateEventSubscription serves update_event_subscription:
// PATCH /v1/event-subscriptions/{subscription_id} with {"enabled": ...}. It
// never asks the RS to rotate the secret, so it stays idempotent.
func (a *Tools) UpdateEventSubscription(ctx context.Context, args mcptools.UpdateEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	const tool = mcptools.ToolUpdateEventSubscription
	shown := a.host.ArgsMap(args)
	call := args.UpdateEventSubscriptionCall()
	req, berr := call.NewRequest(a.rs.BaseURL(), rsclient.EventSubscriptionUpdateRequest{Enabled: &args.Enabled})
	resp, err := a.host.DoControl(ctx, req, berr)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	sub, err := decodeSubscription(resp.Body, true)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	verb := "Disabled"
	if args.Enabled {
		verb = "Enabled"
	}
	text := verb + " delivery. " + subscriptionText(sub)
	full := subscriptionFull(args.SubscriptionID, a.host.FullDetailCall(mcptools.ToolListEventSubscriptions, nil))
	return a.subscriptionResult(tool, text, sub, map[string]any{}, full), nil
}

// DeleteEventSubscription serves delete_event_subscription:
// DELETE /v1/event-subscriptions/{subscription_id}.
func (a *Tools) DeleteEventSubscription(ctx context.Context, args mcptools.DeleteEventSubscriptionArgs) (*mcp.CallToolResult, error) {
	const tool = mcptools.ToolDeleteEventSubscription
	shown := a.host.ArgsMap(args)
	call := args.DeleteEventSubscriptionCall()
	req, berr := call.NewRequest(a.rs.BaseURL())
	if _, err := a.host.DoControl(ctx, req, berr); err != nil {
		var re *rs.Error
		if errors.As(err, &re) && re.Status == http.StatusNotFound && re.Code() == "not_found" {
			// The RS answers a second DELETE with 404 not_found: the
			// subscription is gone either way, so the call is idempotent.
			text := fmt.Sprintf("Event subscription %s does not exist (the RS answered 404 not_found): it was already deleted, or the id is not one of this grant's subscriptions. Nothing was changed; %s lists the live ones.\n",
				args.SubscriptionID, mcptools.ToolListEventSubscriptions)
			return a.deletedResult(args.SubscriptionID, text), nil
		}
		return a.host.ErrorResult(err, tool, shown), nil
	}
	text := fmt.Sprintf("Deleted event subscription %s; its undelivered events are dropped and no more are sent. Deleting it again answers that it no longer exists.\n", args.SubscriptionID)
	return a.deletedResult(args.SubscriptionID, text), nil
}

// deletedResult is delete_event_subscription's result. It renders nothing
// the RS sent (only the validated id and fixed text), and is still held to
// the tool's reply budget like every events result.
func (a *Tools) deletedResult(id, text string) *mcp.CallToolResult {
	structured := mustMarshalJSON(map[string]any{"subscription_id": id, "deleted": true})
	list := a.host.FullDetailCall(mcptools.ToolListEventSubscriptions, nil)
	return a.host.CompactResult(a.host.ReplyBudget(mcptools.ToolDeleteEventSubscription, 0), text, structured, len(structured), &list)
}

// SendTestEvent serves send_test_event:
// POST /v1/event-subscriptions/{subscription_id}/test-event.
func (a *Tools) SendTestEvent(ctx context.Context, args mcptools.SendTestEventArgs) (*mcp.CallToolResult, error) {
	const tool = mcptools.ToolSendTestEvent
	shown := a.host.ArgsMap(args)
	call := args.SendTestEventCall()
	req, berr := call.NewRequest(a.rs.BaseURL())
	resp, err := a.host.DoControl(ctx, req, berr)
	if err != nil {
		return a.host.ErrorResult(err, tool, shown), nil
	}
	var accepted rsclient.TestEventAccepted
	if err := json.Unmarshal(resp.Body, &accepted, decodeOptions); err != nil || accepted.EventId == "" {
		return a.host.ErrorResult(rs.AdapterError(CodeBadResponse, "the test-event answer has no event_id", ""), tool, shown), nil
	}
	if len(accepted.EventId) > maxEventIDBytes {
		return a.host.ErrorResult(rs.AdapterError(CodeBadResponse, fmt.Sprintf("the test-event answer's event_id is %d bytes, longer than any webhook-id (%d bytes at most); the event may still be queued",
			len(accepted.EventId), maxEventIDBytes), ""), tool, shown), nil
	}
	text := fmt.Sprintf("Queued test event %s (pdpp.subscription.test) for %s. Delivery is asynchronous: the receiver gets it with webhook-id %s.\n",
		accepted.EventId, args.SubscriptionID, accepted.EventId)
	structured := mustMarshalJSON(map[string]any{"event_id": accepted.EventId, "subscription_id": args.SubscriptionID})
	status := subscriptionCall(mcptools.ToolGetEventSubscription, args.SubscriptionID)
	return a.host.CompactResult(a.host.ReplyBudget(tool, 0), text, structured, len(structured), &status), nil
}
