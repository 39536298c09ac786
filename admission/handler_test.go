package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/usherhq/usher/admission/settings"
)

// run reviews req through the HTTP handler (real AdmissionReview JSON) and
// through the Go API, checks that both agree and that the response UID is
// the request's, and returns the response.
func run(t *testing.T, h *Handler, hook hookKind, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	hh := h.MutateHTTP()
	if hook == hookValidate {
		hh = h.ValidateHTTP()
	}
	rec := httptest.NewRecorder()
	hr := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(reviewBody(t, req)))
	hr.Header.Set("Content-Type", "application/json")
	hh.ServeHTTP(rec, hr)
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, rec.Body)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("bad response review: %s", rec.Body)
	}
	if out.Response.UID != req.UID {
		t.Fatalf("response UID %q, want %q", out.Response.UID, req.UID)
	}
	var direct *admissionv1.AdmissionResponse
	if hook == hookValidate {
		direct = h.Validate(context.Background(), req)
	} else {
		direct = h.Mutate(context.Background(), req)
	}
	if !reflect.DeepEqual(direct, out.Response) {
		t.Fatalf("HTTP and Go API disagree:\nHTTP %+v\nGo   %+v", out.Response, direct)
	}
	if !out.Response.Allowed && out.Response.Patch != nil {
		t.Fatalf("denied response carries a patch")
	}
	if out.Response.Patch != nil && (out.Response.PatchType == nil || *out.Response.PatchType != admissionv1.PatchTypeJSONPatch) {
		t.Fatalf("patch without patchType JSONPatch")
	}
	return out.Response
}

// patched applies the response's patch to the request object and returns
// the pod (template) annotations of the result, decoded as the real kind.
func patched(t *testing.T, kc kindCase, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) map[string]string {
	t.Helper()
	doc := req.Object.Raw
	if len(resp.Patch) > 0 {
		var err error
		doc, err = applyPatch(doc, resp.Patch)
		if err != nil {
			t.Fatalf("patch %s does not apply: %v", resp.Patch, err)
		}
	}
	ann, err := kc.podAnnotations(doc)
	if err != nil {
		t.Fatalf("patched object does not decode as %s: %v", kc.kind, err)
	}
	return ann
}

func wantAllowed(t *testing.T, resp *admissionv1.AdmissionResponse) {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %s", resp.Result.Message)
	}
}

func wantDenied(t *testing.T, resp *admissionv1.AdmissionResponse, code int32, contains ...string) {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want denied with %d", code)
	}
	if resp.Result == nil || resp.Result.Code != code {
		t.Fatalf("status %+v, want code %d", resp.Result, code)
	}
	for _, s := range contains {
		if !strings.Contains(resp.Result.Message, s) {
			t.Errorf("message %q does not contain %q", resp.Result.Message, s)
		}
	}
}

func TestCreateStampsEveryKind(t *testing.T) {
	h := newTestHandler(nil)
	shapes := []struct {
		name   string
		ann    map[string]string
		labels map[string]string
	}{
		{"no annotations map", nil, nil},
		{"empty annotations map", map[string]string{}, m("app", "x")},
		{"other annotations", m("a/b", "c", "x~y/z", "1"), m("app", "x")},
	}
	for _, kc := range kindCases {
		for _, shape := range shapes {
			t.Run(kc.kind+"/"+shape.name, func(t *testing.T) {
				req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(shape.labels, shape.ann, nil), nil)
				resp := run(t, h, hookMutate, req)
				wantAllowed(t, resp)
				if resp.Patch == nil {
					t.Fatal("no patch")
				}
				ann := patched(t, kc, req, resp)
				if got := ann[UserInfoAnnotation]; got != aliceInfo {
					t.Fatalf("user.info = %q, want %q", got, aliceInfo)
				}
				for k, v := range shape.ann {
					if ann[k] != v {
						t.Errorf("annotation %q = %q, want it kept as %q", k, ann[k], v)
					}
				}
				if len(resp.Warnings) != 0 {
					t.Errorf("warnings %v", resp.Warnings)
				}
			})
		}
	}
}

// TestCreateStampsWithoutMetadata covers objects whose pod (template)
// metadata is absent or null in the JSON: the patch must create it.
func TestCreateStampsWithoutMetadata(t *testing.T) {
	h := newTestHandler(nil)
	cases := []struct {
		kind string
		obj  string
	}{
		{"Pod", `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"a","image":"b"}]}}`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":null,"spec":{"containers":[{"name":"a","image":"b"}]}}`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":null}}`},
		{"Deployment", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[]}}}}`},
		{"Deployment", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"metadata":null}}}`},
		{"Job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"metadata":{"labels":{"a":"b"}}}}}`},
		{"CronJob", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"jobTemplate":{"spec":{"template":{}}}}}`},
		{"ReplicationController", `{"apiVersion":"v1","kind":"ReplicationController","spec":{"template":{"metadata":{}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.kind+"/"+tc.obj, func(t *testing.T) {
			kc := kindCaseOf(t, tc.kind)
			req := request(t, kc, admissionv1.Create, "team-a", alice, nil, nil)
			req.Object.Raw = []byte(tc.obj)
			resp := run(t, h, hookMutate, req)
			wantAllowed(t, resp)
			if got := patched(t, kc, req, resp)[UserInfoAnnotation]; got != aliceInfo {
				t.Fatalf("user.info = %q, want %q (patch %s)", got, aliceInfo, resp.Patch)
			}
		})
	}
}

func TestCreateWorkloadWithoutTemplateDenied(t *testing.T) {
	h := newTestHandler(nil)
	kc := kindCaseOf(t, "Deployment")
	req := request(t, kc, admissionv1.Create, "team-a", alice, nil, nil)
	req.Object.Raw = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{}}`)
	wantDenied(t, run(t, h, hookMutate, req), 400, "has no pod template", "/spec/template")
}

func TestStampEscapesIdentity(t *testing.T) {
	h := newTestHandler(nil)
	kc := kindCaseOf(t, "Pod")
	odd := authenticationv1.UserInfo{Username: `o"dd\user<&>` + "\u2028é", Groups: []string{"g/1", "ü", "a\tb"}}
	req := request(t, kc, admissionv1.Create, "team-a", odd, kc.build(nil, nil, nil), nil)
	resp := run(t, h, hookMutate, req)
	ui, err := ParseUserInfo(patched(t, kc, req, resp)[UserInfoAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	if ui.User != odd.Username || !reflect.DeepEqual(ui.Groups, odd.Groups) {
		t.Fatalf("round trip gave %+v", ui)
	}
}

func TestStampWithNoGroups(t *testing.T) {
	h := newTestHandler(nil)
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", authenticationv1.UserInfo{Username: "x"}, kc.build(nil, nil, nil), nil)
	resp := run(t, h, hookMutate, req)
	if got := patched(t, kc, req, resp)[UserInfoAnnotation]; got != `{"user":"x","groups":[]}` {
		t.Fatalf("user.info = %q", got)
	}
}

func TestCreateEmptyUsernameDenied(t *testing.T) {
	h := newTestHandler(nil)
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", authenticationv1.UserInfo{}, kc.build(nil, nil, nil), nil)
	wantDenied(t, run(t, h, hookMutate, req), 400, "username is empty")
}

// TestCreateWithAnnotation is the trust matrix: who may supply user.info.
func TestCreateWithAnnotation(t *testing.T) {
	external := settings.Config{AccessControl: settings.AccessControl{
		ExternalUsers:  settings.Patterns{"^system:serviceaccount:airflow:scheduler$"},
		ExternalGroups: settings.Patterns{"^submitters$"},
	}}
	noCtrl := external
	noCtrl.AccessControl.TrustControllers = boolPtr(false)
	bypass := settings.Config{AccessControl: settings.AccessControl{BypassAuth: true}}
	legacyOnly := settings.Config{AccessControl: settings.AccessControl{SystemUsers: settings.ParsePatterns("^system:serviceaccount:kube-system:")}}

	cases := []struct {
		name   string
		cfg    settings.Config
		user   authenticationv1.UserInfo
		ann    string
		allow  bool
		reason string
		rule   Rule // the rule of an allowed review
	}{
		{"plain user forging", settings.Config{}, bob, forgedCarol, false, `user "bob" may not set annotation yunikorn.apache.org/user.info`, RuleDenied},
		{"plain user naming itself", settings.Config{}, alice, aliceInfo, true, "", RuleKeptSame},
		{"replicaset controller", settings.Config{}, rsCtrl, aliceInfo, true, "", RuleKeptController},
		{"job controller", settings.Config{}, jobCtrl, aliceInfo, true, "", RuleKeptController},
		{"shared controller manager", settings.Config{}, kcm, aliceInfo, true, "", RuleKeptController},
		{"shared controller manager, YuniKorn's old default", legacyOnly, kcm, aliceInfo, false, "may not set", RuleDenied},
		{"controller with trustControllers false", noCtrl, rsCtrl, aliceInfo, false, "trustControllers is false", RuleDenied},
		{"kube-system lookalike", settings.Config{}, authenticationv1.UserInfo{Username: "system:serviceaccount:kube-systemx:evil"}, forgedCarol, false, "may not set", RuleDenied},
		{"external user", external, airflow, forgedCarol, true, "", RuleKeptExternalUser},
		{"external user not configured", settings.Config{}, airflow, forgedCarol, false, "may not set", RuleDenied},
		{"external group member", external, livyMember, forgedCarol, true, "", RuleKeptExternalGroup},
		{"external group, not member", external, bob, forgedCarol, false, "may not set", RuleDenied},
		{"bypassAuth any user", bypass, bob, forgedCarol, true, "", RuleKeptBypassAuth},
	}
	for _, kc := range kindCases {
		for _, tc := range cases {
			t.Run(kc.kind+"/"+tc.name, func(t *testing.T) {
				var audited []Record
				h := newTestHandler(mustCompile(t, tc.cfg), WithAudit(func(r Record) { audited = append(audited, r) }))
				req := request(t, kc, admissionv1.Create, "team-a", tc.user, kc.build(nil, m(UserInfoAnnotation, tc.ann), nil), nil)
				for _, hook := range []hookKind{hookMutate, hookValidate} {
					audited = audited[:0]
					resp := run(t, h, hook, req)
					if !tc.allow {
						wantDenied(t, resp, 403, tc.reason, tc.user.Username)
						continue
					}
					wantAllowed(t, resp)
					if resp.Patch != nil {
						t.Fatalf("patch %s on a kept annotation", resp.Patch)
					}
					if len(audited) != 2 || audited[0].Rule != tc.rule || audited[0].Reason != string(tc.rule) || audited[0].Identity == "" {
						t.Fatalf("audit %+v, want rule %v", audited, tc.rule)
					}
				}
			})
		}
	}
}

func TestCreateInvalidAnnotation(t *testing.T) {
	bad := []struct{ value, want string }{
		{`carol`, "not a JSON object"},
		{`{"user":"carol"`, "not valid JSON"},
		{`{"groups":["a"]}`, `"user" is missing or empty`},
		{`{"user":""}`, `"user" is missing or empty`},
		{`{"user":null}`, `"user" is missing or empty`},
		{`{"username":"joe","groups":["developers"]}`, `member "username" is not allowed: the member is "user", not "username"`},
		{`{"User":"joe"}`, `member "User" is not allowed: the scheduler matches member names without regard to case`},
		{`{"user":5}`, `found a number, want a string`},
		{`{"user":"a","groups":"b"}`, `want an array`},
		{`{"user":"a","groups":[1]}`, `want a string`},
		{`{"user":"a","groups":["x",""]}`, `"groups"[1] is empty`},
		{`{"user":"a","user":"b"}`, `duplicate member "user"`},
		{`{"user":"a"} x`, `unexpected data`},
		{``, "not a JSON object"},
	}
	// Invalid values are denied even from the most trusted submitters.
	for _, who := range []authenticationv1.UserInfo{bob, rsCtrl} {
		for _, bypassAuth := range []bool{false, true} {
			h := newTestHandler(mustCompile(t, settings.Config{AccessControl: settings.AccessControl{BypassAuth: bypassAuth}}))
			for _, b := range bad {
				t.Run(who.Username+"/"+b.value, func(t *testing.T) {
					kc := kindCaseOf(t, "Pod")
					req := request(t, kc, admissionv1.Create, "team-a", who, kc.build(nil, m(UserInfoAnnotation, b.value), nil), nil)
					wantDenied(t, run(t, h, hookMutate, req), 400, "is not valid", b.want, "team-a/obj")
				})
			}
		}
	}
}

// TestLegacyLabel follows YuniKorn's admission controller: with bypassAuth an object carrying the
// legacy label and no annotation is left alone; otherwise the annotation
// is always stamped.
func TestLegacyLabel(t *testing.T) {
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			withLabel := kc.build(m(LegacyUserLabel, "john"), nil, nil)
			noLabel := kc.build(nil, nil, nil)

			on := newTestHandler(mustCompile(t, settings.Config{AccessControl: settings.AccessControl{BypassAuth: true}}))
			resp := run(t, on, hookMutate, request(t, kc, admissionv1.Create, "team-a", alice, withLabel, nil))
			wantAllowed(t, resp)
			if resp.Patch != nil {
				t.Fatalf("bypassAuth + legacy label: patched %s", resp.Patch)
			}
			if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "deprecated") {
				t.Errorf("warnings %q, want a deprecation warning", resp.Warnings)
			}
			// The validating webhook accepts the unstamped object too.
			wantAllowed(t, run(t, on, hookValidate, request(t, kc, admissionv1.Create, "team-a", alice, withLabel, nil)))

			req := request(t, kc, admissionv1.Create, "team-a", alice, noLabel, nil)
			if got := patched(t, kc, req, run(t, on, hookMutate, req))[UserInfoAnnotation]; got != aliceInfo {
				t.Fatalf("bypassAuth without label: user.info %q", got)
			}

			off := newTestHandler(nil)
			req = request(t, kc, admissionv1.Create, "team-a", alice, withLabel, nil)
			if got := patched(t, kc, req, run(t, off, hookMutate, req))[UserInfoAnnotation]; got != aliceInfo {
				t.Fatalf("legacy label without bypassAuth: user.info %q", got)
			}
		})
	}
}

// TestControllerCreatedObjects: controllers' objects without the
// annotation get the controller's identity, except ReplicaSets.
func TestControllerCreatedObjects(t *testing.T) {
	h := newTestHandler(nil)
	for _, kc := range kindCases {
		for _, ctrl := range []authenticationv1.UserInfo{rsCtrl, kcm} {
			t.Run(kc.kind+"/"+ctrl.Username, func(t *testing.T) {
				req := request(t, kc, admissionv1.Create, "team-a", ctrl, kc.build(nil, nil, nil), nil)
				resp := run(t, h, hookMutate, req)
				wantAllowed(t, resp)
				got := patched(t, kc, req, resp)[UserInfoAnnotation]
				if kc.kind == "ReplicaSet" {
					if resp.Patch != nil {
						t.Fatalf("controller ReplicaSet patched: %s", resp.Patch)
					}
					wantAllowed(t, run(t, h, hookValidate, req))
					return
				}
				ui, err := ParseUserInfo(got)
				if err != nil || ui.User != ctrl.Username {
					t.Fatalf("user.info %q, want the controller %s", got, ctrl.Username)
				}
			})
		}
	}
	// A user's ReplicaSet is stamped like any workload.
	kc := kindCaseOf(t, "ReplicaSet")
	req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)
	if got := patched(t, kc, req, run(t, h, hookMutate, req))[UserInfoAnnotation]; got != aliceInfo {
		t.Fatalf("user ReplicaSet: user.info %q", got)
	}
}

// TestDeploymentToPodChain walks the chain a Deployment goes through: the
// user's Deployment is stamped, the controller's ReplicaSet and pod copy
// the annotation and are left as they are.
func TestDeploymentToPodChain(t *testing.T) {
	h := newTestHandler(nil)
	dep := kindCaseOf(t, "Deployment")
	req := request(t, dep, admissionv1.Create, "team-a", alice, dep.build(m("app", "web"), nil, nil), nil)
	ann := patched(t, dep, req, run(t, h, hookMutate, req))

	rs := kindCaseOf(t, "ReplicaSet")
	for _, ctrl := range []authenticationv1.UserInfo{depCtrl, kcm} {
		rreq := request(t, rs, admissionv1.Create, "team-a", ctrl, rs.build(m("app", "web"), ann, nil), nil)
		resp := run(t, h, hookMutate, rreq)
		wantAllowed(t, resp)
		if resp.Patch != nil {
			t.Fatalf("ReplicaSet patched")
		}
		pod := kindCaseOf(t, "Pod")
		preq := request(t, pod, admissionv1.Create, "team-a", rsCtrl, pod.build(m("app", "web"), ann, nil), nil)
		resp = run(t, h, hookMutate, preq)
		wantAllowed(t, resp)
		if resp.Patch != nil {
			t.Fatalf("pod patched")
		}
		wantAllowed(t, run(t, h, hookValidate, preq))
	}
}

func TestValidateCreateRequiresStamp(t *testing.T) {
	h := newTestHandler(nil)
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)
			wantDenied(t, run(t, h, hookValidate, req), 403, "has no annotation", "/mutate")
			// After /mutate, /validate accepts the object.
			resp := run(t, h, hookMutate, req)
			doc, err := applyPatch(req.Object.Raw, resp.Patch)
			if err != nil {
				t.Fatal(err)
			}
			req.Object.Raw = doc
			wantAllowed(t, run(t, h, hookValidate, req))
		})
	}
}

func TestNamespaces(t *testing.T) {
	kc := kindCaseOf(t, "Pod")
	cases := []struct {
		name    string
		cfg     settings.Config
		ns      string
		handled bool
	}{
		{"default bypasses kube-system", settings.Config{}, "kube-system", false},
		{"default handles others", settings.Config{}, "team-a", true},
		{"default anchored", settings.Config{}, "kube-systemx", true},
		{"explicit empty bypass list", settings.Config{BypassNamespaces: settings.Patterns{}}, "kube-system", true},
		{"process list match", settings.Config{ProcessNamespaces: settings.Patterns{"^team-"}}, "team-a", true},
		{"process list miss", settings.Config{ProcessNamespaces: settings.Patterns{"^team-"}}, "default", false},
		{"bypass wins over process", settings.Config{ProcessNamespaces: settings.Patterns{"^team-"}, BypassNamespaces: settings.Patterns{"^team-b$"}}, "team-b", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHandler(mustCompile(t, tc.cfg))
			// A forged annotation shows whether the namespace is handled.
			req := request(t, kc, admissionv1.Create, tc.ns, bob, kc.build(nil, m(UserInfoAnnotation, forgedCarol), nil), nil)
			resp := run(t, h, hookMutate, req)
			if tc.handled {
				wantDenied(t, resp, 403)
				return
			}
			wantAllowed(t, resp)
			if resp.Patch != nil {
				t.Fatal("bypassed namespace patched")
			}
			req = request(t, kc, admissionv1.Create, tc.ns, bob, kc.build(nil, nil, nil), nil)
			if resp := run(t, h, hookMutate, req); !resp.Allowed || resp.Patch != nil {
				t.Fatalf("bypassed namespace: %+v", resp)
			}
		})
	}
}

func TestOtherKindsAndOperations(t *testing.T) {
	h := newTestHandler(nil)
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
	req := request(t, kindCase{kind: "ConfigMap", version: "v1", resource: "configmaps"}, admissionv1.Create, "team-a", bob, cm, nil)
	if resp := run(t, h, hookMutate, req); !resp.Allowed || resp.Patch != nil {
		t.Fatalf("ConfigMap: %+v", resp)
	}
	// Volcano's Job has the kind name of batch/v1 Job but another group.
	vj := request(t, kindCase{kind: "Job", group: "batch.volcano.sh", version: "v1alpha1", resource: "jobs"}, admissionv1.Create, "team-a", bob, nil, nil)
	vj.Object.Raw = []byte(`{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","spec":{"tasks":[]}}`)
	if resp := run(t, h, hookMutate, vj); !resp.Allowed || resp.Patch != nil {
		t.Fatalf("volcano Job: %+v", resp)
	}
	kc := kindCaseOf(t, "Pod")
	for _, op := range []admissionv1.Operation{admissionv1.Delete, admissionv1.Connect} {
		req := request(t, kc, op, "team-a", bob, nil, kc.build(nil, nil, nil))
		if resp := run(t, h, hookMutate, req); !resp.Allowed || resp.Patch != nil {
			t.Fatalf("%s: %+v", op, resp)
		}
	}
}

// TestUpdate: the annotation cannot be added, removed or changed on pods
// and on the pod templates of every workload, by anyone; other updates pass.
func TestUpdate(t *testing.T) {
	external := mustCompile(t, settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^bob$"}, BypassAuth: true}})
	for _, kc := range kindCases {
		base := kc.build(m("app", "x"), m(UserInfoAnnotation, aliceInfo, "other", "1"), m("team", "a"))
		denied := []struct {
			name string
			obj  runtime.Object
			old  runtime.Object
			verb string
		}{
			{"change", kc.build(m("app", "x"), m(UserInfoAnnotation, forgedCarol, "other", "1"), m("team", "a")), base, "change"},
			{"remove", kc.build(m("app", "x"), m("other", "1"), m("team", "a")), base, "remove"},
			{"remove map", kc.build(m("app", "x"), nil, m("team", "a")), base, "remove"},
			{"add", base, kc.build(m("app", "x"), m("other", "1"), m("team", "a")), "add"},
			{"reformat", kc.build(m("app", "x"), m(UserInfoAnnotation, " "+aliceInfo, "other", "1"), m("team", "a")), base, "change"},
		}
		for _, tc := range denied {
			for _, who := range []authenticationv1.UserInfo{bob, alice, rsCtrl, kcm} {
				t.Run(kc.kind+"/"+tc.name+"/"+who.Username, func(t *testing.T) {
					for _, h := range []*Handler{newTestHandler(nil), newTestHandler(external)} {
						req := request(t, kc, admissionv1.Update, "team-a", who, tc.obj, tc.old)
						for _, hook := range []hookKind{hookValidate, hookMutate} {
							wantDenied(t, run(t, h, hook, req), 403, "may not "+tc.verb+" annotation "+UserInfoAnnotation, kc.kind+` "team-a/obj"`, who.Username)
						}
					}
				})
			}
		}
		allowed := []struct {
			name     string
			obj, old runtime.Object
		}{
			{"labels", kc.build(m("app", "y"), m(UserInfoAnnotation, aliceInfo, "other", "1"), m("team", "b")), base},
			{"other annotation", kc.build(m("app", "x"), m(UserInfoAnnotation, aliceInfo, "other", "2", "kubectl.kubernetes.io/restartedAt", "now"), m("team", "a")), base},
			{"no annotation either side", kc.build(nil, nil, nil), kc.build(m("a", "b"), nil, nil)},
			{"identical", base, base},
		}
		for _, tc := range allowed {
			t.Run(kc.kind+"/"+tc.name, func(t *testing.T) {
				h := newTestHandler(nil)
				req := request(t, kc, admissionv1.Update, "team-a", rsCtrl, tc.obj, tc.old)
				for _, hook := range []hookKind{hookValidate, hookMutate} {
					resp := run(t, h, hook, req)
					wantAllowed(t, resp)
					if resp.Patch != nil {
						t.Fatal("patch on UPDATE")
					}
				}
			})
		}
	}
}

// TestDeploymentTemplateForgery is the hole YuniKorn leaves open: a user
// who may edit a Deployment rewrites its template's user.info so that the
// controller creates pods under another name.
func TestDeploymentTemplateForgery(t *testing.T) {
	h := newTestHandler(nil)
	kc := kindCaseOf(t, "Deployment")
	old := kc.build(m("app", "web"), m(UserInfoAnnotation, aliceInfo), nil)
	forged := kc.build(m("app", "web"), m(UserInfoAnnotation, forgedCarol), nil)
	req := request(t, kc, admissionv1.Update, "team-a", bob, forged, old)
	for _, hook := range []hookKind{hookValidate, hookMutate} {
		wantDenied(t, run(t, h, hook, req), 403,
			`user "bob" may not change annotation yunikorn.apache.org/user.info on the pod template of Deployment "team-a/obj"`)
	}
}

// TestControllerEverydayUpdates: status, scale and label updates by
// controllers pass.
func TestControllerEverydayUpdates(t *testing.T) {
	h := newTestHandler(nil)
	ann := m(UserInfoAnnotation, aliceInfo)
	dep := func(replicas int32, ready int32, rev string) *appsv1.Deployment {
		d := kindCaseOf(t, "Deployment").build(m("app", "web"), ann, nil).(*appsv1.Deployment)
		d.Spec.Replicas = &replicas
		d.Status.ReadyReplicas = ready
		d.Annotations = m("deployment.kubernetes.io/revision", rev)
		return d
	}
	kc := kindCaseOf(t, "Deployment")
	cases := []struct {
		name     string
		user     authenticationv1.UserInfo
		sub      string
		obj, old runtime.Object
	}{
		{"status", depCtrl, "status", dep(3, 3, "1"), dep(3, 1, "1")},
		{"revision annotation", depCtrl, "", dep(3, 3, "2"), dep(3, 3, "1")},
		{"scale", kcm, "", dep(5, 3, "1"), dep(3, 3, "1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, kc, admissionv1.Update, "team-a", tc.user, tc.obj, tc.old)
			req.SubResource = tc.sub
			wantAllowed(t, run(t, h, hookValidate, req))
		})
	}
	// Pod status updates by the kubelet.
	pk := kindCaseOf(t, "Pod")
	oldPod := pk.build(nil, ann, nil).(*corev1.Pod)
	newPod := oldPod.DeepCopy()
	newPod.Status.Phase = corev1.PodRunning
	newPod.Labels = m("controller-revision-hash", "abc")
	req := request(t, pk, admissionv1.Update, "team-a", authenticationv1.UserInfo{Username: "system:node:n1", Groups: []string{"system:nodes"}}, newPod, oldPod)
	req.SubResource = "status"
	wantAllowed(t, run(t, h, hookValidate, req))
	// Scale subresource: the object is an autoscaling/v1 Scale.
	scale := request(t, kindCase{kind: "Scale", group: "autoscaling", version: "v1", resource: "deployments"}, admissionv1.Update, "team-a", bob, nil, nil)
	scale.Object.Raw = []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":3}}`)
	wantAllowed(t, run(t, h, hookValidate, scale))
	// A Job's pod template update by the job controller.
	jk := kindCaseOf(t, "Job")
	oldJob := jk.build(m("a", "b"), ann, nil).(*batchv1.Job)
	newJob := oldJob.DeepCopy()
	newJob.Status.Succeeded = 1
	wantAllowed(t, run(t, h, hookValidate, request(t, jk, admissionv1.Update, "team-a", jobCtrl, newJob, oldJob)))
}

func TestUpdateMalformed(t *testing.T) {
	h := newTestHandler(nil)
	kc := kindCaseOf(t, "Deployment")
	good := kc.build(nil, nil, nil)
	req := request(t, kc, admissionv1.Update, "team-a", bob, good, nil)
	wantDenied(t, run(t, h, hookValidate, req), 400, "request.oldObject is empty")
	req = request(t, kc, admissionv1.Update, "team-a", bob, good, good)
	req.OldObject.Raw = []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"metadata":{"annotations":{"a":1}}}}}`)
	wantDenied(t, run(t, h, hookValidate, req), 400, "request.oldObject is not a valid Deployment", `spec.template.metadata.annotations["a"]: found a number, want a string`)
}

func TestMalformedObjects(t *testing.T) {
	h := newTestHandler(nil)
	cases := []struct {
		kind, obj, want string
	}{
		{"Pod", ``, "request.object is empty"},
		{"Pod", `null`, "request.object is empty"},
		{"Pod", `[]`, "request.object is not a JSON object"},
		{"Pod", `"pod"`, "request.object is not a JSON object"},
		{"Pod", `{}`, "object without apiVersion and kind"},
		{"Pod", `{"apiVersion":"v1","kind":"Service"}`, `is a "v1" "Service", want v1 Pod`},
		{"Deployment", `{"apiVersion":"apps/v1beta1","kind":"Deployment","spec":{"template":{}}}`, `want apps/v1 Deployment`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":5}`, "metadata: found a number, want an object"},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":[]}}`, "metadata.labels: found an array, want an object"},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"x":true}}}`, `metadata.annotations["x"]: found a boolean, want a string`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","spec":"x"}`, "spec: found a string, want an object"},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":7}}`, "metadata.name: found a number, want a string"},
		{"Deployment", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":5}}`, "spec.template: found a number, want an object"},
		{"CronJob", `{"apiVersion":"batch/v1","kind":"CronJob","spec":{"jobTemplate":{"spec":{"template":{"metadata":{"labels":{"a":{}}}}}}}}`, `spec.jobTemplate.spec.template.metadata.labels["a"]`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"a\"}","yunikorn.apache.org/user.info":"{\"user\":\"b\"}"}}}`, "duplicate key"},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","kind":"Pod"}`, `duplicate member "kind"`},
	}
	for _, tc := range cases {
		t.Run(tc.obj, func(t *testing.T) {
			kc := kindCaseOf(t, tc.kind)
			req := request(t, kc, admissionv1.Create, "team-a", alice, nil, nil)
			req.Object.Raw = []byte(tc.obj)
			if tc.obj == "" || tc.obj == "null" {
				req.Object.Raw = nil
			}
			for _, hook := range []hookKind{hookMutate, hookValidate} {
				wantDenied(t, run(t, h, hook, req), 400, tc.want)
			}
		})
	}
}

func TestAuditRecord(t *testing.T) {
	var got []Record
	h := newTestHandler(nil, WithAudit(func(r Record) { got = append(got, r) }))
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)
	dry := true
	req.DryRun = &dry
	h.Mutate(context.Background(), req)
	want := Record{Webhook: "mutate", UID: string(req.UID), Operation: "CREATE", Kind: "Pod", Namespace: "team-a", Name: "obj",
		User: alice.Username, Groups: alice.Groups, Identity: alice.Username, Allowed: true, Patched: true, Code: 200,
		Reason: string(RuleStamped), Rule: RuleStamped, DryRun: true}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("audit\n got %+v\nwant %+v", got, want)
	}
	got = nil
	req = request(t, kc, admissionv1.Create, "team-a", bob, kc.build(nil, m(UserInfoAnnotation, forgedCarol), nil), nil)
	h.Validate(context.Background(), req)
	if len(got) != 1 || got[0].Allowed || got[0].Code != 403 || got[0].Webhook != "validate" || !strings.Contains(got[0].Reason, "may not set") {
		t.Fatalf("audit %+v", got)
	}
}

func TestStoreSwapsConfigAndAuthorizer(t *testing.T) {
	h := newTestHandler(nil)
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", bob, kc.build(nil, m(UserInfoAnnotation, forgedCarol), nil), nil)
	wantDenied(t, run(t, h, hookMutate, req), 403)
	authz := &fakeAuthz{}
	if err := h.Store(mustCompile(t, settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^bob$"}}}), authz); err != nil {
		t.Fatal(err)
	}
	wantAllowed(t, run(t, h, hookMutate, req))
	if c, a := h.Current(); c.Config().AccessControl.ExternalUsers[0] != "^bob$" || a != authz {
		t.Fatalf("Current() = %v, %v", c, a)
	}
	if err := h.Store(nil, nil); err == nil {
		t.Fatal("Store(nil) succeeded")
	}
	wantAllowed(t, run(t, h, hookMutate, req))
}

// uidRecorder is an edge's ResponseWriter that learns the review's UID.
type uidRecorder struct {
	*httptest.ResponseRecorder
	uid string
}

func (r *uidRecorder) RecordUID(uid string) { r.uid = uid }

// A panic in a rule or in the audit hook leaves the handler for the edge's
// recover (server.instrument), which has been told the review's UID and
// answers with WriteFailure: a denial carrying that UID.
func TestPanicReachesTheEdgeWithTheUID(t *testing.T) {
	kc := kindCaseOf(t, "Pod")
	req := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil)
	for name, h := range map[string]*Handler{
		"rule":  newTestHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true}), WithAuthorizer(&fakeAuthz{panicV: "boom"})),
		"audit": newTestHandler(nil, WithAudit(func(Record) { panic(errors.New("audit broke")) })),
	} {
		rec := &uidRecorder{ResponseRecorder: httptest.NewRecorder()}
		hr := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(reviewBody(t, req)))
		hr.Header.Set("Content-Type", "application/json")
		v := func() (v any) {
			defer func() { v = recover() }()
			h.MutateHTTP().ServeHTTP(rec, hr)
			return nil
		}()
		if v == nil || rec.uid != string(req.UID) || rec.Body.Len() != 0 {
			t.Fatalf("%s: recovered %v, uid %q, body %q", name, v, rec.uid, rec.Body)
		}
		WriteFailure(rec, rec.uid, v)
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != 200 || out.Response.UID != req.UID {
			t.Fatalf("%s: HTTP %d %s", name, rec.Code, rec.Body)
		}
		wantDenied(t, out.Response, 500, "internal error", fmt.Sprint(v), "fails closed")
	}
}
