package events

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pdpp-mcp/pdpp-mcp/gen/mcptools"
	"github.com/pdpp-mcp/pdpp-mcp/gen/rsclient"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/evidence"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/redact"
	"github.com/pdpp-mcp/pdpp-mcp/internal/pdpp/rs"
)

// An RS answer of the subscription routes is decoded once, by the json v2
// API. Its subscriptions and advertisement are objects an RS may extend
// with members of its own, every one of which a reply shows: their values
// are kept as the slices of the body the decoder read (jsontext.Value),
// looked into only where a reply shows them (text, or a preview). The
// generated models (gen/rsclient) cannot hold them: they drop members they
// do not name and refuse a whole answer for one member of an unexpected
// type, which replies show as the RS sent it.
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
	// maxBuiltList bounds the members a list's items keep whole, in all:
	// 16 times list_event_subscriptions' 16 KiB reply budget. An item read
	// past it keeps only stubNames (partial), read again should a reply
	// show it.
	maxBuiltList = 4 * maxDecodedObject
)

// stubNames are the members a stub keeps.
var stubNames = []string{"subscription_id", "status", "callback_url"}

// object is a JSON object an RS wrote: each member's value as the body
// spells it, by name.
type object struct {
	members map[string]jsontext.Value
	raw     jsontext.Value // the object as the body spells it
	stub    bool           // members over maxDecodedObject: only stubNames kept
	partial bool           // read past maxBuiltList: only stubNames kept
	cost    int            // of the members read (memberCost each, and the name)
}

// wholeKey names, in a stub's compact form, the description of the whole.
const wholeKey = "whole"

// decodeObject reads the JSON object raw; ok is false when raw is not one
// valid JSON object. One pass over raw, each value read in place.
func decodeObject(raw []byte) (obj object, ok bool) {
	if json.Unmarshal(raw, &obj, decodeOptions) != nil || obj.members == nil {
		return object{}, false
	}
	obj.raw = raw
	return obj, true
}

// UnmarshalJSONFrom reads the object dec is at, its members' values read in
// place (dec reads a []byte in place); a value of another kind is skipped,
// leaving o without members. The loop reads a member a turn, bounded by
// the length of the object.
func (o *object) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return o.read(dec, maxDecodedObject)
}

// read is UnmarshalJSONFrom keeping whole members costing at most room; a
// costlier object keeps only stubNames.
func (o *object) read(dec *jsontext.Decoder, room int) error {
	if *o = (object{}); dec.PeekKind() != '{' {
		return dec.SkipValue()
	}
	rest := dec.UnreadBuffer() // the object, after the delimiter and space before it
	_, _ = dec.ReadToken()
	o.members = map[string]jsontext.Value{}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		k := unquote(name)
		if o.cost += len(k) + memberCost; o.cost > room && !o.stub {
			o.stub = true
			for name := range o.members {
				if !isStubName(name) {
					delete(o.members, name)
				}
			}
		}
		if !o.stub || isStubName(k) {
			o.members[k] = v
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	// rest and what is left unread are the one input dec reads in place.
	rest = rest[:len(rest)-len(dec.UnreadBuffer())]
	o.raw = bytes.TrimLeft(rest, ",: \t\r\n")
	return nil
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
// package redact), so no result after create can show a secret. Its raw
// still holds them: what shows raw (its size, a stub's description) takes
// them out then (redact.JSON), so an answer shown whole is not read again.
func (o object) withoutSecrets() object {
	out := object{members: make(map[string]jsontext.Value, len(o.members)), raw: o.raw, stub: o.stub}
	for k, v := range o.members {
		if !redact.IsSecretName(k) {
			out.members[k] = redact.JSON(v)
		}
	}
	return out
}

// decodeSubscription reads one subscription object from an RS answer,
// without secrets: the body of a get, or the subscription member of an
// update's answer (rsclient.EventSubscriptionUpdated, its subscription
// read as an object in the same pass).
func decodeSubscription(body []byte, updated bool) (object, error) {
	if !updated {
		doc, ok := decodeObject(body)
		if !ok {
			return object{}, BadResponse(errors.New("the subscription answer is not a JSON object"))
		}
		return doc.withoutSecrets(), nil
	}
	var upd struct {
		rsclient.EventSubscriptionUpdated
		Subscription object `json:"subscription"`
	}
	if jsontext.Value(body).Kind() != '{' || json.Unmarshal(body, &upd, decodeOptions) != nil {
		return object{}, BadResponse(errors.New("the update answer is not a JSON object holding a subscription"))
	}
	if upd.Subscription.members == nil {
		return object{}, BadResponse(errors.New("the answer has no subscription object"))
	}
	return upd.Subscription.withoutSecrets(), nil
}

// subscriptionItems returns the items of a subscription list answer
// (rsclient.EventSubscriptionList), each read as an object in the one
// decode of the answer: a JSON object whose data member is an array ([]
// when the list is empty) of at most maxSubscriptions objects. Anything
// else (null, {}, {"data":null}, a data member that is not an array) is
// rs_bad_response, never an empty list.
func subscriptionItems(body []byte) ([]object, error) {
	const what = "subscription list"
	var doc rsclient.EventSubscriptionList
	var subs []object
	err := json.Unmarshal(body, &doc, decodeOptions, json.WithUnmarshalers(json.UnmarshalFromFunc(
		func(dec *jsontext.Decoder, list *[]jsontext.Value) error { return readList(dec, list, &subs) })))
	var refused *rs.Error
	if err != nil && !errors.As(err, &refused) {
		// Malformed: worded as a decode reading each item whole words it.
		err = json.Unmarshal(body, new(rsclient.EventSubscriptionList), decodeOptions)
	}
	switch {
	case errors.As(err, &refused):
		return nil, refused
	case err != nil:
		return nil, BadResponse(fmt.Errorf("the %s answer is not a list: %v", what, err))
	case doc.Data == nil:
		return nil, BadResponse(fmt.Errorf("the %s answer has no data list", what))
	}
	return subs, nil
}

// readList reads the data list of a subscription list answer into subs,
// list left empty (not nil: the answer has a list): item
// by item, each a JSON object, at most maxSubscriptions of them, whole while
// the items' members cost at most maxBuiltList in all, partial after. null
// leaves the list nil; anything else than an array is left to the default
// decoding (an error).
func readList(dec *jsontext.Decoder, list *[]jsontext.Value, subs *[]object) error {
	if dec.PeekKind() != '[' {
		return json.SkipFunc
	}
	_, _ = dec.ReadToken()
	*list, *subs = []jsontext.Value{}, []object{}
	built := 0                               // cost of the whole items' members: at most maxBuiltList
	for i := 0; dec.PeekKind() != ']'; i++ { // an item a turn: bounded by maxSubscriptions
		var o object
		var err error
		if dec.PeekKind() == '{' {
			err = o.read(dec, min(maxDecodedObject, maxBuiltList-built))
		} else {
			o.raw, err = dec.ReadValue()
		}
		if err != nil {
			return err
		}
		if i == maxSubscriptions {
			return rs.AdapterError("rs_response_too_large",
				fmt.Sprintf("the RS listed more than %d event subscriptions for this grant, more than this server renders; delete the ones no longer needed (%s), or ask the RS's operator", maxSubscriptions, mcptools.ToolDeleteEventSubscription), "")
		}
		if err := evidence.ItemNotObject("subscription list", i, o.raw); err != nil {
			return BadResponse(err)
		}
		if o.stub && o.cost <= maxDecodedObject {
			o.stub, o.partial = false, true
		} else if !o.stub {
			built += o.cost
		}
		*subs = append(*subs, o)
	}
	_, err := dec.ReadToken()
	return err
}

// unquote is the JSON string q decoded, invalid UTF-8 and lone surrogates
// read as U+FFFD as encoding/json reads them.
func unquote(q []byte) string {
	s, _ := jsontext.AppendUnquote(nil, q)
	return string(s)
}

// advertisement reads capabilities.client_event_subscriptions from the RS
// metadata document body, without secrets; ok is false when it has none.
// One decode of the body, the advertisement read as an object in it.
func advertisement(body []byte) (object, bool) {
	var doc struct {
		Capabilities struct {
			Adv object `json:"client_event_subscriptions"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(body, &doc, decodeOptions) != nil {
		return object{}, false
	}
	adv := doc.Capabilities.Adv
	return adv.withoutSecrets(), adv.members != nil
}
