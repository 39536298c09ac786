package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/identity"
)

// fakeDirectory is an IdentityResolver merging the given groups with a
// table's, as a partition with groups: merge and a file resolver does;
// it counts its calls and fails when err is set.
type fakeDirectory struct {
	mu    sync.Mutex
	table map[string][]string
	err   error
	calls int
}

func (f *fakeDirectory) Identify(_ context.Context, _, user string, groups []string) (identity.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return identity.Info{}, f.err
	}
	return (*identity.Policy)(nil).Complete(context.Background(), identity.ModeMerge, resolverFunc(func(_ context.Context, u string) (identity.Info, error) {
		in := identity.Info{User: u, Groups: f.table[u]}
		for range in.Groups {
			in.Sources = append(in.Sources, "file")
		}
		return in, nil
	}), user, groups)
}

// stampHandler is a handler over cfg whose state has dir as its
// IdentityResolver and authz as its queue authorizer, auditing to sink.
func stampHandler(t *testing.T, cfg settings.Config, dir IdentityResolver, authz QueueAuthorizer, sink *auditSink) *Handler {
	st := NewState(mustCompile(t, cfg), Authorizers{Queue: authz, Identity: dir})
	return newTestHandler(nil, WithState(func() *State { return st }), WithAudit(sink.hook))
}

const aliceMerged = `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated","ml"]}`

// With an IdentityResolver (groups: resolve or merge), every kind is
// stamped with the groups usher decides, the API server's first and the
// directory's after them, with the directory's listed beside; the queue
// check gets that same identity, marked decided, and the directory is
// asked once per review; the audit record carries each group's source.
func TestStampDecidedGroups(t *testing.T) {
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			dir := &fakeDirectory{table: map[string][]string{alice.Username: {"ml", "dev.team"}}}
			authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.ml", ""}}}
			sink := &auditSink{}
			h := stampHandler(t, settings.Config{EnforceQueueACLs: true}, dir, authz, sink)
			req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", "root.ml"), nil, nil), nil)
			resp := run(t, h, hookMutate, req)
			wantAllowed(t, resp)
			ann := patched(t, kc, req, resp)
			if ann[UserInfoAnnotation] != aliceMerged || ann[DirectoryGroupsAnnotation] != `["ml"]` {
				t.Fatalf("stamped %q beside %q", ann[UserInfoAnnotation], ann[DirectoryGroupsAnnotation])
			}
			if dir.calls != 2 { // run reviews twice: HTTP and Go API
				t.Errorf("directory asked %d times for two reviews", dir.calls)
			}
			for _, r := range authz.reqs {
				if !r.Decided || strings.Join(r.Groups, ",") != "dev.team,system:authenticated,ml" {
					t.Errorf("queue check got %+v, want the decided identity", r)
				}
			}
			rec := sink.last(t)
			if strings.Join(rec.Decided, ",") != "dev.team,system:authenticated,ml" || strings.Join(rec.Sources, ",") != "given,given,file" ||
				rec.Rule != RuleStamped || rec.Degraded {
				t.Errorf("audit record %+v", rec)
			}
			// The validating webhook accepts what the mutating one wrote.
			req = request(t, kc, admissionv1.Create, "team-a", alice, kc.build(m("queue", "root.ml"), ann, nil), nil)
			wantAllowed(t, run(t, h, hookValidate, req))
		})
	}
}

// stampGroups: given stamps the API server's groups, as YuniKorn's
// admission controller does, and writes no directory groups; the audit
// record and the queue check still carry the decided identity.
func TestStampGroupsGiven(t *testing.T) {
	dir := &fakeDirectory{table: map[string][]string{alice.Username: {"ml"}}}
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {""}}}
	sink := &auditSink{}
	h := stampHandler(t, settings.Config{EnforceQueueACLs: true, StampGroups: settings.StampGiven}, dir, authz, sink)
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)
	resp := run(t, h, hookMutate, req)
	ann := patched(t, kc, req, resp)
	if ann[UserInfoAnnotation] != aliceInfo || ann[DirectoryGroupsAnnotation] != "" {
		t.Fatalf("stamped %v", ann)
	}
	if rec := sink.last(t); strings.Join(rec.Decided, ",") != "dev.team,system:authenticated,ml" {
		t.Errorf("audit record %+v", rec)
	}
	if r := authz.reqs[0]; !r.Decided || len(r.Groups) != 3 {
		t.Errorf("queue check got %+v", r)
	}
	// An untrusted requester may not write the directory groups usher
	// does not write.
	req = request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, m(DirectoryGroupsAnnotation, `["dev.team"]`), nil), nil)
	wantDenied(t, run(t, h, hookMutate, req), 403, "may not set annotation "+DirectoryGroupsAnnotation)
}

// A stamp naming the requester is replaced by the one usher decides
// whenever the two differ (other groups, another order, a stamp exported
// before directory groups were stamped), so a re-applied manifest cannot
// freeze an old group list; the validating webhook, which writes nothing,
// refuses one that differs.
func TestStampRestampsOwnName(t *testing.T) {
	withDir := &fakeDirectory{table: map[string][]string{alice.Username: {"ml"}}}
	kc := kindCaseOf(t, "Deployment")
	for _, tc := range []struct {
		name     string
		dir      IdentityResolver
		ann      map[string]string
		want     string // the stamp after /mutate
		rule     Rule
		validate string // /validate's denial, "" for allowed
	}{
		{"same", nil, m(UserInfoAnnotation, aliceInfo), aliceInfo, RuleKeptSame, ""},
		{"reordered", nil, m(UserInfoAnnotation, `{"user":"alice@EXAMPLE.COM","groups":["system:authenticated","dev.team"]}`), aliceInfo, RuleRestamped, ""},
		{"fewer groups", nil, m(UserInfoAnnotation, `{"user":"alice@EXAMPLE.COM","groups":["dev.team"]}`), aliceInfo, RuleRestamped, "with groups other than those usher decides"},
		{"an extra group", nil, m(UserInfoAnnotation, `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated","admins"]}`), aliceInfo, RuleRestamped, "did not stamp it"},
		{"exported before merge", withDir, m(UserInfoAnnotation, aliceInfo), aliceMerged, RuleRestamped, "with groups other than those usher decides"},
		{"exported after merge", withDir, map[string]string{UserInfoAnnotation: aliceMerged, DirectoryGroupsAnnotation: `["ml"]`}, aliceMerged, RuleKeptSame, ""},
		{"directory groups claimed as given", withDir, map[string]string{UserInfoAnnotation: aliceMerged, DirectoryGroupsAnnotation: `[]`}, aliceMerged, RuleRestamped,
			"with directory groups other than the directory's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &auditSink{}
			h := stampHandler(t, settings.Config{}, tc.dir, nil, sink)
			req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, tc.ann, nil), nil)
			resp := run(t, h, hookMutate, req)
			wantAllowed(t, resp)
			if got := patched(t, kc, req, resp)[UserInfoAnnotation]; got != tc.want {
				t.Errorf("stamp %s, want %s", got, tc.want)
			}
			if rec := sink.last(t); rec.Rule != tc.rule || rec.Patched != (tc.rule == RuleRestamped) {
				t.Errorf("rule %v patched %v, want %v", rec.Rule, rec.Patched, tc.rule)
			}
			resp = run(t, h, hookValidate, req)
			if tc.validate == "" {
				wantAllowed(t, resp)
			} else {
				wantDenied(t, resp, 403, tc.validate)
			}
		})
	}
}

// Directory groups in a stamp are a snapshot that must not become a
// permanent grant: when a trusted controller creates a pod or a Job from
// a stamped template, the stamped user's directory groups are resolved
// again (the template's other groups are kept), the stamp is the API
// server's groups plus the directory's of now, and the queue check uses
// that set. A ReplicaSet a controller creates is never changed, but is
// checked under the same re-resolved identity.
func TestStampControllerReResolves(t *testing.T) {
	template := map[string]string{UserInfoAnnotation: aliceMerged, DirectoryGroupsAnnotation: `["ml"]`}
	for _, tc := range []struct {
		kind string
		ctrl authenticationv1.UserInfo
	}{{"Pod", rsCtrl}, {"Job", kcm}, {"ReplicaSet", rsCtrl}, {"Pod", airflow}} {
		t.Run(tc.kind+"/"+tc.ctrl.Username, func(t *testing.T) {
			kc := kindCaseOf(t, tc.kind)
			dir := &fakeDirectory{table: map[string][]string{alice.Username: {"research"}}} // no longer in ml
			var checked []SubmitRequest
			// root.X is open to the group X only.
			authz := QueueAuthorizerFunc(func(_ context.Context, r SubmitRequest) (SubmitDecision, error) {
				checked = append(checked, r)
				return SubmitDecision{Allowed: slices.Contains(r.Groups, strings.TrimPrefix(r.Queue, "root."))}, nil
			})
			sink := &auditSink{}
			cfg := settings.Config{EnforceQueueACLs: true, AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^system:serviceaccount:airflow:"}}}
			h := stampHandler(t, cfg, dir, authz, sink)
			req := request(t, kc, admissionv1.Create, "team-a", tc.ctrl, kc.build(m("queue", "root.ml"), template, nil), nil)
			wantDenied(t, run(t, h, hookMutate, req), 403, "may not submit")
			if r := checked[0]; !r.Decided || strings.Join(r.Groups, ",") != "dev.team,system:authenticated,research" {
				t.Fatalf("checked with %+v", r)
			}
			req = request(t, kc, admissionv1.Create, "team-a", tc.ctrl, kc.build(m("queue", "root.research"), template, nil), nil)
			resp := run(t, h, hookMutate, req)
			wantAllowed(t, resp)
			ann := patched(t, kc, req, resp)
			want := map[string]string{UserInfoAnnotation: `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated","research"]}`,
				DirectoryGroupsAnnotation: `["research"]`}
			if tc.kind == "ReplicaSet" {
				want = template
			}
			if ann[UserInfoAnnotation] != want[UserInfoAnnotation] || ann[DirectoryGroupsAnnotation] != want[DirectoryGroupsAnnotation] {
				t.Fatalf("annotations %v, want %v", ann, want)
			}
			wantAllowed(t, run(t, h, hookValidate, request(t, kc, admissionv1.Create, "team-a", tc.ctrl, kc.build(m("queue", "root.research"), ann, nil), nil)))
		})
	}
}

// DirectoryGroupsAnnotation is guarded as user.info is: an UPDATE may not
// add, change or remove it, nor a Binding set it; an invalid one from a
// trusted submitter is refused.
func TestDirectoryGroupsGuarded(t *testing.T) {
	h := newTestHandler(nil)
	for _, kc := range kindCases {
		stamped := map[string]string{UserInfoAnnotation: aliceMerged, DirectoryGroupsAnnotation: `["ml"]`}
		for name, ann := range map[string]map[string]string{
			"change": {UserInfoAnnotation: aliceMerged, DirectoryGroupsAnnotation: `[]`},
			"remove": {UserInfoAnnotation: aliceMerged},
		} {
			req := request(t, kc, admissionv1.Update, "team-a", rsCtrl, kc.build(nil, ann, nil), kc.build(nil, stamped, nil))
			for _, hook := range []hookKind{hookMutate, hookValidate} {
				wantDenied(t, run(t, h, hook, req), 403, name+" annotation "+DirectoryGroupsAnnotation)
			}
		}
		req := request(t, kc, admissionv1.Update, "team-a", alice, kc.build(nil, stamped, nil), kc.build(nil, m(UserInfoAnnotation, aliceMerged), nil))
		wantDenied(t, run(t, h, hookValidate, req), 403, "add annotation "+DirectoryGroupsAnnotation)
		for _, bad := range []string{`ml`, `null`, `[""]`, `["ml"] x`, `{"a":1}`} {
			req := request(t, kc, admissionv1.Create, "team-a", rsCtrl, kc.build(nil, map[string]string{UserInfoAnnotation: aliceMerged, DirectoryGroupsAnnotation: bad}, nil), nil)
			wantDenied(t, run(t, h, hookMutate, req), 400, "annotation "+DirectoryGroupsAnnotation, "is not valid")
		}
	}
	binding := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", Annotations: m(DirectoryGroupsAnnotation, `[]`)}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}
	req := &admissionv1.AdmissionRequest{UID: "b", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Binding"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "binding", Name: "p", Namespace: "team-a",
		Operation: admissionv1.Create, UserInfo: bob}
	req.Object.Raw = mustJSON(t, binding)
	wantDenied(t, run(t, h, hookValidate, req), 403, "may not set annotation "+DirectoryGroupsAnnotation+" on Pod")
}

// When the directory cannot answer while stamping: with enforceQueueACLs
// on, or stampGroupsOnError deny, the review is denied; otherwise the API
// server's groups are stamped with a warning, the stamp is marked
// degraded, and the audit record says so (the server counts it).
func TestStampDirectoryDown(t *testing.T) {
	down := &fakeDirectory{err: errors.New("group lookup failed; usher's log has the details under request id 7")}
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)
	allowAll := &fakeAuthz{allowed: map[string][]string{alice.Username: {""}}}
	for _, tc := range []struct {
		name string
		cfg  settings.Config
		deny string
	}{
		{"enforced", settings.Config{EnforceQueueACLs: true}, "(enforceQueueACLs is on)"},
		{"deny", settings.Config{StampGroupsOnError: settings.StampDeny}, "(stampGroupsOnError is deny)"},
		{"given", settings.Config{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &auditSink{}
			h := stampHandler(t, tc.cfg, down, allowAll, sink)
			resp := run(t, h, hookMutate, req)
			if tc.deny != "" {
				wantDenied(t, resp, 500, "cannot establish the groups of user", "request id 7", tc.deny)
				return
			}
			wantAllowed(t, resp)
			ann := patched(t, kc, req, resp)
			if ann[UserInfoAnnotation] != aliceInfo || ann[DirectoryGroupsAnnotation] != directoryUnavailable {
				t.Fatalf("annotations %v", ann)
			}
			if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "could not be established") {
				t.Errorf("warnings %q", resp.Warnings)
			}
			if rec := sink.last(t); !rec.Degraded || rec.Decided != nil {
				t.Errorf("audit record %+v", rec)
			}
			// The validating webhook cannot check the directory's groups
			// then; the requester's own must still be the API server's.
			// It stamps nothing, so nothing degraded is recorded.
			req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, ann, nil), nil)
			wantAllowed(t, run(t, h, hookValidate, req))
			if rec := sink.last(t); rec.Degraded {
				t.Errorf("validate recorded a degraded stamp")
			}
			ctrl := request(t, kc, admissionv1.Create, "team-a", rsCtrl, kc.build(nil, ann, nil), nil)
			if resp := run(t, h, hookValidate, ctrl); !resp.Allowed || len(resp.Warnings) != 0 || sink.last(t).Degraded {
				t.Errorf("validate of a controller's pod: %+v", resp)
			}
			req = request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, map[string]string{
				UserInfoAnnotation: `{"user":"alice@EXAMPLE.COM","groups":["admins"]}`, DirectoryGroupsAnnotation: `[]`}, nil), nil)
			wantDenied(t, run(t, h, hookValidate, req), 403, "neither the API server gave it")
		})
	}
}

// A stamp holds at most 2,048 groups and 64 KiB; past either, or when it
// would bring the object's annotations past the API server's 256 KiB,
// the review is denied saying so, never stamped with a cut list. The
// total is counted as the API server counts it (decoded keys and values),
// so escapes in the JSON do not count against it.
func TestStampLimits(t *testing.T) {
	kc := kindCaseOf(t, "Pod")
	many := func(n int, name string) []string {
		gs := make([]string, n)
		for i := range gs {
			gs[i] = fmt.Sprintf(name, i)
		}
		return gs
	}
	for _, tc := range []struct {
		name  string
		dir   []string
		ann   map[string]string
		allow bool
		want  []string
	}{
		{"2048 groups", many(2048-2, "g%d"), nil, true, nil},
		{"2049 groups", many(2049-2, "g%d"), nil, false, []string{"holds 2049 groups", "at most 2048 groups and 64 KiB"}},
		{"64 KiB", many(700, "group-%0100d"), nil, false, []string{"holds 702 groups", "at most 2048 groups and 64 KiB"}},
		{"annotations past 256 KiB", nil, m("big", strings.Repeat("x", 262100)), false,
			[]string{"would bring the annotations of Pod", "past the API server's limit of 262144 bytes"}},
		// 300,000 bytes of JSON escapes are 50,000 bytes to the API server.
		{"escapes", nil, m("big", strings.Repeat("\x01", 50000)+strings.Repeat("é", 100000)), true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := &fakeDirectory{table: map[string][]string{alice.Username: tc.dir}}
			h := stampHandler(t, settings.Config{}, dir, nil, &auditSink{})
			req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, tc.ann, nil), nil)
			resp := run(t, h, hookMutate, req)
			if !tc.allow {
				wantDenied(t, resp, 400, tc.want...)
				return
			}
			wantAllowed(t, resp)
			var info UserInfo
			if info, _ = ParseUserInfo(patched(t, kc, req, resp)[UserInfoAnnotation]); !slices.Equal(info.Groups[2:], tc.dir) {
				t.Errorf("stamped %d groups", len(info.Groups))
			}
		})
	}
}

// resolverFunc adapts a function to identity.Resolver.
type resolverFunc func(ctx context.Context, user string) (identity.Info, error)

func (f resolverFunc) Resolve(ctx context.Context, user string) (identity.Info, error) {
	return f(ctx, user)
}
