package acl

import (
	"strings"
	"testing"
)

// FuzzParse checks the parser's promises on any input: it never panics; an
// accepted ACL prints in a canonical form that parses back, without
// warnings, to an equal ACL; and every name it holds is valid.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"*", "", " ", "sue", "sue dev", " dev,test", "u1  g1", "a,,b", "alice,* dev",
		"system:serviceaccount:spark:driver system:authenticated", "john.doe@EXAMPLE.COM dev.team", "a b c", "\t", "x\x00"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, yarn bool) {
		d := YuniKorn
		if yarn {
			d = YARN
		}
		a, _, err := Parse(text, d)
		if err != nil {
			if d == YARN && strings.Count(text, " ") > 1 && !strings.Contains(err.Error(), "offset") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		for _, n := range append(append([]string{}, a.Users()...), a.Groups()...) {
			if err := ValidName(n); err != nil {
				t.Fatalf("accepted invalid name %q: %v", n, err)
			}
		}
		b, warns, err := Parse(a.String(), YuniKorn)
		if err != nil || len(warns) != 0 {
			t.Fatalf("canonical %q of %q: %v %v", a.String(), text, err, warns)
		}
		if !a.Equal(&b) {
			t.Fatalf("%q: %q != %q", text, a.String(), b.String())
		}
		if len(a.Users()) > 0 {
			if !a.Allows(NewSubject(a.Users()[0], nil)) {
				t.Fatalf("%q does not allow its own user", text)
			}
		}
	})
}
