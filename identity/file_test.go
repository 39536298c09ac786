package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/usherhq/usher/identity"
)

func TestParseFile(t *testing.T) {
	const text = "\ufeff# users and their groups\n" +
		"alice: dev, ops\n" +
		"\n" +
		"   # indented comment\n" +
		"bob:\tdev,ops ,\tqa   # trailing comment\r\n" +
		"system:serviceaccount:spark:driver: system:serviceaccounts:spark, system:authenticated\n" +
		"john.doe@EXAMPLE.COM: dev.team\n" +
		"carol:\n" +
		"dave:   \n" +
		"weird:: a:b\n" +
		"  eve : dev" // no final newline
	r, err := identity.ParseFile(strings.NewReader(text), "groups.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		user   string
		groups []string
	}{
		{"alice", []string{"dev", "ops"}},
		{"bob", []string{"dev", "ops", "qa"}},
		{"system:serviceaccount:spark:driver", []string{"system:serviceaccounts:spark", "system:authenticated"}},
		{"john.doe@EXAMPLE.COM", []string{"dev.team"}},
		{"carol", []string{}},
		{"dave", []string{}},
		{"weird:", []string{"a:b"}},
		{"eve", []string{"dev"}},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			in, err := r.Resolve(context.Background(), tt.user)
			if err != nil {
				t.Fatal(err)
			}
			checkInfo(t, in, tt.user, tt.groups, identity.SourceFile)
		})
	}
	t.Run("unknown user", func(t *testing.T) {
		_, err := r.Resolve(context.Background(), "mallory")
		if !errors.Is(err, identity.ErrUnknownUser) {
			t.Fatalf("err = %v, want ErrUnknownUser", err)
		}
		if want := `file: unknown user "mallory" (not in groups.txt)`; err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
	})
}

func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"missing colon", "alice dev\n", []string{
			`f:1:1: missing colon after the user name: want "user: group1, group2" (the user ends at the first colon followed by a space or the end of the line)`}},
		{"colon without space", "  alice:dev,ops\n", []string{
			`f:1:3: missing colon after the user name: want "user: group1, group2" (the user ends at the first colon followed by a space or the end of the line)`}},
		{"empty user", "alice: dev\n   : ops\n", []string{`f:2:4: empty user name before the colon`}},
		{"user with space", "john doe: dev\n", []string{`f:1:5: user name contains whitespace U+0020`}},
		{"user with control character", "al\x01ice: dev\n", []string{`f:1:3: user name contains control character U+0001`}},
		{"group with space", "alice: dev, the ops\n", []string{`f:1:16: group name contains whitespace U+0020`}},
		{"group with no-break space", "alice: dev\u00a0ops\n", []string{`f:1:11: group name contains whitespace U+00A0`}},
		{"group with control character", "alice: dev\x7f\n", []string{`f:1:11: group name contains control character U+007F`}},
		{"group with vertical tab", "alice: a,\vb\n", []string{`f:1:10: group name contains whitespace U+000B`}},
		{"groups joined by a colon and space", "alice: dev: ops\n", []string{`f:1:12: group name contains whitespace U+0020`}},
		{"empty group", "alice: dev,,ops\n", []string{`f:1:12: empty group name`}},
		{"trailing comma", "alice: dev,\n", []string{`f:1:12: empty group name`}},
		{"duplicate group", "alice: dev, ops, dev\n", []string{`f:1:18: duplicate group (listed before on this line)`}},
		{"duplicate user", "alice: dev\n\nbob: x\n alice: ops\n", []string{`f:4:2: duplicate user (first listed at line 1)`}},
		{"invalid UTF-8", "alice: d\xffv\n", []string{`f:1:9: invalid UTF-8`}},
		{"every error reported", "a b: x\nc: d,,\nc: e\n", []string{
			`f:1:2: user name contains whitespace U+0020`,
			`f:2:6: empty group name`,
			`f:2:7: empty group name`,
			`f:3:1: duplicate user (first listed at line 2)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := identity.ParseFile(strings.NewReader(tt.text), "f")
			if err == nil {
				t.Fatalf("no error; resolver %v", r)
			}
			if r != nil {
				t.Errorf("resolver %v returned with an error", r)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	t.Run("too many errors", func(t *testing.T) {
		_, err := identity.ParseFile(strings.NewReader(strings.Repeat("bad line\n", 50)), "f")
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != 11 || lines[10] != "f:11: too many errors" {
			t.Fatalf("got %d lines, last %q", len(lines), lines[len(lines)-1])
		}
	})
}

func TestParseFileNamesThePath(t *testing.T) {
	t.Run("bad file names the path", func(t *testing.T) {
		_, err := identity.ParseFile(strings.NewReader("alice: dev\nalice: ops\n"), "/etc/bad")
		if want := `/etc/bad:2:1: duplicate user (first listed at line 1)`; err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %s", err, want)
		}
	})
	t.Run("no error quotes the file", func(t *testing.T) {
		_, err := identity.ParseFile(strings.NewReader("key: secret value with spaces\nkey: other secret\n"), "/etc/secret")
		if err == nil || strings.Contains(err.Error(), "secret value") || strings.Contains(err.Error(), "key") || !strings.Contains(err.Error(), "/etc/secret:1:") {
			t.Fatalf("err = %v: want the file's positions, none of its content", err)
		}
	})
}
