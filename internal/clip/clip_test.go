package clip

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"abcd", "abcd"},
		{"abcde", "abcd…[cut 1 bytes]"},
		{"abcdefgh", "abcd…[cut 4 bytes]"},
		{"abcé", "abc…[cut 2 bytes]"}, // é is two bytes: never cut inside a rune
	} {
		got := String(tc.in, 4)
		if got != tc.want {
			t.Errorf("String(%q, 4) = %q, want %q", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("String(%q, 4) = %q is not valid UTF-8", tc.in, got)
		}
	}
}

func TestQuote(t *testing.T) {
	if got, want := Quote("a\"é", 3), `"a\""…[cut 2 bytes]`; got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
	if got, want := Quote("ab", 3), `"ab"`; got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
}

func TestStrings(t *testing.T) {
	short := []string{"a", "bb"}
	if got := Strings(short, 4, 2); &got[0] != &short[0] {
		t.Errorf("a list within bounds was copied")
	}
	if n := testing.AllocsPerRun(100, func() { Strings(short, 4, 2) }); n != 0 {
		t.Errorf("a list within bounds costs %v allocations", n)
	}
	got := Strings([]string{"a", "bbbbbb", "c", "d"}, 4, 2)
	want := []string{"a", "bbbb…[cut 2 bytes]", "…[cut 2 more]"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	long := make([]string, 10000)
	for i := range long {
		long[i] = strings.Repeat("x", 1000)
	}
	got = Strings(long, Name, Count)
	if len(got) != Count+1 || len(got[0]) > Name+30 {
		t.Errorf("10,000 long groups: %d kept, first %d bytes", len(got), len(got[0]))
	}
}

// TestDetach checks that Detach's copies equal the originals and share no
// memory with them, and keeps a nil list nil.
func TestDetach(t *testing.T) {
	body := strings.Repeat("abcdefghij", 100)
	lo, hi := unsafe.StringData(body), unsafe.StringData(body[len(body)-1:])
	inside := func(s string) bool {
		p := unsafe.StringData(s)
		return s != "" && uintptr(unsafe.Pointer(p)) >= uintptr(unsafe.Pointer(lo)) && uintptr(unsafe.Pointer(p)) <= uintptr(unsafe.Pointer(hi))
	}
	user, name, empty := body[3:9], body[500:620], ""
	list := []string{body[10:20], "", body[900:1000]}
	out := Detach(list, &user, &name, &empty)
	if user != body[3:9] || name != body[500:620] || empty != "" || !slices.Equal(out, list) {
		t.Fatalf("Detach changed the values: %q %q %q %q", user, name, empty, out)
	}
	for _, s := range append([]string{user, name}, out...) {
		if inside(s) {
			t.Errorf("%.20q still points into the original", s)
		}
	}
	if &out[0] == &list[0] {
		t.Error("the list was not copied")
	}
	if got := Detach(nil, &user); got != nil {
		t.Errorf("Detach(nil) = %#v, want nil", got)
	}
	if got := Detach([]string{}); got == nil || len(got) != 0 {
		t.Errorf("Detach([]string{}) = %#v, want an empty list", got)
	}
}
