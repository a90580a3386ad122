package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonwalk"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// Bounds of decoding event-subscription answers into Go values. An RS's
// JSON costs 17-100 times its size once decoded, so only what is shown is
// decoded, and only in pieces of a bounded size: a member over
// maxDecodedValue bytes is described (kind, bytes, items, a preview)
// instead, an object still over maxDecodedObject bytes is refused, and a
// list is read item by item as its rendering reaches each.
const (
	maxDecodedValue  = 16 << 10
	maxDecodedObject = 64 << 10
	// maxSubscriptions is the most items a subscription list answer may
	// hold; no grant has that many, and each costs a slice of the body.
	maxSubscriptions = 10_000
)

// decodeBoundedObject decodes the JSON object raw, with each member whose
// value is an object or array of over maxDecodedValue costly bytes (see
// costlyBytes) left encoded and described instead (a describedValue); an
// object of over maxDecodedObject costly bytes even so becomes a stub: its
// subscription_id, status and callback_url, with truncated and the whole
// described under wholeKey. Members named skip (if any) decode as null and
// cost nothing: the caller reads them its own way. ok is false when raw is
// not a JSON object. A small object decodes exactly as json.Unmarshal
// reads it.
func decodeBoundedObject(raw []byte, skip ...string) (map[string]any, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var described map[string]describedValue
	if len(raw) > maxDecodedValue {
		if !jsonwalk.Valid(raw) {
			return nil, false
		}
		var b bytes.Buffer
		b.WriteByte('{')
		n, costly := 0, 0 // costly: bytes that decode to more than themselves
		err := jsonwalk.Members(raw, func(k string, v []byte) error {
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			b.Write(mustMarshalJSON(k))
			b.WriteByte(':')
			if slices.Contains(skip, k) {
				v = []byte("null")
			}
			if c := jsonwalk.FirstByte(v); len(v) > maxDecodedValue && (c == '{' || c == '[') && costlyBytes(v) > maxDecodedValue {
				if described == nil {
					described = map[string]describedValue{}
				}
				described[k] = describedValue(evidence.DescribeValue(v, evidence.FieldValueChars))
				v = []byte("null") // the last of a repeated key wins, as decoding keeps it
			} else {
				delete(described, k)
			}
			b.Write(v)
			costly += len(k) + costlyBytes(v)
			if costly > maxDecodedObject {
				return errTooLarge
			}
			return nil
		})
		if err == errTooLarge {
			id, status, callback := subscriptionFields(raw)
			return map[string]any{"subscription_id": id, "status": status, "callback_url": callback, "truncated": true,
				wholeKey: describedValue(evidence.DescribeValue(raw, evidence.FieldValueChars))}, true
		}
		if err != nil {
			return nil, false
		}
		b.WriteByte('}')
		raw = b.Bytes()
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	for k, d := range described {
		m[k] = d
	}
	return m, true
}

// wholeKey names, in the stub of an object too large to decode, the
// description of the whole.
const wholeKey = "whole"

// describedValue stands, in a decoded RS answer, for a value left encoded:
// its evidence.ValueDescription, encoded. It encodes as that description;
// compactValue shows it as a Preview naming the call that reads it whole,
// and counts it as cut.
type describedValue json.RawMessage

// MarshalJSON encodes the description.
func (d describedValue) MarshalJSON() ([]byte, error) { return d, nil }

// preview is the evidence.Preview of the value d describes, naming next.
func (d describedValue) preview(next evidence.Continuation) evidence.Preview {
	var v evidence.ValueDescription
	_ = json.Unmarshal(d, &v)
	return evidence.Preview{Truncated: true, Kind: v.Kind, Preview: v.Preview, Bytes: v.Bytes, Items: v.Items, ItemsCapped: v.ItemsCapped, Next: next}
}

var errTooLarge = fmt.Errorf("over %d bytes", maxDecodedObject)

// costlyBytes counts the bytes of the JSON text raw that decode to many
// times their size: all but those of strings of SmallMemberBytes or more,
// which decode to about their own. One pass; strings skipped whole.
func costlyBytes(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); {
		if raw[i] == '"' {
			e := jsonwalk.SkipString(raw, i)
			if e-i < SmallMemberBytes {
				n += e - i
			}
			i = e
			continue
		}
		n++
		i++
	}
	return n
}

// maxEventTypes bounds the event types read from an advertisement; no RS
// defines that many.
const maxEventTypes = 10_000

// decodeAdvertisement decodes the RS's client_event_subscriptions object
// raw as decodeBoundedObject does, but for event_types, an array whose
// items are decoded one by one, at most maxEventTypes of them, each a
// string or, for an object, its type and description strings alone when
// it is larger than maxDecodedValue. ok is false when raw is not an object.
func decodeAdvertisement(raw []byte) (map[string]any, bool) {
	if len(bytes.TrimSpace(raw)) <= maxDecodedValue {
		return decodeBoundedObject(raw) // small: decoded as it is
	}
	adv, ok := decodeBoundedObject(raw, "event_types")
	if !ok {
		return nil, false
	}
	types, _ := lastMember(raw, "event_types")
	if jsonwalk.FirstByte(types) != '[' {
		if len(types) > 0 && len(types) <= maxDecodedValue {
			var v any
			_ = json.Unmarshal(types, &v)
			adv["event_types"] = v
		}
		return adv, true
	}
	list := []any{}
	_ = jsonwalk.Elements(types, func(v []byte) error {
		if len(list) == maxEventTypes {
			return errTooLarge
		}
		var item any
		if len(v) <= maxDecodedValue {
			_ = json.Unmarshal(v, &item)
		} else if jsonwalk.FirstByte(v) == '{' {
			m := map[string]any{}
			for _, k := range []string{"type", "description"} {
				if s, _ := lastMember(v, k); len(s) > 0 && s[0] == '"' {
					m[k], _ = jsonwalk.DecodeString(s)
				}
			}
			item = m
		}
		list = append(list, item)
		return nil
	})
	adv["event_types"] = list
	return adv, true
}

// subscriptionItems returns the items of a subscription list answer, each
// still encoded: a JSON object whose data member is an array ([] when the
// list is empty), of at most maxSubscriptions items. Anything else (null,
// {}, {"data":null}, a data member that is not an array) is
// rs_bad_response, never an empty list. Nothing is decoded.
func subscriptionItems(body []byte) ([]json.RawMessage, error) {
	const what = "subscription list"
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, badResponse(fmt.Errorf("the %s answer is not a JSON object", what))
	}
	if !jsonwalk.Valid(trimmed) {
		return listItemsFallback(trimmed, what)
	}
	var data []byte
	if err := jsonwalk.Members(trimmed, func(k string, v []byte) error {
		if k == "data" {
			data = v // the last one, as json.Unmarshal keeps
		}
		return nil
	}); err != nil {
		return listItemsFallback(trimmed, what)
	}
	if len(data) == 0 || data[0] == 'n' {
		return nil, badResponse(fmt.Errorf("the %s answer has no data list", what))
	}
	if data[0] != '[' {
		return listItemsFallback(trimmed, what)
	}
	items := []json.RawMessage{}
	err := jsonwalk.Elements(data, func(v []byte) error {
		if len(items) == maxSubscriptions {
			return errTooLarge
		}
		if err := evidence.ItemNotObject(what, len(items), v); err != nil {
			return badResponse(err)
		}
		items = append(items, v)
		return nil
	})
	if err == errTooLarge {
		return nil, rs.AdapterError("rs_response_too_large",
			fmt.Sprintf("the RS listed more than %d event subscriptions for this grant, more than this server renders; delete the ones no longer needed (%s), or ask the RS's operator", maxSubscriptions, mcptools.ToolDeleteEventSubscription), "")
	}
	var bad *rs.Error
	if errors.As(err, &bad) {
		return nil, err
	}
	if err != nil {
		return listItemsFallback(trimmed, what)
	}
	return items, nil
}

// listItemsFallback is subscriptionItems for a body the walk does not
// read, with encoding/json's error for it.
func listItemsFallback(body []byte, what string) ([]json.RawMessage, error) {
	var doc struct {
		Data *[]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, badResponse(fmt.Errorf("the %s answer is not a list: %v", what, err))
	}
	if doc.Data == nil {
		return nil, badResponse(fmt.Errorf("the %s answer has no data list", what))
	}
	for i, item := range *doc.Data {
		if err := evidence.ItemNotObject(what, i, item); err != nil {
			return nil, badResponse(err)
		}
	}
	return *doc.Data, nil
}

// subscriptionAt decodes the subscription raw, an item of a list, for
// rendering: bounded (decodeBoundedObject), without secrets. An item that
// is not an object decodes as it is when small, else is described.
func subscriptionAt(raw json.RawMessage) any {
	if m, ok := decodeBoundedObject(raw); ok {
		return withoutSecrets(m)
	}
	var v any
	if t := bytes.TrimSpace(raw); len(t) <= maxDecodedValue && json.Unmarshal(t, &v) == nil {
		return withoutSecrets(v)
	}
	return describedValue(evidence.DescribeValue(raw, evidence.FieldValueChars))
}

// subscriptionFields reads a subscription's id, status and callback URL
// (strings; "" when absent or not a string, the last of a repeated key)
// from its encoding, without decoding anything else.
func subscriptionFields(raw json.RawMessage) (id, status, callback string) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || !jsonwalk.Valid(t) {
		return "", "", ""
	}
	str := func(v []byte) string {
		if len(v) == 0 || v[0] != '"' {
			return ""
		}
		s, _ := jsonwalk.DecodeString(v)
		return s
	}
	_ = jsonwalk.Members(t, func(k string, v []byte) error {
		switch k {
		case "subscription_id":
			id = str(v)
		case "status":
			status = str(v)
		case "callback_url":
			callback = str(v)
		}
		return nil
	})
	return id, status, callback
}

// holdsDescribed reports whether v is an object with a member left
// encoded (decodeBoundedObject), which compactValue always shows as cut.
func holdsDescribed(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, val := range m {
		if _, ok := val.(describedValue); ok {
			return true
		}
	}
	return false
}

// lastMember returns the value of the last member key of the JSON object
// body (as json.Unmarshal into a map keeps it; nil when absent), and
// whether body is a valid JSON object at all. Nothing else is decoded.
func lastMember(body []byte, key string) (json.RawMessage, bool) {
	if !isObjectJSON(body) || !jsonwalk.Valid(body) {
		return nil, false
	}
	var val json.RawMessage
	err := jsonwalk.Members(body, func(k string, v []byte) error {
		if k == key {
			val = v
		}
		return nil
	})
	return val, err == nil
}

// isObjectJSON reports whether raw starts, after white space, a JSON object.
func isObjectJSON(raw []byte) bool { return jsonwalk.FirstByte(raw) == '{' }
