package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"secret": true, "Secret": true, "SECRET": true, "signing_secret": true, "secrets": true,
		"clientSecretHash": true, "ſecret": true, "SEcRET_key": true,
		"secre": false, "sec_ret": false, "token": false, "": false, "secretariat": true,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no secret passes unchanged", `{"b":1, "a":[1,2]}`, `{"b":1, "a":[1,2]}`},
		{"the word in a value only", `{"note":"my secret plan"}`, `{"note":"my secret plan"}`},
		{"exact name", `{"id":"x","secret":"whsec_1"}`, `{"id":"x"}`},
		{"cases", `{"Secret":1,"SECRET":2,"sEcReT":3,"keep":4}`, `{"keep":4}`},
		{"substring", `{"signing_secret":"s","clientSecret":"c","z":0}`, `{"z":0}`},
		{"array of them", `{"secrets":["a","b"],"x":[{"secret":1,"y":2},{"y":3}]}`, `{"x":[{"y":2},{"y":3}]}`},
		{"nested objects", `{"a":{"b":{"c":{"my_secret":{"deep":[1,{"secret":2}]},"d":null}}}}`, `{"a":{"b":{"c":{"d":null}}}}`},
		{"escaped name", `{"s\u0065cret":"x","k":true}`, `{"k":true}`},
		{"long s", `{"ſecret":"x","k":false}`, `{"k":false}`},
		{"escaped long s", `{"\u017fecret":"x","k":1}`, `{"k":1}`},
		{"order and numbers kept", `{"z":1.50,"secret":1,"a":12345678901234567890,"m":"<b>"}`, `{"z":1.50,"a":12345678901234567890,"m":"<b>"}`},
		{"only member", `{"secret":{"a":[1,[2]]}}`, `{}`},
		{"top-level array", `[{"secret":1},{"a":"secret"}]`, `[{},{"a":"secret"}]`},
		{"secret first then more", `{"secret":[1,2],"a":{"secret":"x"},"b":2}`, `{"a":{},"b":2}`},
		{"not JSON stays", `secret: yes`, `secret: yes`},
		{"trailing data stays", `{"secret":1} {"secret":2}`, `{"secret":1} {"secret":2}`},
		{"truncated stays", `{"secret":1,"a":`, `{"secret":1,"a":`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(JSON([]byte(tc.in)))
			if got != tc.want {
				t.Fatalf("JSON(%s) = %s, want %s", tc.in, got, tc.want)
			}
			if json.Valid([]byte(tc.in)) && !json.Valid([]byte(got)) {
				t.Fatalf("output %s is not valid JSON", got)
			}
		})
	}
}

func TestValue(t *testing.T) {
	in := []byte(`{"a":[{"Secret":1,"b":2}],"signing_secret":"x","c":{"d":1}}`)
	before := string(in)
	var v any
	if err := json.Unmarshal(in, &v); err != nil {
		t.Fatal(err)
	}
	if !Has(v) {
		t.Fatal("Has = false")
	}
	if out := JSON(in); string(out) != `{"a":[{"b":2}],"c":{"d":1}}` {
		t.Errorf("JSON = %s", out)
	}
	if string(in) != before {
		t.Errorf("JSON changed its input: %s", in)
	}
	clean := map[string]any{"a": []any{1.0, "secret"}}
	if Has(clean) {
		t.Error("a value without secret-like members was changed")
	}
}

// FuzzJSON: whatever the body, the output holds no secret-like member name
// and is valid JSON whenever the input was one JSON value.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"secret":1}`, `[{"a":{"SECRET":[1]}}]`, `{"s\u0065cret":2}`, `"secret"`, `{"a":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := JSON([]byte(in))
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		if json.Unmarshal(out, &v) != nil {
			t.Fatalf("output %q of valid %q is not JSON", out, in)
		}
		if Has(v) {
			t.Fatalf("output %q of %q keeps a secret-like member", out, in)
		}
		if !strings.Contains(strings.ToLower(in), "secret") && !strings.ContainsAny(in, "\\ſ") && string(out) != in {
			t.Fatalf("%q changed without any secret-like name", in)
		}
	})
}

// mayMentionByteWise is the byte-by-byte scan mayMention replaced; the tests
// hold the two to the same answer.
func mayMentionByteWise(body []byte) bool {
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case 's', 'S':
			if i+len(word) <= len(body) && bytes.EqualFold(body[i:i+len(word)], []byte(word)) {
				return true
			}
		case 0xC5:
			if i+1 < len(body) && body[i+1] == 0xBF {
				return true
			}
		case '\\':
			if i+5 < len(body) && body[i+1] == 'u' {
				if v, ok := hex4(body[i+2 : i+6]); ok && (v < utf8.RuneSelf && unicode.IsLetter(rune(v)) || v == 'ſ') {
					return true
				}
			}
		}
	}
	return false
}

func TestMayMention(t *testing.T) {
	long := strings.Repeat("the transcript says nothing of interest, ", 200)
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"empty", ``, false},
		{"shorter than the word", `secre`, false},
		{"exact", `secret`, true},
		{"at the end of a long body", long + `"Secret"`, true},
		{"at the start of a long body", `SECRET` + long, true},
		{"mixed case", `{"sEcReT":1}`, true},
		{"split by another byte", `sec-ret secre t`, false},
		{"overlapping prefix", `ssecret`, true},
		{"repeated e", `seecret secrett`, true},
		{"near misses only", `secrex secre3 ecret s ecret`, false},
		{"long s", `ſecret`, true},
		{"a lone long s", `ſ`, true},
		{"C5 without BF", "\xc5\x80", false},
		{"escaped letter", `"\u0065"`, true},
		{"escaped upper-case letter", `"\u0045"`, true},
		{"escaped long s", `"\u017F"`, true},
		{"escaped digit", `"\u0031"`, false},
		{"escaped non-letter", `"\u00e9"`, false},
		{"short escape at the end", `"\u006`, false},
		{"backslashes only", `\\ \n \" \t`, false},
		{"plain long body", long, false},
		{"non-ASCII text", `Ṡécret ＳＥＣＲＥＴ`, false},
		{"dense in c", strings.Repeat("cC", 2000), false},
		{"dense in c, then the word", strings.Repeat("c", 4000) + "SeCrEt", true},
		{"dense in C, the word first", "sEcret" + strings.Repeat("C", 4000), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayMention([]byte(tc.in)); got != tc.want {
				t.Errorf("mayMention(%q) = %v, want %v", tc.in, got, tc.want)
			}
			if ref := mayMentionByteWise([]byte(tc.in)); ref != tc.want {
				t.Errorf("byte-wise scan of %q = %v, want %v", tc.in, ref, tc.want)
			}
		})
	}
}

// FuzzMayMention: the skipping scan answers as the byte-wise one does.
func FuzzMayMention(f *testing.F) {
	for _, s := range []string{`secret`, `xSECREt`, `\u0073`, `ſ`, `seecret`, `s e c r e t`, "\xc5", "cccccccccCCCCCCCCCsecret"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := mayMention(in), mayMentionByteWise(in); got != want {
			t.Fatalf("mayMention(%q) = %v, byte-wise %v", in, got, want)
		}
	})
}

// BenchmarkMayMention scans a record-sized body that names no secret, the
// common case of every RS reply.
func BenchmarkMayMention(b *testing.B) {
	body := []byte(`{"id":"tr-5","data":{"text":"` + strings.Repeat("So we agreed to revisit the schedule next week, and I said the numbers look correct. ", 250) + `"}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if mayMention(body) {
			b.Fatal("mayMention = true")
		}
	}
}
