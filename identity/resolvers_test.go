package identity_test

import (
	"context"
	"errors"
	"os/exec"
	"os/user"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/identity"
)

// checkInfo fails t unless in is user with exactly groups, each from src.
func checkInfo(t *testing.T, in identity.Info, user string, groups []string, src identity.Source) {
	t.Helper()
	if in.User != user {
		t.Errorf("User = %q, want %q", in.User, user)
	}
	if !slices.Equal(in.Groups, groups) {
		t.Errorf("Groups = %q, want %q", in.Groups, groups)
	}
	if len(in.Sources) != len(in.Groups) {
		t.Fatalf("%d Sources for %d Groups", len(in.Sources), len(in.Groups))
	}
	for i, s := range in.Sources {
		if s != src {
			t.Errorf("Sources[%d] = %q, want %q", i, s, src)
		}
	}
}

func TestNone(t *testing.T) {
	r := identity.None()
	for _, user := range []string{"alice", "system:serviceaccount:spark:driver", "john.doe@EXAMPLE.COM"} {
		t.Run(user, func(t *testing.T) {
			in, err := r.Resolve(context.Background(), user)
			if err != nil {
				t.Fatal(err)
			}
			checkInfo(t, in, user, []string{user}, identity.SourceNone)
		})
	}
	t.Run("empty user", func(t *testing.T) {
		_, err := r.Resolve(context.Background(), "")
		if !errors.Is(err, identity.ErrUnknownUser) {
			t.Fatalf("err = %v, want ErrUnknownUser", err)
		}
	})
}

func TestStatic(t *testing.T) {
	users := map[string][]string{
		"alice":   {"dev", "ops", "dev"},
		"nobody":  nil,
		"sa":      {"system:serviceaccounts:kube-system", "system:authenticated"},
		"Alice":   {"other"},
		"carol":   {},
		"d.e@F.G": {"dev.team"},
	}
	r := identity.Static(users)
	users["alice"][0] = "changed" // must not reach the resolver: the map was copied.
	users["bob"] = []string{"late"}

	tests := []struct {
		user   string
		groups []string
	}{
		{"alice", []string{"dev", "ops"}},
		{"nobody", []string{}},
		{"carol", []string{}},
		{"sa", []string{"system:serviceaccounts:kube-system", "system:authenticated"}},
		{"Alice", []string{"other"}},
		{"d.e@F.G", []string{"dev.team"}},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			in, err := r.Resolve(context.Background(), tt.user)
			if err != nil {
				t.Fatal(err)
			}
			checkInfo(t, in, tt.user, tt.groups, identity.SourceTest)
		})
	}
	for _, user := range []string{"bob", "ALICE", ""} {
		t.Run("unknown "+user, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), user)
			if !errors.Is(err, identity.ErrUnknownUser) {
				t.Fatalf("err = %v, want ErrUnknownUser", err)
			}
			if want := `test: unknown user "` + user + `"`; err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
		})
	}
}

// TestOS checks the OS resolver against the accounts of the machine it runs
// on: root, and the user running the test. It creates nothing.
func TestOS(t *testing.T) {
	r := identity.OS()
	ctx := context.Background()

	t.Run("root", func(t *testing.T) {
		in, err := r.Resolve(ctx, "root")
		if err != nil {
			t.Fatal(err)
		}
		root, err := user.LookupGroupId("0")
		if err != nil {
			t.Skipf("gid 0 has no name here: %v", err)
		}
		if len(in.Groups) == 0 || in.Groups[0] != root.Name {
			t.Fatalf("groups of root = %q, want %q first", in.Groups, root.Name)
		}
		checkInfo(t, in, "root", in.Groups, identity.SourceOS)
	})

	t.Run("current user", func(t *testing.T) {
		me, err := user.Current()
		if err != nil {
			t.Skip(err)
		}
		in, err := r.Resolve(ctx, me.Username)
		if err != nil {
			t.Fatal(err)
		}
		checkInfo(t, in, me.Username, in.Groups, identity.SourceOS)
		primary := me.Gid
		if g, err := user.LookupGroupId(me.Gid); err == nil {
			primary = g.Name
		}
		if len(in.Groups) == 0 || in.Groups[0] != primary {
			t.Fatalf("groups = %q, want primary group %q first", in.Groups, primary)
		}
		for i, g := range in.Groups {
			if slices.Index(in.Groups, g) != i {
				t.Errorf("group %q listed twice in %q", g, in.Groups)
			}
		}
		// Cross-check with id(1), which reads the same databases.
		if _, err := exec.LookPath("id"); err != nil {
			return
		}
		out, err := exec.Command("id", "-G", "-n", me.Username).Output()
		if err != nil {
			t.Logf("id -Gn: %v", err)
			return
		}
		want := strings.Fields(string(out))
		if !slices.Equal(sortedCopy(in.Groups), sortedCopy(slices.Compact(want))) {
			t.Errorf("groups = %q, id -Gn says %q", in.Groups, want)
		}
	})

	t.Run("unknown user", func(t *testing.T) {
		const name = "usher-test-no-such-user"
		if _, err := user.Lookup(name); err == nil {
			t.Skipf("a user %q exists here", name)
		}
		_, err := r.Resolve(ctx, name)
		if !errors.Is(err, identity.ErrUnknownUser) {
			t.Fatalf("err = %v, want ErrUnknownUser", err)
		}
		if want := `os: unknown user "` + name + `"`; err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
	})

	t.Run("empty user", func(t *testing.T) {
		if _, err := r.Resolve(ctx, ""); !errors.Is(err, identity.ErrUnknownUser) {
			t.Fatalf("err = %v, want ErrUnknownUser", err)
		}
	})
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
