package admission

import (
	"encoding/json"
	"reflect"
	"testing"
)

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
	out, err := applyPatch(doc, stampPatch(lookupKind("", "Pod"), &m, []byte(aliceInfo), nil))
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
