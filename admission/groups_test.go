package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/usherhq/usher/admission/settings"
)

// manyGroups returns n distinct group names.
func manyGroups(n int) []string {
	gs := make([]string, n)
	for i := range gs {
		gs[i] = fmt.Sprintf("CN=group-%06d,OU=Groups,DC=example,DC=com", i)
	}
	return gs
}

// groupsReview is a pod CREATE by bob with the given groups, carrying a
// user.info annotation that names bob with annGroups (none: no annotation).
func groupsReview(t testing.TB, groups, annGroups []string) []byte {
	t.Helper()
	kc := kindCaseOf(t, "Pod")
	var ann map[string]string
	if annGroups != nil {
		ann = m(UserInfoAnnotation, UserInfo{User: "bob", Groups: annGroups}.String())
	}
	req := request(t, kc, admissionv1.Create, "team-a", authenticationv1.UserInfo{Username: "bob", Groups: groups}, kc.build(nil, ann, nil), nil)
	return reviewBody(t, req)
}

func reviewResponse(t *testing.T, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rv); err != nil || rv.Response == nil {
		t.Fatalf("not a review: %v: %.300s", err, body)
	}
	return rv.Response
}

// The attack of a forged review: a user.info naming the requester with its
// own 60,000 groups in another order. It is refused as soon as the groups
// pass the limit, the denial names the limit and the count, and the
// over-limit hook hears of it before the denial.
func TestGroupsOverLimitRefused(t *testing.T) {
	groups := manyGroups(60000)
	reversed := slices.Clone(groups)
	slices.Reverse(reversed)
	for _, tc := range []struct {
		name, source  string
		groups, annot []string
	}{
		{"request", "request", groups, reversed},
		{"annotation", "annotation", []string{"dev"}, reversed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var over []string
			var audited []Record
			h := newTestHandler(nil, WithMaxGroups(DefaultMaxGroups, func(source string) { over = append(over, source) }),
				WithAudit(func(r Record) { audited = append(audited, r) }))
			rec := post(t, h.MutateHTTP(), "application/json", groupsReview(t, tc.groups, tc.annot))
			if rec.Code != 200 {
				t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
			}
			resp := reviewResponse(t, rec.Body.Bytes())
			msg := resp.Result.Message
			if resp.Allowed || !strings.Contains(msg, "60000 groups") || !strings.Contains(msg, "2048") || !strings.Contains(msg, "--max-groups") {
				t.Fatalf("allowed %v: %q", resp.Allowed, msg)
			}
			if !slices.Equal(over, []string{tc.source}) {
				t.Fatalf("over-limit hook got %q, want %q", over, tc.source)
			}
			if len(audited) != 1 || audited[0].Allowed || len(audited[0].Groups) > DefaultMaxGroups {
				t.Fatalf("audit records: %d, allowed %v, %d groups kept", len(audited), audited[0].Allowed, len(audited[0].Groups))
			}
		})
	}
}

// request.userInfo.extra is checked but not kept: a map of 100,000 keys
// would cost many times the body.
func TestDecodeExtraNotKept(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","userInfo":{"username":"x","extra":{`)
	for i := range 100000 {
		fmt.Fprintf(&b, `"k%d":["v"],`, i)
	}
	b.WriteString(`"last":null}}}}`)
	rv := unlimited()
	if err := decodeReview(b.String(), &rv); err != nil || rv.req.UserInfo.Extra != nil {
		t.Fatalf("error %v, extra kept: %d keys", err, len(rv.req.UserInfo.Extra))
	}
	bad := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","userInfo":{"extra":{"k":[1]}}}}`
	if err := decodeReview(bad, &rv); err == nil || !strings.Contains(err.Error(), "request.userInfo.extra") {
		t.Fatalf("a number in extra: %v", err)
	}
}

// At the limit, a review is decided as usual; the requester's own groups in
// another order are its own identity (restamped in the order usher
// writes).
func TestGroupsAtLimitAllowed(t *testing.T) {
	groups := manyGroups(DefaultMaxGroups)
	for i := range groups {
		groups[i] = groups[i][:len("CN=group-000000")] // 2,048 in a stamp's 64 KiB
	}
	reversed := slices.Clone(groups)
	slices.Reverse(reversed)
	h := newTestHandler(nil, WithMaxGroups(DefaultMaxGroups, func(s string) { t.Errorf("over the limit: %s", s) }))
	rec := post(t, h.MutateHTTP(), "application/json", groupsReview(t, groups, reversed))
	if resp := reviewResponse(t, rec.Body.Bytes()); !resp.Allowed {
		t.Fatalf("denied: %s", resp.Result.Message)
	}
}

// sameIdentity compares groups as sets: any order, repeats ignored, at
// every size (the large ones through a set, so 60,000 groups cost linear
// time; BenchmarkSameIdentity measures it).
func TestSameIdentityAsSets(t *testing.T) {
	for _, n := range []int{0, 1, 3, 16, 17, 100, 60000} {
		groups := manyGroups(n)
		other := slices.Clone(groups)
		slices.Reverse(other)
		other = append(other, groups[:n/2]...) // repeats
		u := UserInfo{User: "bob", Groups: other}
		if !u.sameIdentity("bob", groups) {
			t.Errorf("n=%d: the same groups in another order differ", n)
		}
		if u.sameIdentity("alice", groups) {
			t.Errorf("n=%d: another user is the same", n)
		}
		if n == 0 {
			continue
		}
		missing := UserInfo{User: "bob", Groups: other[1:]}
		if slices.Contains(missing.Groups, groups[n-1]) || missing.sameIdentity("bob", groups) {
			t.Errorf("n=%d: one group fewer is the same", n)
		}
		extra := UserInfo{User: "bob", Groups: append(slices.Clone(other), "intruder")}
		if extra.sameIdentity("bob", groups) || u.sameIdentity("bob", append(slices.Clone(groups), "intruder")) {
			t.Errorf("n=%d: one group more is the same", n)
		}
	}
}

// BenchmarkSameIdentity: a user.info naming the requester with its own
// groups in reverse order, by group count: the cost per group stays flat
// (docs/benchmarks.md, "Cost by group count").
//
//	go test -run '^$' -bench SameIdentity -benchmem ./admission/
func BenchmarkSameIdentity(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000, 60000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			groups := manyGroups(n)
			u := UserInfo{User: "bob", Groups: slices.Clone(groups)}
			slices.Reverse(u.Groups)
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if !u.sameIdentity("bob", groups) {
					b.Fatal("differ")
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkMutateGroups: the whole review of BenchmarkSameIdentity's
// case through the HTTP handler (decoding included), with the cap raised
// above the group count; the cost per group stays flat.
//
//	go test -run '^$' -bench MutateGroups -benchmem ./admission/
func BenchmarkMutateGroups(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000, 60000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			groups := manyGroups(n)
			reversed := slices.Clone(groups)
			slices.Reverse(reversed)
			h := newTestHandler(nil, WithMaxGroups(100000, nil))
			serveBench(b, h.MutateHTTP(), groupsReview(b, groups, reversed))
		})
	}
}

// A review whose caller has gone (its context ended while the body was
// decoded) asks no authorizer: it is denied at once and still audited.
func TestReviewStopsWhenCallerGoes(t *testing.T) {
	authz := &fakeAuthz{}
	var audited []Record
	h := newTestHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}), WithAuthorizer(authz), WithAudit(func(r Record) { audited = append(audited, r) }))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mutate", bytes.NewReader(groupsReview(t, []string{"dev"}, nil)))
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.MutateHTTP().ServeHTTP(rec, r)
	if q := authz.queues(); len(q) != 0 {
		t.Fatalf("the authorizer was asked about %q after the caller left", q)
	}
	if resp := reviewResponse(t, rec.Body.Bytes()); resp.Allowed || !strings.Contains(resp.Result.Message, "context canceled") {
		t.Fatalf("allowed %v: %s", resp.Allowed, resp.Result.Message)
	}
	if len(audited) != 1 || audited[0].Denial == nil || audited[0].Denial.Reason != CauseDecisionFailed {
		t.Fatalf("audit records: %+v", audited)
	}
}
