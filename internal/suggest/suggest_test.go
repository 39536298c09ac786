package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"queue", "qeue", 1}, {"kitten", "sitting", 3}, {"é", "e", 1}, {"", "abc", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestOr(t *testing.T) {
	for n, want := range []string{"", "a", "a or b", "a, b or c"} {
		if got := Or([]string{"a", "b", "c"}[:n]); got != want {
			t.Errorf("Or of %d = %q, want %q", n, got, want)
		}
	}
}
