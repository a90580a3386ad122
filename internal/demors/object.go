package demors

import (
	"bytes"
	"encoding/json"
)

// object is a JSON object that keeps its keys in insertion order, so responses read in the
// same order as the reference RS's.
type object []member

type member struct {
	key string
	val any
}

// obj builds an object from alternating keys and values (an odd count panics).
func obj(kvs ...any) object {
	o := make(object, 0, len(kvs)/2)
	for i := 0; i < len(kvs); i += 2 {
		o = append(o, member{kvs[i].(string), kvs[i+1]})
	}
	return o
}

// set replaces the value of key, or appends it.
func (o object) set(key string, val any) object {
	for i := range o {
		if o[i].key == key {
			o[i].val = val
			return o
		}
	}
	return append(o, member{key, val})
}

// MarshalJSON writes the members in order, without HTML escaping.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshalJSON(m.key) // a string always encodes
		b.Write(k)
		b.WriteByte(':')
		v, err := marshalJSON(m.val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalJSON encodes v without escaping <, > and & (snippets carry <mark> markers).
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
