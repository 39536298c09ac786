package identity_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/identity"
)

func mustRule(t *testing.T, pattern, repl string) identity.MapRule {
	t.Helper()
	r, err := identity.NewMapRule(pattern, repl)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// counting counts the names a resolver is asked for.
type counting struct {
	r     identity.Resolver
	asked []string
}

func (c *counting) Resolve(ctx context.Context, user string) (identity.Info, error) {
	c.asked = append(c.asked, user)
	return c.r.Resolve(ctx, user)
}

func TestPolicyComplete(t *testing.T) {
	dir := identity.Static(map[string][]string{"alice": {"dev"}, "etl": {"batch"}})
	policy := &identity.Policy{
		Skip: identity.DefaultSkip,
		Mapping: []identity.MapRule{
			mustRule(t, `oidc:([^@]+)@example\.com`, "$1"),
			mustRule(t, `([^@]+)@EXAMPLE\.COM`, "$1"),
			mustRule(t, `bad:(.*)`, "a,$1"),
		},
		Overrides: map[string][]string{"spark-svc": {"spark", "etl"}, "system:serviceaccount:ops:bot": {"ops"}},
	}
	given := []string{"system:authenticated", "spark-users"}
	for _, tc := range []struct {
		name      string
		policy    *identity.Policy
		mode      identity.Mode
		user      string
		groups    []string
		want      []string
		sources   []identity.Source
		lookup    identity.Lookup
		asked     []string
		errIs     error
		errSubstr string
	}{
		{name: "service account in merge mode keeps its given groups", policy: policy, mode: identity.ModeMerge,
			user: "system:serviceaccount:spark:driver", groups: given, want: given,
			sources: []identity.Source{"given", "given"}, lookup: identity.Lookup{Outcome: identity.OutcomeSkipped, Detail: "system:"}},
		{name: "skipped in resolve mode keeps its given groups", policy: policy, mode: identity.ModeResolve,
			user: "system:node:n1", groups: []string{"system:nodes"}, want: []string{"system:nodes"},
			sources: []identity.Source{"given"}, lookup: identity.Lookup{Outcome: identity.OutcomeSkipped, Detail: "system:"}},
		{name: "without a policy a service account is looked up and unknown", policy: nil, mode: identity.ModeMerge,
			user: "system:serviceaccount:spark:driver", groups: given, asked: []string{"system:serviceaccount:spark:driver"}, errIs: identity.ErrUnknownUser},
		{name: "oidc prefix mapped", policy: policy, mode: identity.ModeResolve, user: "oidc:alice@example.com",
			want: []string{"dev"}, sources: []identity.Source{"test"}, lookup: identity.Lookup{Name: "alice", Rule: 1}, asked: []string{"alice"}},
		{name: "kerberos realm mapped by the second rule", policy: policy, mode: identity.ModeMerge, user: "alice@EXAMPLE.COM",
			groups: []string{"g"}, want: []string{"g", "dev"}, sources: []identity.Source{"given", "test"}, lookup: identity.Lookup{Name: "alice", Rule: 2}, asked: []string{"alice"}},
		{name: "unmapped name looked up as it is", policy: policy, mode: identity.ModeResolve, user: "alice",
			want: []string{"dev"}, sources: []identity.Source{"test"}, asked: []string{"alice"}},
		{name: "mapping result checked", policy: policy, mode: identity.ModeResolve, user: "bad:x", errSubstr: "mapping rule 3"},
		{name: "unknown user denies by default", policy: policy, mode: identity.ModeMerge, user: "mallory", groups: given,
			asked: []string{"mallory"}, errIs: identity.ErrUnknownUser},
		{name: "unknown user given-groups", policy: &identity.Policy{Unknown: identity.UnknownGivenGroups}, mode: identity.ModeMerge,
			user: "mallory", groups: given, want: given, sources: []identity.Source{"given", "given"},
			lookup: identity.Lookup{Outcome: identity.OutcomeUnknownGiven}, asked: []string{"mallory"}},
		{name: "given-groups does not hide other failures", policy: &identity.Policy{Unknown: identity.UnknownGivenGroups},
			mode: identity.ModeMerge, user: "x", groups: given, asked: []string{"x"}, errSubstr: "directory down"},
		{name: "override wins over the directory", policy: policy, mode: identity.ModeResolve, user: "spark-svc",
			want: []string{"spark", "etl"}, sources: []identity.Source{"override", "override"}, lookup: identity.Lookup{Outcome: identity.OutcomeOverride}},
		{name: "override for a skipped user merges with given", policy: policy, mode: identity.ModeMerge, user: "system:serviceaccount:ops:bot",
			groups: []string{"system:serviceaccounts"}, want: []string{"system:serviceaccounts", "ops"}, sources: []identity.Source{"given", "override"},
			lookup: identity.Lookup{Outcome: identity.OutcomeOverride}},
		{name: "given mode with groups asks nobody", policy: policy, mode: identity.ModeGiven, user: "oidc:alice@example.com",
			groups: []string{"g"}, want: []string{"g"}, sources: []identity.Source{"given"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r identity.Resolver = dir
			if tc.errSubstr == "directory down" {
				r = resolverFunc(func(context.Context, string) (identity.Info, error) {
					return identity.Info{}, errors.New("directory down")
				})
			}
			c := &counting{r: r}
			in, err := tc.policy.Complete(context.Background(), tc.mode, c, tc.user, tc.groups)
			if !slices.Equal(c.asked, tc.asked) {
				t.Errorf("asked %q, want %q", c.asked, tc.asked)
			}
			if tc.errIs != nil || tc.errSubstr != "" {
				if err == nil || tc.errIs != nil && !errors.Is(err, tc.errIs) || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("err = %v, want %v %q", err, tc.errIs, tc.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.User != tc.user {
				t.Errorf("User = %q, want the authenticated %q", in.User, tc.user)
			}
			if !slices.Equal(in.Groups, tc.want) || !slices.Equal(in.Sources, tc.sources) {
				t.Errorf("groups %q sources %q, want %q %q", in.Groups, in.Sources, tc.want, tc.sources)
			}
			got := in.Lookup
			if tc.lookup.Outcome == identity.OutcomeUnknownGiven {
				if !strings.Contains(got.Detail, "unknown user") {
					t.Errorf("Detail = %q, want the resolver's answer", got.Detail)
				}
				got.Detail = ""
			}
			if got != tc.lookup {
				t.Errorf("Lookup = %+v, want %+v", got, tc.lookup)
			}
			if (tc.lookup != identity.Lookup{}) && in.Lookup.String() == "" {
				t.Error("Lookup.String() is empty for a lookup that is not plain")
			}
		})
	}
}

func TestVia(t *testing.T) {
	if got := identity.Via("ldap"); got != "ldap" {
		t.Errorf("Via(ldap) = %q", got)
	}
	s := identity.Via("ldap", "emea-team", "data-eng-emea")
	if s != "ldap via emea-team > data-eng-emea" {
		t.Errorf("Via = %q", s)
	}
}

func TestParseUnknown(t *testing.T) {
	for in, want := range map[string]identity.Unknown{"": identity.UnknownDeny, "deny": identity.UnknownDeny, "given-groups": identity.UnknownGivenGroups} {
		if got, err := identity.ParseUnknown(in); err != nil || got != want {
			t.Errorf("ParseUnknown(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := identity.ParseUnknown("allow"); err == nil {
		t.Error("ParseUnknown(allow) succeeded")
	}
}
