package jsonscan

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// valid reports whether the scanner accepts s as one JSON value.
func valid(s string) bool {
	d := New(s)
	d.Skip()
	d.End()
	return d.Err() == nil
}

var samples = []string{
	`null`, `true`, `false`, `0`, `-0`, `1.5e10`, `-1.25E-3`, `1e+2`, `"x"`, `""`, `[]`, `{}`, `[1,2,[3,{"a":[]}]]`,
	` {"a" : 1 , "b":[ true ,false, null ]} `, "\t\n\r[1]\n",
	`"\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00x"`, "\"\xff\xfe\"", "\"é\"",
	"\"\u2028\"", `"\u0000"`,
	// invalid
	``, ` `, `nul`, `nulll`, `tru`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `0x1`, `NaN`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`,
	`{"a":1 "b":2}`, `[1 2]`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01b\"", "\"\t\"", `{"a":1}}`, `[`, `]`, `{`, `}`,
	`"\`, `{"a":`, `{"a":1`, `[1,`, `1 2`, `{} {}`, `'x'`, `[true false]`,
}

func TestValidityMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := valid(s), json.Valid([]byte(s)); got != want {
			t.Errorf("%q: scanner valid=%v, encoding/json valid=%v", s, got, want)
		}
	}
}

func TestDepthLimitMatchesEncodingJSON(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := "]"
			if open != "[" {
				closer = "}"
			}
			s := strings.Repeat(open, n) + "1" + strings.Repeat(closer, n)
			if got, want := valid(s), json.Valid([]byte(s)); got != want {
				t.Errorf("depth %d %q: scanner valid=%v, encoding/json valid=%v", n, open, got, want)
			}
		}
	}
}

func TestStringsMatchEncodingJSON(t *testing.T) {
	for _, s := range samples {
		checkString(t, s)
	}
}

// checkString: where encoding/json decodes s as a string, the scanner
// decodes the same string.
func checkString(t *testing.T, s string) {
	t.Helper()
	var want string
	if json.Unmarshal([]byte(s), &want) != nil {
		return
	}
	d := New(s)
	got := d.StringField("x")
	d.End()
	if d.Err() != nil || got != want {
		t.Fatalf("%q: scanner %q (%v), encoding/json %q", s, got, d.Err(), want)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s/`, "<a&b>", "\x00\x1f\x7f", "é€😀", "\xff", "a\xc3", "\u2028\u2029", "tab\tnl\ncr\r"} {
		checkAppend(t, s)
	}
}

// checkAppend: AppendString writes what encoding/json writes, byte for
// byte, in both its forms.
func checkAppend(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := AppendString(nil, s); string(got) != string(want) {
		t.Fatalf("%q: AppendString %s, encoding/json %s", s, got, want)
	}
	if got := AppendString(nil, []byte(s)); string(got) != string(want) {
		t.Fatalf("%q: AppendString([]byte) %s, encoding/json %s", s, got, want)
	}
}

var testKeys = NewKeys("a", "b", "c")

type abc struct {
	A string   `json:"a"`
	B []string `json:"b"`
	C bool     `json:"c"`
}

// readABC reads {"a":string,"b":[string],"c":bool} with Members.
func readABC(s string) (abc, error) {
	var v abc
	d := New(s)
	m := d.MembersOrNull("top", testKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			v.A = d.StringField("top.a")
		case 1:
			v.B, _ = d.StringList("top.b", math.MaxInt)
		case 2:
			v.C, _ = d.BoolField("top.c")
		}
	}
	d.End()
	return v, d.Err()
}

// StringList keeps at most max strings and counts them all; what it does
// not keep is still checked.
func TestStringListMax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want []string
		n    int
		err  string
	}{
		{`["a","b","c"]`, 2, []string{"a", "b"}, 3, ""},
		{`["a","b"]`, 2, []string{"a", "b"}, 2, ""},
		{`[]`, 0, []string{}, 0, ""},
		{`["a","b",1]`, 1, nil, 0, "found a number"},
		{`null`, 1, nil, 0, ""},
	} {
		d := New(tc.in)
		got, n := d.StringList("g", tc.max)
		d.End()
		if tc.err != "" {
			if d.Err() == nil || !strings.Contains(d.Err().Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, d.Err(), tc.err)
			}
			continue
		}
		if d.Err() != nil || !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) || n != tc.n {
			t.Errorf("%s max %d: %q %d %v, want %q %d", tc.in, tc.max, got, n, d.Err(), tc.want, tc.n)
		}
	}
}

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    abc
		wantErr string
	}{
		{in: `{"a":"x","b":["y","z"],"c":true}`, want: abc{A: "x", B: []string{"y", "z"}, C: true}},
		{in: `{"c":true,"zz":{"a":[1,{"b":2}]},"a":"x"}`, want: abc{A: "x", C: true}},
		{in: `null`, want: abc{}},
		{in: `{}`, want: abc{}},
		{in: `{"b":[]}`, want: abc{B: []string{}}},
		{in: `{"b":null}`, want: abc{}},
		{in: `{"a":"x","a":"y"}`, wantErr: `duplicate member "a"`},
		{in: `{"zz":1,"zz":2}`, want: abc{}}, // unknown members are not tracked
		{in: `{"a":1}`, wantErr: "top.a: found a number, want a string"},
		{in: `[]`, wantErr: "top: found an array, want an object"},
		{in: `{"a":"x",}`, wantErr: "invalid JSON"},
		{in: `{"zz":[1,]}`, wantErr: "invalid JSON"},
	} {
		got, err := readABC(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got.A != tc.want.A || got.C != tc.want.C || strings.Join(got.B, ",") != strings.Join(tc.want.B, ",") ||
			(got.B == nil) != (tc.want.B == nil) {
			t.Errorf("%s: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestNewKeysRefusesMistakes(t *testing.T) {
	for name, f := range map[string]func(){
		"repeat":   func() { NewKeys("a", "b", "a") },
		"too many": func() { NewKeys(make([]string, 65)...) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: NewKeys did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestFirstErrorWins(t *testing.T) {
	d := New(`{"a":`)
	d.Object("x")
	first := true
	d.Next(&first)
	d.StringField("x.a")
	err := d.Err()
	d.Fail("later")
	d.FailType("y", "", "a string")
	if d.Err() != err || err == nil {
		t.Fatalf("err %v, want the first one kept: %v", d.Err(), err)
	}
	if !strings.Contains(err.Error(), "the end of input") {
		t.Fatalf("err %v, want one naming the end of input", err)
	}
}

func TestHasLoneSurrogate(t *testing.T) {
	for s, want := range map[string]bool{
		`"\ud83d\ude00"`: false, `"\ud800"`: true, `"\udc00"`: true, `"\ud800\u0041"`: true, `"\\ud800"`: false, `"é"`: false,
		`"\ud800\ud800\udc00"`: true,
	} {
		if got := HasLoneSurrogate(s); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
}
