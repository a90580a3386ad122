package events

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/jsonpool"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/redact"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// An RS answer of the subscription routes is decoded once, by the json v2
// API. Its subscriptions and advertisement are objects an RS may extend
// with members of its own, every one of which a reply shows: each is read
// as an object, its members' values kept as the slices of the body the
// decoder read (jsontext.Value), never decoded; a value is looked into only
// where the reply shows it (its text, or a preview). The generated models
// (gen/rsclient) cannot hold them: they drop the members they do not name
// and refuse a whole answer for one member of an unexpected type, which
// today's replies show as the RS sent it.
//
// Names match exactly, a repeated name is taken as encoding/json takes it
// (the last wins) and invalid UTF-8 in a name reads as U+FFFD, as
// encoding/json reads it (FuzzDecodeSubscription holds both to it).

// decodeOptions are the options of every decode of an RS answer here.
var decodeOptions = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// Bounds of what a decode builds. A member costs its name and memberCost
// bytes of map entry, whatever the size of its value (a slice of the
// body); an object whose members would cost over maxDecodedObject keeps
// only stubNames (a stub: its reply shows its id, status and size).
const (
	maxDecodedObject = 64 << 10
	memberCost       = 64
	// maxSubscriptions is the most items a subscription list answer may
	// hold; no grant has that many, and each costs a slice of the body.
	maxSubscriptions = 10_000
)

// stubNames are the members a stub keeps.
var stubNames = []string{"subscription_id", "status", "callback_url"}

// object is a JSON object an RS wrote: each member's value as the body
// spells it, by name.
type object struct {
	members map[string]jsontext.Value
	raw     jsontext.Value // the object as the body spells it
	stub    bool           // members over maxDecodedObject: only stubNames kept
}

// wholeKey names, in a stub's compact form, the description of the whole.
const wholeKey = "whole"

// decodeObject reads the JSON object raw; ok is false when raw is not one
// valid JSON object. One pass of a pooled jsontext.Decoder (jsonpool) over
// raw, each value read in place; the loop reads a member a turn, bounded
// by len(raw).
func decodeObject(raw []byte) (obj object, ok bool) {
	dec := jsonpool.Get(raw) // values alias raw; options as decodeOptions
	defer jsonpool.Put(dec)
	if dec.PeekKind() != '{' {
		return object{}, false
	}
	_, _ = dec.ReadToken()
	obj = object{members: map[string]jsontext.Value{}, raw: raw}
	cost := 0
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return object{}, false
		}
		v, err := dec.ReadValue()
		if err != nil {
			return object{}, false
		}
		k := unquote(name)
		if cost += len(k) + memberCost; cost > maxDecodedObject && !obj.stub {
			obj.stub = true
			for name := range obj.members {
				if !isStubName(name) {
					delete(obj.members, name)
				}
			}
		}
		if !obj.stub || isStubName(k) {
			obj.members[k] = v
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return object{}, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return object{}, false // more than one value
	}
	return obj, true
}

func isStubName(k string) bool { return slices.Contains(stubNames, k) }

// str is member k as a string: "" when absent or not a string.
func (o object) str(k string) string { return str(o.members[k]) }

// str is the JSON value v as a string: "" when it is not a string.
func str(v jsontext.Value) string {
	if v.Kind() != '"' {
		return ""
	}
	return unquote(v)
}

// withoutSecrets is o without its secret-like members, at any depth (see
// package redact), so no result after create can show a secret.
func (o object) withoutSecrets() object {
	out := object{members: make(map[string]jsontext.Value, len(o.members)), raw: redact.JSON(o.raw), stub: o.stub}
	for k, v := range o.members {
		if !redact.IsSecretName(k) {
			out.members[k] = redact.JSON(v)
		}
	}
	return out
}

// decodeSubscription reads one subscription object from an RS answer,
// without secrets: the body of a get, or the subscription member of an
// update's answer (rsclient.EventSubscriptionUpdated).
func decodeSubscription(body []byte, updated bool) (object, error) {
	if updated {
		var upd rsclient.EventSubscriptionUpdated
		if jsontext.Value(body).Kind() != '{' || json.Unmarshal(body, &upd, decodeOptions, json.WithUnmarshalers(rawInPlace)) != nil {
			return object{}, badResponse(errors.New("the update answer is not a JSON object holding a subscription"))
		}
		if body = upd.Subscription; jsontext.Value(body).Kind() != '{' {
			return object{}, badResponse(errors.New("the answer has no subscription object"))
		}
	}
	doc, ok := decodeObject(body)
	if !ok {
		return object{}, badResponse(errors.New("the subscription answer is not a JSON object"))
	}
	return doc.withoutSecrets(), nil
}

// subscriptionItems returns the items of a subscription list answer
// (rsclient.EventSubscriptionList), each still encoded: a JSON object
// whose data member is an array ([] when the list is empty) of at most
// maxSubscriptions objects. Anything else (null, {}, {"data":null}, a data
// member that is not an array) is rs_bad_response, never an empty list.
// One decode; the items are read in place, none decoded.
func subscriptionItems(body []byte) ([]jsontext.Value, error) {
	const what = "subscription list"
	var doc rsclient.EventSubscriptionList
	err := json.Unmarshal(body, &doc, decodeOptions, json.WithUnmarshalers(subscriptionList))
	var refused *rs.Error
	switch {
	case errors.As(err, &refused):
		return nil, refused
	case err != nil:
		return nil, badResponse(fmt.Errorf("the %s answer is not a list: %v", what, err))
	case doc.Data == nil:
		return nil, badResponse(fmt.Errorf("the %s answer has no data list", what))
	}
	return doc.Data, nil
}

// subscriptionList reads the data list of a subscription list answer: item
// by item, each a JSON object kept as the body spells it, at most
// maxSubscriptions of them. null leaves the list nil; anything else than an
// array is left to the default decoding (an error). Made once: json v2
// caches its choices in it.
var subscriptionList = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, list *[]jsontext.Value) error {
	if dec.PeekKind() != '[' {
		return json.SkipFunc
	}
	_, _ = dec.ReadToken()
	*list = []jsontext.Value{}
	for i := 0; dec.PeekKind() != ']'; i++ { // an item a turn: bounded by maxSubscriptions
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if i == maxSubscriptions {
			return rs.AdapterError("rs_response_too_large",
				fmt.Sprintf("the RS listed more than %d event subscriptions for this grant, more than this server renders; delete the ones no longer needed (%s), or ask the RS's operator", maxSubscriptions, mcptools.ToolDeleteEventSubscription), "")
		}
		if err := evidence.ItemNotObject("subscription list", i, v); err != nil {
			return badResponse(err)
		}
		*list = append(*list, v[:len(v):len(v)])
	}
	_, err := dec.ReadToken()
	return err
})

// fields reads a subscription's id, status and callback URL (strings; ""
// when absent or not a string, the last of a repeated name) from its
// encoding, decoding nothing else.
func fields(raw jsontext.Value) (id, status, callback string) {
	var f struct {
		ID       jsontext.Value `json:"subscription_id"`
		Status   jsontext.Value `json:"status"`
		Callback jsontext.Value `json:"callback_url"`
	}
	if json.Unmarshal(raw, &f, decodeOptions, json.WithUnmarshalers(rawInPlace)) != nil {
		return "", "", ""
	}
	return str(f.ID), str(f.Status), str(f.Callback)
}

// unquote is the JSON string q decoded, invalid UTF-8 and lone surrogates
// read as U+FFFD as encoding/json reads them.
func unquote(q []byte) string {
	s, _ := jsontext.AppendUnquote(nil, q)
	return string(s)
}

// subscriptionAt decodes the subscription raw, an item of a list, for
// rendering: bounded (decodeObject), without secrets.
func subscriptionAt(raw jsontext.Value) object {
	o, _ := decodeObject(raw)
	return o.withoutSecrets()
}

// advertisement reads capabilities.client_event_subscriptions from the RS
// metadata document body, without secrets; ok is false when it has none.
// One decode of the body: the advertisement is kept as the body spells it
// (rawInPlace), then read as an object.
func advertisement(body []byte) (object, bool) {
	var doc struct {
		Capabilities struct {
			Adv jsontext.Value `json:"client_event_subscriptions"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(body, &doc, decodeOptions, json.WithUnmarshalers(rawInPlace)) != nil {
		return object{}, false
	}
	adv, ok := decodeObject(doc.Capabilities.Adv)
	return adv.withoutSecrets(), ok
}

// rawInPlace keeps a raw member as the slice of the body it was read from,
// not a copy (json.Unmarshal reads a []byte in place).
var rawInPlace = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *jsontext.Value) error {
	raw, err := dec.ReadValue()
	*v = raw[:len(raw):len(raw)]
	return err
})
