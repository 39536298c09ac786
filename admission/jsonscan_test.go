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
)

// valid reports whether the scanner accepts s as one JSON value.
func scanValid(s string) bool {
	d := scanner{s: s}
	d.skip()
	d.end()
	return d.err == nil
}

var jsonSamples = []string{
	`null`, `true`, `false`, `0`, `-0`, `1.5e10`, `-1.25E-3`, `1e+2`, `"x"`, `""`, `[]`, `{}`, `[1,2,[3,{"a":[]}]]`,
	` {"a" : 1 , "b":[ true ,false, null ]} `, "\t\n\r[1]\n",
	`"\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00x"`, "\"\xff\xfe\"", "\"é\"",
	"\"\u2028\"", `"\u0000"`,
	// invalid
	``, ` `, `nul`, `nulll`, `tru`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `0x1`, `NaN`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`,
	`{"a":1 "b":2}`, `[1 2]`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01b\"", "\"\t\"", `{"a":1}}`, `[`, `]`, `{`, `}`,
	`"\`, `{"a":`, `{"a":1`, `[1,`, `1 2`, `{} {}`, `'x'`, `[true false]`,
}

func TestScannerValidityMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		if got, want := scanValid(s), json.Valid([]byte(s)); got != want {
			t.Errorf("%q: scanner valid=%v, encoding/json valid=%v", s, got, want)
		}
	}
}

func TestScannerStringsMatchEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		var want string
		if json.Unmarshal([]byte(s), &want) != nil {
			continue
		}
		d := scanner{s: s}
		got := d.stringField("x")
		d.end()
		if d.err != nil || got != want {
			t.Errorf("%q: scanner %q (%v), encoding/json %q", s, got, d.err, want)
		}
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s/`, "<a&b>", "\x00\x1f\x7f", "é€😀", "\xff", "a\xc3", "\u2028\u2029", "tab\tnl\ncr\r"} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			// encoding/json and usher may escape differently; both must
			// decode to the same string.
			var back string
			if err := json.Unmarshal(got, &back); err != nil || back != strings.ToValidUTF8(s, "\uFFFD") {
				t.Errorf("%q: appendJSONString %s decodes to %q (%v); encoding/json gives %s", s, got, back, err, want)
			}
		}
		if got := appendJSONString(nil, []byte(s)); string(got) != string(appendJSONString(nil, s)) {
			t.Errorf("%q: []byte and string forms differ", s)
		}
	}
}

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
// into exactly the admissionv1.AdmissionReview encoding/json produces.
func TestDecodeReviewMatchesEncodingJSON(t *testing.T) {
	for name, body := range reviewFixtures(t) {
		t.Run(name, func(t *testing.T) {
			var want admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &want); err != nil {
				t.Fatal(err)
			}
			var got decodedReview
			if err := decodeReview(string(body), body, &got, nil); err != nil {
				t.Fatal(err)
			}
			if got.apiVersion != want.APIVersion || got.kind != want.Kind {
				t.Fatalf("type %s %s, want %s %s", got.apiVersion, got.kind, want.APIVersion, want.Kind)
			}
			if !reflect.DeepEqual(&got.req, want.Request) {
				t.Fatalf("request differs:\n got %+v\nwant %+v", got.req, *want.Request)
			}
			if got.obj != string(want.Request.Object.Raw) || got.old != string(want.Request.OldObject.Raw) {
				t.Fatalf("raw objects differ")
			}
		})
	}
}

// TestDecodeReviewParsesObjectsAhead: with a configuration, the objects are
// parsed during the review pass, exactly as parsing them afterwards would.
func TestDecodeReviewParsesObjectsAhead(t *testing.T) {
	c := compiled(t, Config{EnforceQueueACLs: true})
	for name, body := range reviewFixtures(t) {
		t.Run(name, func(t *testing.T) {
			var rv decodedReview
			if err := decodeReview(string(body), body, &rv, c); err != nil {
				t.Fatal(err)
			}
			k := lookupKind(rv.req.Kind.Group, rv.req.Kind.Kind)
			for _, o := range []struct {
				raw  string
				view *objectView
				done bool
			}{{rv.obj, &rv.views.obj, rv.views.objDone}, {rv.old, &rv.views.old, rv.views.oldDone}} {
				var want objectView
				err := errNoKind
				if k != nil {
					err = parseObject(o.raw, k, c.labelKeys, c.annotationKeys, &want, "x")
				}
				if o.raw == "" || k == nil || (err != nil && !strings.Contains(err.Error(), "request.kind says")) {
					if o.done {
						t.Fatalf("object parsed ahead although it does not parse (%v)", err)
					}
					continue
				}
				if !o.done {
					t.Fatalf("object not parsed ahead")
				}
				if !reflect.DeepEqual(*o.view, want) {
					t.Fatalf("views differ:\n got %+v\nwant %+v", *o.view, want)
				}
			}
		})
	}
}

var errNoKind = os.ErrNotExist

func FuzzScannerValidity(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := scanValid(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("%q: scanner valid=%v, encoding/json valid=%v", s, got, want)
		}
		var want string
		if json.Unmarshal([]byte(s), &want) == nil {
			d := scanner{s: s}
			got := d.stringField("x")
			d.end()
			if d.err != nil || got != want {
				t.Fatalf("%q: scanner %q (%v), encoding/json %q", s, got, d.err, want)
			}
		}
	})
}

// FuzzDecodeReview: decoding never panics; a body the scanner accepts is
// one encoding/json accepts too, into the same request (unless the body
// relies on encoding/json's case-insensitive key matching, which usher,
// like the Kubernetes API server, does not do).
func FuzzDecodeReview(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","userInfo":{"username":"x","groups":["g"],"extra":{}},"object":{"apiVersion":"v1","kind":"Pod"}}}`))
	c := MustCompile(Config{EnforceQueueACLs: true, EnforceDeleteACLs: true})
	f.Fuzz(func(t *testing.T, body []byte) {
		var got decodedReview
		if err := decodeReview(string(body), body, &got, c); err != nil {
			return
		}
		var want admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("scanner accepted what encoding/json rejects: %v", err)
		}
		if hasCaseVariants(body) {
			return
		}
		if got.apiVersion != want.APIVersion || got.kind != want.Kind || got.hasRequest != (want.Request != nil) {
			t.Fatalf("review differs")
		}
		if want.Request != nil && !reflect.DeepEqual(&got.req, want.Request) {
			t.Fatalf("request differs:\n got %+v\nwant %+v", got.req, *want.Request)
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
	c := MustCompile(Config{EnforceQueueACLs: true, EnforceDeleteACLs: true})
	f.Fuzz(func(t *testing.T, s string) {
		for i := range kinds {
			var o objectView
			_ = parseObject(s, &kinds[i], c.labelKeys, c.annotationKeys, &o, "x")
		}
		_, _ = ParseUserInfo(s)
	})
}
