package admission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/usherhq/usher/admission/settings"
)

// reviewFixtures are AdmissionReview bodies: testdata and generated ones
// covering every field of the request.
func reviewFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	files, _ := filepath.Glob("testdata/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	kc := kindCaseOf(t, "Deployment")
	full := request(t, kc, admissionv1.Update, "team-a", authenticationv1.UserInfo{
		Username: "system:serviceaccount:x:y", UID: "u-1", Groups: []string{"a", "b"},
		Extra: map[string]authenticationv1.ExtraValue{"k1": {"v1", "v2"}, "k2": {}},
	}, kc.build(m("a", "b"), m(UserInfoAnnotation, aliceInfo), nil), kc.build(nil, nil, nil))
	dry := true
	full.DryRun = &dry
	full.SubResource, full.RequestSubResource = "status", "status"
	full.RequestKind = &full.Kind
	full.RequestResource = &full.Resource
	full.Options.Raw = []byte(`{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1"}`)
	out["generated/full"] = reviewBody(t, full)
	out["generated/no-groups"] = []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","userInfo":{"username":"x","groups":[]},"object":null,"dryRun":null}}`)
	out["generated/escapes"] = []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"\u0075id","namespace":"n\/s","userInfo":{"username":"\u00e9\ud83d\ude00","groups":["a\"b"]},"object":{"a":"\ud800"}}}`)
	out["generated/whitespace"] = []byte(" {\n \"apiVersion\" : \"admission.k8s.io/v1\" ,\"kind\":\"AdmissionReview\",\"request\" : { \"uid\" : \"u\" , \"object\" : { \"x\" : [ 1 , 2 ] } , \"oldObject\" : null } } \n")
	return out
}

// TestDecodeReviewMatchesEncodingJSON: the scanner decodes every fixture
// into exactly the admissionv1.AdmissionReview encoding/json produces, as
// far as the handler reads it.
func TestDecodeReviewMatchesEncodingJSON(t *testing.T) {
	for name, body := range reviewFixtures(t) {
		t.Run(name, func(t *testing.T) {
			var want admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &want); err != nil {
				t.Fatal(err)
			}
			got := unlimited()
			if err := decodeReview(string(body), &got); err != nil {
				t.Fatal(err)
			}
			if got.apiVersion != want.APIVersion || got.kind != want.Kind {
				t.Fatalf("type %s %s, want %s %s", got.apiVersion, got.kind, want.APIVersion, want.Kind)
			}
			if got.obj != string(want.Request.Object.Raw) || got.old != string(want.Request.OldObject.Raw) {
				t.Fatalf("raw objects differ")
			}
			unread(want.Request)
			if !reflect.DeepEqual(&got.req, want.Request) {
				t.Fatalf("request differs:\n got %+v\nwant %+v", got.req, *want.Request)
			}
		})
	}
}

// unread clears what the handler does not read of r, which decodeReview
// checks but does not keep (of userInfo.extra but the pod uid, the JSON syntax only).
func unread(r *admissionv1.AdmissionRequest) {
	r.UserInfo.UID, r.UserInfo.Extra = "", nil
	r.RequestKind, r.RequestResource, r.RequestSubResource = nil, nil, ""
	r.Object, r.OldObject, r.Options = runtime.RawExtension{}, runtime.RawExtension{}, runtime.RawExtension{}
}

// readReview is an AdmissionReview whose members the handler does not
// read are any JSON, as decodeReview takes them.
type readReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		admissionv1.AdmissionRequest
		RequestKind        json.RawMessage `json:"requestKind"`
		RequestResource    json.RawMessage `json:"requestResource"`
		RequestSubResource json.RawMessage `json:"requestSubResource"`
		Options            json.RawMessage `json:"options"`
		UserInfo           struct {
			authenticationv1.UserInfo
			UID json.RawMessage `json:"uid"`
		} `json:"userInfo"`
	} `json:"request"`
}

// FuzzDecodeReview: decoding never panics; a body the scanner accepts is
// one encoding/json accepts too, into the same request as far as the
// handler reads it (unless the body relies on encoding/json's
// case-insensitive key matching, which usher, like the Kubernetes API
// server, does not do).
func FuzzDecodeReview(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","userInfo":{"username":"x","groups":["g"],"extra":{}},"object":{"apiVersion":"v1","kind":"Pod"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := unlimited()
		if err := decodeReview(string(body), &got); err != nil {
			return
		}
		var want readReview
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("scanner accepted what encoding/json rejects: %v", err)
		}
		if hasCaseVariants(body) {
			return
		}
		if got.apiVersion != want.APIVersion || got.kind != want.Kind || got.hasRequest != (want.Request != nil) {
			t.Fatalf("review differs")
		}
		if want.Request == nil {
			return
		}
		req := want.Request.AdmissionRequest
		req.UserInfo = want.Request.UserInfo.UserInfo
		unread(&req)
		if !reflect.DeepEqual(got.req, req) {
			t.Fatalf("request differs:\n got %+v\nwant %+v", got.req, req)
		}
	})
}

var keyPattern = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:`)

// hasCaseVariants reports whether body has a key that encoding/json would
// match, case-insensitively, to a field it does not spell exactly.
func hasCaseVariants(body []byte) bool {
	fields := []string{"apiVersion", "kind", "request", "response", "uid", "group", "version", "resource", "subResource",
		"requestKind", "requestResource", "requestSubResource", "name", "namespace", "operation", "userInfo", "username",
		"groups", "extra", "object", "oldObject", "dryRun", "options"}
	for _, mm := range keyPattern.FindAllSubmatch(body, -1) {
		var key string
		if json.Unmarshal(append(append([]byte{'"'}, mm[1]...), '"'), &key) != nil {
			return true // cannot tell: skip the comparison
		}
		for _, f := range fields {
			if key != f && strings.EqualFold(key, f) {
				return true
			}
		}
	}
	return false
}

// FuzzParseObject: object parsing never panics, and the handler never
// answers without a response.
func FuzzParseObject(f *testing.F) {
	f.Add(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"metadata":{"annotations":{"yunikorn.apache.org/user.info":"{\"user\":\"a\"}"}}}}}`)
	f.Add(`{"apiVersion":"batch/v1","kind":"CronJob","spec":{"jobTemplate":{"metadata":{"labels":{"queue":"x"}},"spec":{"template":{}}}}}`)
	f.Add(`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"kueue.x-k8s.io/queue-name":"q"}}}`)
	c := settings.MustCompile(settings.Config{EnforceQueueACLs: true, EnforceDeleteACLs: true})
	f.Fuzz(func(t *testing.T, s string) {
		for i := range kinds {
			var o objectView
			_ = parseObject(s, &kinds[i], &compile(c).wantKeys, &o, "x")
		}
		_, _ = ParseUserInfo(s)
	})
}

// TestDuplicateMembersRefusedEverywhere: every object the webhook reads
// refuses a member it reads that appears twice, at every level (the
// review, the request and its parts, the object, its metadata, the
// templates), since encoding/json would keep the last one and usher
// cannot know which one the API server used.
func TestDuplicateMembersRefusedEverywhere(t *testing.T) {
	c := settings.MustCompile(settings.Config{})
	review := func(req string) string {
		return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + req + `}`
	}
	for _, body := range []string{
		`{"apiVersion":"admission.k8s.io/v1","apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null,"request":{"uid":"u"}}`,
		review(`{"uid":"u","operation":"CREATE","operation":"DELETE"}`),
		review(`{"uid":"u","kind":{"group":"","group":"apps","version":"v1","kind":"Pod"}}`),
		review(`{"uid":"u","resource":{"group":"","version":"v1","resource":"pods","resource":"x"}}`),
		review(`{"uid":"u","userInfo":{"username":"a","username":"b"}}`),
		review(`{"uid":"u","userInfo":{"groups":[],"groups":["g"]}}`),
		review(`{"uid":"u","dryRun":true,"dryRun":false}`),
		// The pod a token is bound to, which propagators copy from.
		review(`{"uid":"u","userInfo":{"extra":{"authentication.kubernetes.io/pod-uid":["a"],"authentication.kubernetes.io/pod-uid":["a","b"]}}}`),
		review(`{"uid":"u","userInfo":{"extra":{"authentication.kubernetes.io/pod-uid":["a"],"authentication.kubernetes.io\/pod-uid":["b"]}}}`),
		review(`{"uid":"u","object":null,"object":{}}`),
	} {
		rv := unlimited()
		err := decodeReview(body, &rv)
		if err == nil || !strings.Contains(err.Error(), "duplicate member") {
			t.Errorf("%s: err %v, want a duplicate member", body, err)
		}
	}
	for _, tc := range []struct{ kind, obj string }{
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{},"metadata":{}}`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{},"annotations":{}}}`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","name":"b"}}`},
		{"Pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"ownerReferences":[],"ownerReferences":null}}`},
		{"Deployment", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{},"template":{}}}`},
		{"Deployment", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"metadata":{},"metadata":{}}}}`},
		{"CronJob", `{"apiVersion":"batch/v1","kind":"CronJob","spec":{"jobTemplate":{},"jobTemplate":{}}}`},
		{"CronJob", `{"apiVersion":"batch/v1","kind":"CronJob","spec":{"jobTemplate":{"spec":{},"spec":{}}}}`},
	} {
		var o objectView
		err := parseObject(tc.obj, lookupKind(kindGroup(tc.kind), tc.kind), &compile(c).wantKeys, &o, "request.object")
		if err == nil || !strings.Contains(err.Error(), "duplicate member") {
			t.Errorf("%s: err %v, want a duplicate member", tc.obj, err)
		}
	}
	var o objectView
	err := parseObject(`{"apiVersion":"v1","kind":"Binding","kind":"Binding"}`, &bindingKind, &compile(c).wantKeys, &o, "request.object")
	if err == nil || !strings.Contains(err.Error(), "duplicate member") {
		t.Errorf("Binding: err %v, want a duplicate member", err)
	}
}

func kindGroup(kind string) string {
	switch kind {
	case "Deployment":
		return "apps"
	case "CronJob":
		return "batch"
	}
	return ""
}
