package admission

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// everyOutcome lists a decision of every shape a review can end in: each
// rule, each trust for each trusted verb, each rule with an authorizer's
// reason, each status code of a denial, with and without a patch and a
// warning.
func everyOutcome() []decision {
	var out []decision
	patch := []byte(`[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]`)
	shapes := func(dc decision) {
		for _, p := range [][]byte{nil, patch} {
			for _, w := range []string{"", legacyLabelWarning} {
				dc.patch, dc.warning = p, w
				out = append(out, dc)
			}
		}
	}
	for r := RuleDenied + 1; r < numRules; r++ {
		shapes(allow(r))
		shapes(allowBecause(r, `an authorizer's reason <with> "quotes" & é`+"\u2028"))
	}
	for v := range numVerbs {
		for t := range numTrusts {
			shapes(allowTrusted(v, t))
		}
	}
	for _, code := range []int32{httpStatusBadRequest, httpStatusForbidden, httpStatusNotAllowed, httpStatusTooLarge,
		httpStatusUnsupported, httpStatusInternal, 429, 503} {
		shapes(deny("", code, `usher: user "bob" may not <set> & "annotation" é`+"\u2028\n\x00\xff"))
		for _, cause := range Causes() {
			dc := deny(cause, code, `usher: user "bob" may not <set> & "annotation" é`+"\u2028\n\x00\xff")
			shapes(dc)
			dc.group, dc.kind, dc.name, dc.queue, dc.field = "batch", "Job", "spark-\"1\"", "root.ops<é>", "spec.template.metadata.labels[queue]"
			shapes(dc)
			dc.name, dc.group = "spark-*", ""
			shapes(dc)
		}
	}
	// Warned denials: allowed, with the denial's audit annotations.
	for _, cause := range []Cause{CauseQueueSubmitDenied, CauseKillDenied} {
		dc := allow(RuleStamped)
		dc.warnOf(&decision{cause: cause, message: "denied", queue: "root.a", field: "metadata.labels[queue]"})
		shapes(dc)
	}
	return out
}

// TestAppendReviewMatchesToResponse: the HTTP edge's response encoder and
// the Go API's toResponse agree on every outcome: appendReview's output
// decodes into exactly the AdmissionReview that carries toResponse's
// response.
func TestAppendReviewMatchesToResponse(t *testing.T) {
	for i, dc := range everyOutcome() {
		checkSameResponse(t, fmt.Sprintf("outcome %d (rule %v, code %d)", i, dc.rule, dc.code), `uid-"1"`, &dc)
	}
}

func checkSameResponse(t *testing.T, name, uid string, dc *decision) {
	t.Helper()
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(appendReview(nil, types.UID(uid), dc), &got); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: dc.toResponse(uid),
	}
	// Round-trip the expected value too, as the API server reads it.
	b, _ := json.Marshal(&want)
	want = admissionv1.AdmissionReview{}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\nwant %+v", name, got.Response, want.Response)
	}
	if !dc.allowed && utf8.ValidString(dc.reason()) && got.Response.Result.Message != dc.reason() || dc.allowed && got.Response.Result != nil {
		t.Fatalf("%s: result %+v for reason %q", name, got.Response.Result, dc.reason())
	}
}

// FuzzAppendReview: for any UID, message and warning, appendReview and
// toResponse agree.
func FuzzAppendReview(f *testing.F) {
	f.Add("uid", "message", "", false, int32(403))
	f.Add("u\xff\u2028", "<&>\x00", "warn\n", true, int32(200))
	f.Fuzz(func(t *testing.T, uid, msg, warning string, allowed bool, code int32) {
		dc := decision{allowed: allowed, code: code, message: msg, warning: warning, cause: Cause(warning), queue: uid, name: msg, field: warning}
		if allowed {
			dc.rule = RuleKillRule
		}
		checkSameResponse(t, "fuzz", uid, &dc)
	})
}

func TestPatchEncoding(t *testing.T) {
	if got := escapePointer("a/b~c"); got != "a~1b~0c" {
		t.Fatalf("escapePointer = %q", got)
	}
	ops := []patchOp{
		{Op: "add", Path: "/metadata/annotations/" + escapePointer(UserInfoAnnotation), Value: json.RawMessage(`"x"`)},
		{Op: "replace", Path: "/a", Value: json.RawMessage(`{"b":[1]}`)},
	}
	want, _ := json.Marshal(ops)
	if got := appendPatch(nil, ops...); string(got) != string(want) {
		t.Fatalf("appendPatch = %s, want %s", got, want)
	}
	if k := lookupKind("batch", "CronJob"); k.annotationPath != "/spec/jobTemplate/spec/template/metadata/annotations/yunikorn.apache.org~1user.info" {
		t.Fatalf("CronJob annotation path %q", k.annotationPath)
	}
	// The annotation path form applies to an existing annotations map.
	doc := []byte(`{"metadata":{"annotations":{"x":"y"}}}`)
	var m metaView
	m.present, m.annotations = true, true
	out, err := applyPatch(doc, appendStampPatch(nil, lookupKind("", "Pod"), &m, []byte(aliceInfo), nil))
	if err != nil || string(out) != `{"metadata":{"annotations":{"x":"y","yunikorn.apache.org/user.info":"`+jsonEscape(aliceInfo)+`"}}}` {
		t.Fatalf("patched %s (%v)", out, err)
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestUserInfoRoundTrip(t *testing.T) {
	u := UserInfo{User: "system:serviceaccount:spark:driver", Groups: []string{"system:serviceaccounts:spark", "dev.team"}}
	back, err := ParseUserInfo(u.String())
	if err != nil || !reflect.DeepEqual(back, u) {
		t.Fatalf("%+v %v", back, err)
	}
	b, _ := json.Marshal(u)
	var std UserInfo
	if err := json.Unmarshal(b, &std); err != nil || !reflect.DeepEqual(std, u) {
		t.Fatalf("encoding/json round trip %+v %v", std, err)
	}
	if got, err := ParseUserInfo(` {"groups":null,"user":"a"} `); err != nil || got.User != "a" || got.Groups != nil {
		t.Fatalf("%+v %v", got, err)
	}
	if got, err := ParseUserInfo(`{"groups":null,"user":"a","extra":{"x":[1]}}`); err == nil {
		t.Fatalf("a member other than user and groups accepted: %+v", got)
	}
}
