package admission

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

func post(t *testing.T, hh http.Handler, contentType string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	hh.ServeHTTP(rec, r)
	return rec
}

// TestHTTPMalformed: every malformed request gets a clear answer, and the
// next request is still served.
func TestHTTPMalformed(t *testing.T) {
	var audited []Record
	h := newTestHandler(nil, WithMaxBodyBytes(64<<10), WithAudit(func(r Record) { audited = append(audited, r) }))
	kc := kindCaseOf(t, "Pod")
	good := reviewBody(t, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil))
	withRequest := func(req string) []byte {
		return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + req + `}`)
	}
	cases := []struct {
		name, contentType string
		body              []byte
		code              int
		want              string
	}{
		{"not JSON", "application/json", []byte("hello"), 400, "not an AdmissionReview"},
		{"truncated", "application/json", good[:len(good)/2], 400, "not an AdmissionReview"},
		{"trailing data", "application/json", append(append([]byte{}, good...), "{}"...), 400, "unexpected data after the top-level value"},
		{"empty body", "application/json", nil, 400, "the body is empty"},
		{"white space", "application/json", []byte(" \n"), 400, "found the end of input, want an object"},
		{"unterminated object", "application/json", []byte(`{"kind":"AdmissionReview"`), 400, "unexpected end of input"},
		{"JSON null", "application/json", []byte("null"), 400, "body is null"},
		{"JSON array", "application/json", []byte("[]"), 400, "want an object"},
		{"v1beta1", "application/json", bytes.Replace(good, []byte(`admission.k8s.io/v1"`), []byte(`admission.k8s.io/v1beta1"`), 1), 400, `got apiVersion "admission.k8s.io/v1beta1"`},
		{"wrong kind", "application/json", bytes.Replace(good, []byte(`"kind":"AdmissionReview"`), []byte(`"kind":"Pod"`), 1), 400, `kind "Pod"`},
		{"no request", "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), 400, "has no request"},
		{"null request", "application/json", withRequest(`null`), 400, "has no request"},
		{"no uid", "application/json", withRequest(`{"kind":{"kind":"Pod","version":"v1"},"operation":"CREATE"}`), 400, "has no uid"},
		{"request not an object", "application/json", withRequest(`"x"`), 400, "request: found a string, want an object"},
		{"uid not a string", "application/json", withRequest(`{"uid":5}`), 400, "request.uid: found a number, want a string"},
		{"groups not strings", "application/json", withRequest(`{"uid":"u","userInfo":{"groups":[1]}}`), 400, "request.userInfo.groups: found a number"},
		{"duplicate uid", "application/json", withRequest(`{"uid":"a","uid":"b"}`), 400, `duplicate member "uid"`},
		{"deep nesting", "application/json", withRequest(`{"uid":"u","x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`), 400, "exceeded max depth"},
		{"too large", "application/json", withRequest(`{"uid":"u","x":"` + strings.Repeat("a", 70<<10) + `"}`), 413, "larger than the limit"},
		{"no content type", "", good, 415, "Content-Type"},
		{"text content type", "text/plain", good, 415, `"text/plain" is not supported`},
		{"yaml content type", "application/yaml", good, 415, "want application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			audited = nil
			rec := post(t, h.MutateHTTP(), tc.contentType, tc.body)
			if rec.Code != tc.code {
				t.Fatalf("HTTP %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			var e struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, tc.want) {
				t.Fatalf("body %s, want a JSON error containing %q", rec.Body, tc.want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if len(audited) != 1 || audited[0].Code != int32(tc.code) || audited[0].Allowed {
				t.Errorf("audit %+v", audited)
			}
			// The next request is served.
			if rec := post(t, h.MutateHTTP(), "application/json", good); rec.Code != 200 {
				t.Fatalf("next request: HTTP %d %s", rec.Code, rec.Body)
			}
		})
	}
	t.Run("content type with charset", func(t *testing.T) {
		if rec := post(t, h.MutateHTTP(), "Application/JSON; charset=utf-8", good); rec.Code != 200 {
			t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
		}
	})
	t.Run("GET", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ValidateHTTP().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/validate", nil))
		if rec.Code != 405 || rec.Header().Get("Allow") != "POST" {
			t.Fatalf("HTTP %d Allow %q", rec.Code, rec.Header().Get("Allow"))
		}
	})
	t.Run("Content-Length over the limit", func(t *testing.T) {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mutate", io.LimitReader(zeros{}, 1<<20))
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = 1 << 20
		h.MutateHTTP().ServeHTTP(rec, r)
		if rec.Code != 413 {
			t.Fatalf("HTTP %d", rec.Code)
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestTestdataReviews drives the handler with the AdmissionReview JSON in
// testdata/, as the API server sends it.
func TestTestdataReviews(t *testing.T) {
	cfg := mustCompile(t, settings.Config{EnforceQueueACLs: true, QueueSources: []settings.QueueSource{
		{Kind: "label", Key: "queue", Scheduler: "yunikorn"},
		{Kind: "label", Key: "kueue.x-k8s.io/queue-name", Scheduler: "kueue", Template: "root.{namespace}.{value}"},
	}})
	authz := &fakeAuthz{allowed: map[string][]string{
		"alice@EXAMPLE.COM": {"root.team-a.batch", "root.team-a.gpu", ""},
	}}
	h := newTestHandler(cfg, WithAuthorizer(authz))
	cases := []struct {
		file      string
		hook      hookKind
		allowed   bool
		code      int32
		userInfo  string // expected user.info after the patch ("" = no patch)
		contains  string
		wantQueue []string
	}{
		{"pod-create.json", hookMutate, true, 0, aliceInfo3, "", []string{"root.team-a.batch"}},
		// Kueue's label on the Deployment; its pods carry no YuniKorn marker,
		// so YuniKorn would run them in the default queue: both are asked.
		{"deployment-create-kueue.json", hookMutate, true, 0, aliceInfo3, "", []string{"root.team-a.gpu", ""}},
		{"cronjob-create-forbidden-queue.json", hookMutate, false, 403, "", `may not submit to queue "root.team-b.batch"`, []string{"root.team-b.batch"}},
		{"deployment-update-forged.json", hookValidate, false, 403, "", `may not change annotation yunikorn.apache.org/user.info on the pod template of Deployment "team-a/web"`, nil},
		{"deployment-update-scale.json", hookValidate, true, 0, "", "", nil},
		{"pod-create-bad-object.json", hookMutate, false, 400, "", `metadata.labels["app"]: found a number, want a string`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			authz.calls = nil
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var in admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &in); err != nil {
				t.Fatal(err)
			}
			hh := h.MutateHTTP()
			if tc.hook == hookValidate {
				hh = h.ValidateHTTP()
			}
			rec := post(t, hh, "application/json", body)
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != 200 {
				t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
			}
			resp := out.Response
			if resp.UID != in.Request.UID {
				t.Fatalf("UID %q, want %q", resp.UID, in.Request.UID)
			}
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v: %+v", resp.Allowed, resp.Result)
			}
			if !tc.allowed && (resp.Result.Code != tc.code || !strings.Contains(resp.Result.Message, tc.contains)) {
				t.Fatalf("status %+v, want %d containing %q", resp.Result, tc.code, tc.contains)
			}
			if tc.userInfo != "" {
				doc, err := applyPatch(in.Request.Object.Raw, resp.Patch)
				if err != nil {
					t.Fatal(err)
				}
				kc := kindCaseOf(t, in.Request.Kind.Kind)
				ann, err := kc.podAnnotations(doc)
				if err != nil || ann[UserInfoAnnotation] != tc.userInfo {
					t.Fatalf("user.info %q (%v), want %q", ann[UserInfoAnnotation], err, tc.userInfo)
				}
			} else if resp.Patch != nil {
				t.Fatalf("unexpected patch %s", resp.Patch)
			}
			if got := authz.queues(); strings.Join(got, ",") != strings.Join(tc.wantQueue, ",") {
				t.Fatalf("authorizer asked for %q, want %q", got, tc.wantQueue)
			}
		})
	}
}

const aliceInfo3 = `{"user":"alice@EXAMPLE.COM","groups":["dev.team","spark-users","system:authenticated"]}`

// TestConcurrentReviewsAndStore runs reviews while the configuration is
// swapped (run with -race).
func TestConcurrentReviewsAndStore(t *testing.T) {
	open := mustCompile(t, settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^bob$"}}})
	closed := mustCompile(t, settings.Config{})
	h := newTestHandler(closed)
	kc := kindCaseOf(t, "Pod")
	forged := reviewBody(t, request(t, kc, admissionv1.Create, "team-a", bob, kc.build(nil, m(UserInfoAnnotation, forgedCarol), nil), nil))
	stamp := reviewBody(t, request(t, kc, admissionv1.Create, "team-a", alice, kc.build(nil, nil, nil), nil))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				body, isStamp := stamp, true
				if (g+i)%2 == 0 {
					body, isStamp = forged, false
				}
				rec := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				h.MutateHTTP().ServeHTTP(rec, r)
				var out admissionv1.AdmissionReview
				if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
					t.Errorf("bad response %s", rec.Body)
					return
				}
				if isStamp && (!out.Response.Allowed || len(out.Response.Patch) == 0) {
					t.Errorf("stamp review: %+v", out.Response)
					return
				}
			}
		}()
	}
	for i := range 200 {
		cfg := closed
		if i%2 == 0 {
			cfg = open
		}
		if err := h.Store(cfg, nil); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// TestFieldOrder: a review whose request lists the object before its kind
// (not the API server's order) is decided the same way.
func TestFieldOrder(t *testing.T) {
	h := newTestHandler(nil)
	body := []byte(`{"request":{"object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","annotations":{"` + UserInfoAnnotation + `":"{\"user\":\"carol\"}"}}},` +
		`"userInfo":{"username":"bob","groups":["system:authenticated"]},"operation":"CREATE","namespace":"team-a",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"uid":"u-1"},"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}`)
	rec := post(t, h.MutateHTTP(), "application/json", body)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
	}
	wantDenied(t, out.Response, 403, `user "bob" may not set annotation`)
	if out.Response.UID != "u-1" {
		t.Fatalf("UID %q", out.Response.UID)
	}
}

type overloaded struct{}

func (overloaded) Error() string   { return "no memory for the body; retry later" }
func (overloaded) HTTPStatus() int { return http.StatusTooManyRequests }

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// A body reader that fails with an HTTP status (a server shedding load)
// is answered with that status; other read errors are a 400.
func TestHTTPReadErrorWithStatus(t *testing.T) {
	var audited []Record
	h := newTestHandler(nil, WithAudit(func(r Record) { audited = append(audited, r) }))
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{overloaded{}, 429, "retry later"},
		{io.ErrUnexpectedEOF, 400, "cannot read the body: unexpected EOF"},
	} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mutate", failingReader{tc.err})
		r.Header.Set("Content-Type", "application/json")
		h.MutateHTTP().ServeHTTP(rec, r)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%v: %d %s, want %d %q", tc.err, rec.Code, rec.Body, tc.code, tc.want)
		}
	}
	if len(audited) != 2 || audited[0].Code != 429 {
		t.Errorf("audited %+v", audited)
	}
}

// A declared length sizes the read buffer once: one allocation of about
// the body's size (and the limiting reader's), not a doubling series; a
// body longer than declared is still capped.
func TestReadBodyDeclaredLength(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3<<20)
	var got []byte
	rd := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(5, func() {
		var err error
		rd.Reset(body)
		got, err = readBody(rd, nil, int64(len(body)), 7<<20)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 || !bytes.Equal(got, body) || cap(got) > len(body)+8192 {
		t.Errorf("%v allocations, %d bytes read into a buffer of %d", allocs, len(got), cap(got))
	}
	if _, err := readBody(bytes.NewReader(body), nil, 10, 1<<20); err != errTooLarge {
		t.Errorf("a body longer than declared and than the cap: %v", err)
	}
}
