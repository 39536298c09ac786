package identity

import (
	"context"
	"errors"
	"os/user"
	"slices"
	"testing"
)

// TestOSGroupIDs covers what the test machine cannot show without being
// changed: group ids without names, and failing lookups. The lookups are
// replaced; everything else is the real resolver.
func TestOSGroupIDs(t *testing.T) {
	names := map[string]string{"100": "users", "27": "sudo", "4": "adm", "200": "users"}
	fake := func(gids []string, gidsErr, groupErr error) *osResolver {
		return &osResolver{
			lookupUser: func(name string) (*user.User, error) {
				if name != "alice" {
					return nil, user.UnknownUserError(name)
				}
				return &user.User{Username: "alice", Uid: "1000", Gid: "1000"}, nil
			},
			groupIDs: func(*user.User) ([]string, error) { return gids, gidsErr },
			lookupGroup: func(gid string) (*user.Group, error) {
				if groupErr != nil && gid == "27" {
					return nil, groupErr
				}
				if n, ok := names[gid]; ok {
					return &user.Group{Gid: gid, Name: n}, nil
				}
				return nil, user.UnknownGroupIdError(gid)
			},
		}
	}
	tests := []struct {
		name    string
		r       *osResolver
		groups  []string
		wantErr string
	}{
		{"numeric gids kept, primary first, no duplicates",
			fake([]string{"100", "1000", "4242", "27", "200", "4242"}, nil, nil),
			[]string{"1000", "users", "4242", "sudo"}, ""},
		{"listing fails", fake(nil, errors.New("nss down"), nil),
			nil, `os: listing the groups of "alice": nss down`},
		{"group lookup fails", fake([]string{"27"}, nil, errors.New("io error")),
			nil, `os: looking up group 27 of "alice": io error`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := tt.r.Resolve(context.Background(), "alice")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(in.Groups, tt.groups) {
				t.Errorf("groups = %q, want %q", in.Groups, tt.groups)
			}
			for i := range in.Groups {
				if in.SourceOf(i) != SourceOS {
					t.Errorf("source of %q = %q", in.Groups[i], in.SourceOf(i))
				}
			}
		})
	}
	t.Run("lookup fails", func(t *testing.T) {
		r := fake(nil, nil, nil)
		r.lookupUser = func(string) (*user.User, error) { return nil, errors.New("nss down") }
		_, err := r.Resolve(context.Background(), "alice")
		if err == nil || errors.Is(err, ErrUnknownUser) || err.Error() != `os: looking up user "alice": nss down` {
			t.Fatalf("err = %v", err)
		}
	})
}
