package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzValid: the scanner accepts exactly what encoding/json accepts, and
// decodes every string encoding/json decodes to the same value.
func FuzzValid(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := valid(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("%q: scanner valid=%v, encoding/json valid=%v", s, got, want)
		}
		checkString(t, s)
	})
}

// FuzzAppendString: AppendString encodes any bytes exactly as
// encoding/json does.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a&b>", "\x00\x1f", "é€😀", "\xff", "a\xc3", "\u2028\u2029", "\ud7ff\ue000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAppend(t, s)
	})
}

// FuzzMembers: an object read with Members gets the values encoding/json
// gets, and a text either reader refuses is refused by both, except the
// two deliberate differences: a repeated wanted member (encoding/json keeps
// the last) and a member name that matches a wanted one only without
// regard to case (encoding/json folds case; Members is exact).
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":"x","b":["y"],"c":true}`, `{"a":"x","a":"y"}`, `{"A":"x"}`, `null`, `{"b":[null,"q"]}`,
		`{"zz":{"a":[1,2,{"b":null}]},"c":false}`, `{"a":"\u00e9"}`, `{"b":{}}`, `[1]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := readABC(s)
		var want abc
		werr := json.Unmarshal([]byte(s), &want)
		if err != nil {
			return // refusing more than encoding/json is allowed: checked below for syntax
		}
		if foldedKey(s) {
			return
		}
		if werr != nil {
			t.Fatalf("%q: Members accepted %+v, encoding/json refused: %v", s, got, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Members read %#v, encoding/json %#v", s, got, want)
		}
	})
}

// foldedKey reports whether the top-level object of s has a member whose
// name differs from every wanted one but that encoding/json, which folds
// case, reads as one of them: Members does not.
func foldedKey(s string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &m) != nil {
		return false
	}
	for k := range m {
		if testKeys.Index(k) >= 0 {
			continue
		}
		for _, v := range []string{`"z"`, `true`, `["z"]`} {
			b, _ := json.Marshal(map[string]json.RawMessage{k: json.RawMessage(v)})
			var p abc
			if json.Unmarshal(b, &p) == nil && (p.A != "" || p.C || p.B != nil) {
				return true
			}
		}
	}
	return false
}
